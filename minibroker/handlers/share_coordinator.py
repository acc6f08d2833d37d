"""InitializeShareGroupState v0, ReadShareGroupState v0, WriteShareGroupState v0-1,
DeleteShareGroupState v0, ReadShareGroupStateSummary v0-1: the share coordinator (KIP-932).

Behavior: a share-partition leader (Kafka's SharePartition through its Persister) keeps the
delivery state of its in-flight records with the share coordinator, the broker leading the
`__share_group_state` partition of the key "group:topicId:partition" (FindCoordinator key type
SHARE). These handlers are that coordinator (Kafka's ShareCoordinatorService over
ShareCoordinatorShard), on top of the state minibroker's own share groups persist there
(minibroker.coordinator.share.share_coordinator_shard):
- CLUSTER_ACTION on the cluster, else every partition is CLUSTER_AUTHORIZATION_FAILED;
- per partition NOT_COORDINATOR when this broker does not lead the key's state partition,
  COORDINATOR_LOAD_IN_PROGRESS while it loads it (the persister finds the coordinator again);
- Initialize: a new state (start offset, state epoch, no batches); FENCED_STATE_EPOCH for a state
  epoch below the one held;
- Read / ReadSummary: the held state; UNKNOWN_TOPIC_OR_PARTITION when there is none;
- Write: the batches merged over the held state (Kafka's PersisterStateBatchCombiner), written as
  an update (a snapshot every share.coordinator.snapshot.update.records.per.snapshot) and answered
  once replicated; FENCED_STATE_EPOCH for an older state epoch, FENCED_LEADER_EPOCH for an older
  leader epoch than the last write or read carried;
- Delete: tombstones for the state.

Served by every broker, KRaft ones included and whatever group.share.enable says, as Kafka's
broker listener advertises them. The leader epoch used for fencing is held in memory (Kafka writes
it in the ShareSnapshot/ShareUpdate records; ours carry 0), so a coordinator that takes over starts
without it and fences from the next read or write on.

Version notes: WriteShareGroupState v1 and ReadShareGroupStateSummary v1 (Kafka 4.2) carry the
delivery-complete count, which we neither keep nor report (-1, "unknown", as Kafka's default).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker.coordinator.share.share_coordinator_shard import (
    PersistedState,
    ShareKey,
    coordinator_key,
    merge_batches,
)
from minibroker.coordinator.share.share_partition import StateBatch
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import (
    delete_share_group_state,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator

# how long a write waits for its replication (Kafka: share.coordinator.write.timeout.ms)
WRITE_TIMEOUT_MS = 5_000


def _coord(ctx: RequestContext) -> ShareGroupCoordinator:
    return ctx.services.share_groups


def _authorized(ctx: RequestContext) -> bool:
    try:
        authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)
    except KafkaError:
        return False
    return True


def _ownership(coord: ShareGroupCoordinator, key: ShareKey) -> int:
    return coord.store.coordinator_error(coordinator_key(key))


def _each(ctx: RequestContext, group: str, topics: list[tuple[uuid.UUID, list[int]]],
          act: Callable[[ShareKey, int], int]) -> dict[tuple[uuid.UUID, int], int]:
    """(topic id, partition) -> error code, `act` run on the partitions this broker coordinates."""
    allowed = _authorized(ctx)
    coord = _coord(ctx) if allowed else None
    out: dict[tuple[uuid.UUID, int], int] = {}
    for tid, parts in topics:
        for i, p in enumerate(parts):
            if coord is None:
                out[(tid, p)] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                continue
            key = (group, tid, p)
            code = _ownership(coord, key)
            out[(tid, p)] = code if code != ErrorCode.NONE else act(key, i)
    return out


@handles(initialize_share_group_state.API, "0")
async def handle_initialize_share_group_state(
        ctx: RequestContext, req: initialize_share_group_state.InitializeShareGroupStateRequest
) -> initialize_share_group_state.InitializeShareGroupStateResponse:
    R = initialize_share_group_state.RESPONSE
    results = []
    for t in req.topics:
        data = list(t.partitions)

        def init(key: ShareKey, i: int, data: list[initialize_share_group_state.InitializeShareGroupStateRequest.PartitionData] = data) -> int:
            shard = _coord(ctx).shard
            held = shard.states.get(key)
            if held is not None and data[i].state_epoch < held.state_epoch:
                return ErrorCode.FENCED_STATE_EPOCH
            shard.write(key, data[i].start_offset, data[i].state_epoch, [])
            return ErrorCode.NONE

        codes = _each(ctx, req.group_id, [(t.topic_id, [p.partition for p in data])], init)
        results.append(R.InitializeStateResult(topic_id=t.topic_id, partitions=[
            R.PartitionResult(partition=p, error_code=c) for (_tid, p), c in codes.items()]))
    return R(results=results)


@handles(read_share_group_state.API, "0")
async def handle_read_share_group_state(
        ctx: RequestContext, req: read_share_group_state.ReadShareGroupStateRequest
) -> read_share_group_state.ReadShareGroupStateResponse:
    R = read_share_group_state.RESPONSE
    results = []
    for t in req.topics:
        parts = []
        for pd in t.partitions:
            code, st = _read(ctx, (req.group_id, t.topic_id, pd.partition), pd.leader_epoch)
            parts.append(R.PartitionResult(
                partition=pd.partition, error_code=code,
                state_epoch=st.state_epoch if st is not None else 0,
                start_offset=st.start_offset if st is not None else -1,
                state_batches=[R.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                            delivery_state=b.state, delivery_count=b.delivery_count)
                               for b in (st.batches if st is not None else [])]))
        results.append(R.ReadStateResult(topic_id=t.topic_id, partitions=parts))
    return R(results=results)


@handles(read_share_group_state_summary.API, "0-1")
async def handle_read_share_group_state_summary(
        ctx: RequestContext, req: read_share_group_state_summary.ReadShareGroupStateSummaryRequest
) -> read_share_group_state_summary.ReadShareGroupStateSummaryResponse:
    R = read_share_group_state_summary.RESPONSE
    results = []
    for t in req.topics:
        parts = []
        for pd in t.partitions:
            code, st = _read(ctx, (req.group_id, t.topic_id, pd.partition), -1)
            parts.append(R.PartitionResult(
                partition=pd.partition, error_code=code, state_epoch=st.state_epoch if st is not None else 0,
                leader_epoch=_leader_epochs(ctx).get((req.group_id, t.topic_id, pd.partition), -1),
                start_offset=st.start_offset if st is not None else -1,
                delivery_complete_count=_delivery_complete(st)))
        results.append(R.ReadStateSummaryResult(topic_id=t.topic_id, partitions=parts))
    return R(results=results)


def _delivery_complete(st: PersistedState | None) -> int:
    """v1's DeliveryCompleteCount (KIP-1226: the group coordinator's lag is the high watermark less
    the start offset less this): the window's records acknowledged or archived. Kafka's share
    coordinator keeps the count its share-partition leader wrote; ours counts the batches it holds,
    the same number for a window written whole."""
    if st is None:
        return -1
    return sum(b.last_offset - b.first_offset + 1 for b in st.batches if b.state in DONE_STATES)


DONE_STATES = (2, 4)  # the persisted DeliveryState of ACKNOWLEDGED and ARCHIVED


def _leader_epochs(ctx: RequestContext) -> dict[ShareKey, int]:
    return _coord(ctx).shard.leader_epochs


def _fenced_leader(ctx: RequestContext, key: ShareKey, leader_epoch: int) -> bool:
    """Kafka's ShareCoordinatorShard: an older leader epoch than the last one seen is fenced; a
    newer one (-1 means "do not check") is remembered."""
    if leader_epoch < 0:
        return False
    epochs = _leader_epochs(ctx)
    if leader_epoch < epochs.get(key, -1):
        return True
    epochs[key] = leader_epoch
    return False


def _read(ctx: RequestContext, key: ShareKey, leader_epoch: int) -> tuple[int, PersistedState | None]:
    if not _authorized(ctx):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    coord = _coord(ctx)
    code = _ownership(coord, key)
    if code != ErrorCode.NONE:
        return code, None
    st = coord.shard.states.get(key)
    if st is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if _fenced_leader(ctx, key, leader_epoch):
        return ErrorCode.FENCED_LEADER_EPOCH, None
    return ErrorCode.NONE, st


@handles(write_share_group_state.API, "0-1")
async def handle_write_share_group_state(
        ctx: RequestContext, req: write_share_group_state.WriteShareGroupStateRequest
) -> write_share_group_state.WriteShareGroupStateResponse:
    R = write_share_group_state.RESPONSE
    results = []
    for t in req.topics:
        parts = []
        for pd in t.partitions:
            key = (req.group_id, t.topic_id, pd.partition)
            code: int = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            if _authorized(ctx):
                coord = _coord(ctx)
                code = _ownership(coord, key)
                held = coord.shard.states.get(key)
                if code != ErrorCode.NONE:
                    pass
                elif held is not None and pd.state_epoch < held.state_epoch:
                    code = ErrorCode.FENCED_STATE_EPOCH
                elif _fenced_leader(ctx, key, pd.leader_epoch):
                    code = ErrorCode.FENCED_LEADER_EPOCH
                else:
                    changed = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                               for b in pd.state_batches]
                    start = pd.start_offset if pd.start_offset >= 0 or held is None else held.start_offset
                    merged = merge_batches(held.batches if held is not None else [], changed, start)
                    coord.shard.write(key, start, pd.state_epoch, merged, changed if held is not None else None)
                    code = await coord.store.wait_replicated(coordinator_key(key), WRITE_TIMEOUT_MS)
                    if code != ErrorCode.NONE:
                        code = ErrorCode.COORDINATOR_NOT_AVAILABLE  # Kafka maps a failed write so
            parts.append(R.PartitionResult(partition=pd.partition, error_code=code))
        results.append(R.WriteStateResult(topic_id=t.topic_id, partitions=parts))
    return R(results=results)


@handles(delete_share_group_state.API, "0")
async def handle_delete_share_group_state(
        ctx: RequestContext, req: delete_share_group_state.DeleteShareGroupStateRequest
) -> delete_share_group_state.DeleteShareGroupStateResponse:
    R = delete_share_group_state.RESPONSE

    def delete(key: ShareKey, _i: int) -> int:
        _coord(ctx).shard.delete(key)
        _leader_epochs(ctx).pop(key, None)
        return ErrorCode.NONE

    results = []
    for t in req.topics:
        codes = _each(ctx, req.group_id, [(t.topic_id, [p.partition for p in t.partitions])], delete)
        results.append(R.DeleteStateResult(topic_id=t.topic_id, partitions=[
            R.PartitionResult(partition=p, error_code=c) for (_tid, p), c in codes.items()]))
    return R(results=results)
