"""WriteTxnMarkers: v1-2.

Behavior: a transaction coordinator on another broker (minibroker.coordinator.txn.txn_marker_sender,
or Kafka's TransactionMarkerChannelManager) asks this broker, the leader of some of the
transaction's partitions, to write its COMMIT or ABORT marker there (KafkaApis.handleWriteTxnMarkersRequest):
- CLUSTER_ACTION on the cluster, else the whole request is CLUSTER_AUTHORIZATION_FAILED;
- per partition: UNKNOWN_TOPIC_OR_PARTITION for one this broker does not hold,
  NOT_LEADER_OR_FOLLOWER for one it follows (the coordinator sends it again to the leader the
  metadata names), else the control batch is appended as leader with the producer id, epoch
  and coordinator epoch (the producer state refuses an older epoch: INVALID_PRODUCER_EPOCH /
  TRANSACTION_COORDINATOR_FENCED), and answered once replicated (acks=-1, as Kafka appends
  markers); a marker in `__consumer_offsets` also completes the group coordinator's pending
  transactional offsets of that producer.

Version notes: v0 was removed in Kafka 4.0 (KIP-896); v1 flexible; v2 (KIP-1228) carries the
transaction version, which only says how the coordinator bumped the epoch.
"""

from __future__ import annotations

from minibroker.coordinator.runtime.partition_writer import wait_replicated
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import write_txn_markers
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.v2 import ControlType, build_control_batch
from minibroker_storage.append_origin import AppendOrigin

OFFSETS_TOPIC = "__consumer_offsets"
# how long a marker waits for its replication (Kafka: the request's timeout, config.requestTimeoutMs)
MARKER_TIMEOUT_MS = 30_000


@handles(write_txn_markers.API, "1-2")
async def handle_write_txn_markers(ctx: RequestContext, req: write_txn_markers.WriteTxnMarkersRequest
                                   ) -> write_txn_markers.WriteTxnMarkersResponse:
    R = write_txn_markers.RESPONSE
    authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)
    rm = ctx.services.replica_manager
    results = []
    for m in req.markers:
        kind = ControlType.COMMIT if m.transaction_result else ControlType.ABORT
        codes: dict[tuple[str, int], int] = {}
        offsets_partitions: set[int] = set()
        for t in m.topics:
            for p in t.partition_indexes:
                part = rm.get_partition(t.name, p)
                if part is None:
                    codes[(t.name, p)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                if not part.is_leader:
                    codes[(t.name, p)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    continue
                batch = build_control_batch(kind, producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                                            coordinator_epoch=m.coordinator_epoch, timestamp=ctx.services.clock())
                try:
                    rm.append_to_partition(t.name, p, batch, origin=AppendOrigin.COORDINATOR)
                except KafkaError as e:
                    codes[(t.name, p)] = e.code
                    continue
                except OSError:
                    codes[(t.name, p)] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                codes[(t.name, p)] = ErrorCode.NONE
                if t.name == OFFSETS_TOPIC:
                    offsets_partitions.add(p)
        if offsets_partitions and ctx.services.group_coordinator is not None:
            ctx.services.group_coordinator.complete_transaction(m.producer_id, offsets_partitions,
                                                                bool(m.transaction_result))
        for tp, code in codes.items():
            if code == ErrorCode.NONE:
                codes[tp] = await wait_replicated(rm, tp[0], tp[1], MARKER_TIMEOUT_MS)
        by_topic: dict[str, list[write_txn_markers.WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult]] = {}
        for (name, p), code in codes.items():
            by_topic.setdefault(name, []).append(R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code))
        results.append(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            R.WritableTxnMarkerTopicResult(name=name, partitions=ps) for name, ps in by_topic.items()]))
    return R(markers=results)
