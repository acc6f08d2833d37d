"""Produce: v0-13.

Behavior:
- Each partition's records are checked once, by the log's validator (minibroker_storage.log_validator, Kafka's
  LogValidator): from v3 exactly one RecordBatch v2 and zstd only from v7 (Kafka's
  ProduceRequest.validateRecords: INVALID_RECORD / UNSUPPORTED_COMPRESSION_TYPE); every field of
  every record of a client batch, as Kafka reads them with DefaultRecord.readFrom
  (minibroker_protocol.records.validate; INVALID_RECORD, an undecompressable batch UNKNOWN_SERVER_ERROR as
  Kafka answers; on a compacted topic each keyless record's index in record_errors from v8); each
  batch header (length, magic, CRC-32C, record count, size against max.message.bytes, base offset
  0, no control batch, timestamps). No record is decoded into objects; offsets are assigned by
  rewriting the base offset in the request's own bytes. The coordinators' own writes do not come
  through here.
- A batch is decoded and rebuilt only when the topic's compression.type names a codec other than
  the batch's (seed 002: the broker recompresses only then, and loses zero-copy for it), or its
  format must change (minibroker_protocol.records.convert).
- A transactional batch's partition is verified (KIP-890) once the records are in the topic's
  format, before their headers are checked, as this handler always answered.
- acks: 0 gets no response at all (and an error closes the connection, as Kafka does, so the client
  notices); 1 is answered after the append; -1 once the high watermark passed the records or at
  the request's timeout_ms (REQUEST_TIMED_OUT), as the ReplicaManager's DelayedProduce decides
  (an ISR below min.insync.replicas: NOT_ENOUGH_REPLICAS before the append,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND after). With the leader alone in the ISR, acks=-1 is acks=1.
- A partition this broker does not lead: NOT_LEADER_OR_FOLLOWER with CurrentLeader and the
  leader's NodeEndpoint (v10+, KIP-951).
- With flush.messages=1 (the fsync-per-append setting) the fsync happens, off the event loop,
  before the response is sent.
- Appends wake long-polling fetches on the partition.
- Old formats (issue 7): a MessageSet v0/v1 is validated (CRC-32, sizes, wrapper/inner offsets)
  and up-converted to RecordBatch v2, unless the topic's message.format.version keeps magic 0/1
  on disk; then newer producers' batches are down-converted instead (minibroker_protocol.records.convert).

Version notes: v0 MessageSet (magic 0; the seeds' Produce); v1 throttle time in the response; v2
magic 1 (timestamps) and the log append time in the response; v3 adds the transactional id and
requires RecordBatch v2; v5 log start offset in the response; v7 zstd; v8 per-batch record errors
and an error message; v9 flexible; v10 leader hints; v11 TRANSACTION_ABORTABLE; v12 lets a transaction's
produce add its partitions implicitly (KIP-890 part 2), which it does here since the broker finalizes
transaction.version 2 (minibroker/features.py; the Java producer 4.x then stops sending
AddPartitionsToTxn); v13 names topics by
topic id (KIP-516), an unknown id being UNKNOWN_TOPIC_ID, and the response echoes the id. Kafka 4.0 removed
v0-2 (KIP-896) but still advertises them because librdkafka misbehaves otherwise (KAFKA-18659);
Kafka never checked which magic a v0-2 request carries, and neither do we.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibroker import record_walks
from minibroker.add_partitions_to_txn_manager import AddPartitionsToTxnManager, verify_remotely
from minibroker.coordinator.txn.transaction_coordinator import check_transactional_produce
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.partition import Partition
from minibroker.services import BrokerServices
from minibroker_protocol.apis import produce
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import BatchView
from minibroker_protocol.records.validate import RecordValidationError
from minibroker_protocol.schema import MemoryRecords

R = produce.RESPONSE
_PartitionResponse = R.PartitionProduceResponse  # looked up once: built per partition
_TopicResponse = R.TopicProduceResponse


@handles(produce.API, "0-13")
async def handle_produce(ctx: RequestContext, req: produce.ProduceRequest) -> produce.ProduceResponse | None:
    services = ctx.services
    acks = req.acks
    transactional_id = req.transactional_id if ctx.version >= 3 else None
    # the wire checks and ACLs here; lookup, validation, transaction verification, append, flush
    # and the acks=all wait in the ReplicaManager (Kafka: KafkaApis.handleProduceRequest ->
    # ReplicaManager.handleProduceAppend)
    responses = []
    entries: list[tuple[tuple[str, int], MemoryRecords | None]] = []
    waiting: list[produce.ProduceResponse.PartitionProduceResponse] = []  # the partition responses whose entry went to the ReplicaManager
    failed = False
    for td in req.topic_data:
        parts = []
        if ctx.version >= 13:  # KIP-516: the topic comes by id; its name is only ours to know
            name = services.metadata_cache.topic_name(td.topic_id)
        else:
            name = td.name
        for pd in td.partition_data:
            pr = _PartitionResponse(index=pd.index, error_code=0, base_offset=-1)
            parts.append(pr)
            try:
                if acks not in (-1, 0, 1):
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
                authz.require_produce(ctx, transactional_id, name or "")
                if name is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
            except KafkaError as e:
                failed = True
                pr.error_code = e.code
                pr.error_message = e.message
                continue
            entries.append(((name, pd.index), pd.records))
            waiting.append(pr)
        responses.append(_TopicResponse(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    leaders: set[int] = set()
    if entries:
        remote = None  # KIP-890 on a cluster: the transaction coordinator on another broker asked first
        if transactional_id and ctx.version >= 3 and services.replica_manager.brokers:
            remote = await verify_remotely(_verification_manager(services), transactional_id, entries, ctx.version)
        verifier = _TransactionVerifier(ctx, transactional_id, remote) if ctx.version >= 3 else None
        # millions of compressed records are walked on a worker thread first (issue 30)
        large = record_walks.large_batches(entries)
        walked = await record_walks.prewalk_produce(services.replica_manager, large) if large else None
        try:
            results = await services.replica_manager.append_records(
                entries, required_acks=acks, request_version=ctx.version, verifier=verifier,
                timeout_ms=req.timeout_ms)
        finally:
            if walked:
                record_walks.forget(walked)
        for pr, result in zip(waiting, results, strict=True):
            if result.current_leader is not None and ctx.version >= 10:  # KIP-951
                pr.current_leader = R.LeaderIdAndEpoch(leader_id=result.current_leader[0],
                                                       leader_epoch=result.current_leader[1])
                leaders.add(result.current_leader[0])
            if result.info is not None:
                pr.base_offset = result.info.first_offset
                pr.log_append_time_ms = result.info.log_append_time
                pr.log_start_offset = result.info.log_start_offset
                continue
            err = result.error
            assert err is not None
            failed = True
            pr.error_code = err.code
            pr.error_message = err.message
            if isinstance(err, RecordValidationError):
                pr.log_start_offset = result.log_start_offset  # as Kafka reports it
                if ctx.version >= 8:  # Kafka: RecordErrors, from v8
                    pr.record_errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                        for i, m in err.record_errors]
    if acks == 0:
        if failed and ctx.connection is not None:
            ctx.connection.close("error on an acks=0 produce")
        return None
    resp = R(responses=responses)
    if leaders:  # the endpoints of the leaders named in CurrentLeader (KIP-951, v10+)
        brokers = services.replica_manager.brokers
        resp.node_endpoints = [R.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                               for n in sorted(leaders) if (b := brokers.get(n)) is not None]
    return resp


class _TransactionVerifier:
    """KIP-890's check of a transactional Produce partition, for the ReplicaManager; called only
    for transactional batches, so a plain produce never builds the transaction coordinator."""

    __slots__ = ("ctx", "remote", "transactional_id")

    def __init__(self, ctx: RequestContext, transactional_id: str | None,
                 remote: dict[tuple[str, int], int] | None = None) -> None:
        self.ctx = ctx
        self.transactional_id = transactional_id
        self.remote = remote  # the answers of a coordinator on another broker

    def __call__(self, batches: Sequence[BatchView], topic: str, partition: int, lg: Partition) -> None:
        check_transactional_produce(self.ctx.services.txn_coordinator, self.transactional_id, list(batches),
                                    topic, partition, lg, self.ctx.version, self.remote)


def _verification_manager(services: BrokerServices) -> AddPartitionsToTxnManager:
    """The broker's AddPartitionsToTxnManager, built with its first transactional produce on a cluster."""
    coordinators = services.coordinators
    if coordinators.add_partitions_manager is None:
        coordinators.add_partitions_manager = AddPartitionsToTxnManager(
            services.node_id, services.metadata_cache, services.replica_manager)
    return coordinators.add_partitions_manager
