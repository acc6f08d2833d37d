"""The transaction APIs: AddPartitionsToTxn v0-5, AddOffsetsToTxn v0-4, EndTxn v0-5,
TxnOffsetCommit v0-6, DescribeProducers v0, DescribeTransactions v0, ListTransactions v0-2.

Behavior: the handlers translate between wire versions and the transaction coordinator
(minibroker/coordinator/txn/transaction_coordinator.py); TxnOffsetCommit writes through the group
coordinator, after checking with the transaction coordinator that the group's
__consumer_offsets partition is in the transaction (KIP-890 verification, as for produce).
Partitions of unknown topics are refused before the coordinators see them, as KafkaApis does:
AddPartitionsToTxn answers UNKNOWN_TOPIC_OR_PARTITION for them and OPERATION_NOT_ATTEMPTED for
the others of the request; a client may not add an internal topic (TOPIC_AUTHORIZATION_FAILED).
DescribeProducers reads the partitions' producer state (storage/producer_state.py).

Version notes:
- AddPartitionsToTxn: v1 same as v0; v2 PRODUCER_FENCED (older versions get INVALID_PRODUCER_EPOCH);
  v3 flexible; v4 batches of transactions and verify_only (KIP-890: broker to coordinator), a
  top-level error; v5 TRANSACTION_ABORTABLE.
- AddOffsetsToTxn, EndTxn: v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE. EndTxn
  v5: transactions v2 (KIP-890 part 2, transaction.version 2 is finalized: minibroker/features.py),
  the coordinator bumps the epoch and the response carries the producer id and epoch to go on with.
- TxnOffsetCommit: v2 leader epoch; v3 flexible, generation, member and instance id; v4
  TRANSACTION_ABORTABLE-aware clients (still mapped to INVALID_TXN_STATE before v5); v5
  transactions v2: the group's __consumer_offsets partition is added to the transaction by the
  commit itself (no AddOffsetsToTxn), and TRANSACTION_ABORTABLE is answered as it is. v6 (KIP-1319):
  topics by id, resolved to names before anything else; an unknown id answers UNKNOWN_TOPIC_ID.
- ListTransactions: v1 duration filter (KIP-994); v2 transactional id pattern (KIP-1152): a regular
  expression the whole id must match (null or empty: no filter); one that does not compile is
  INVALID_REGULAR_EXPRESSION. Kafka compiles it with RE2/J; Python's `re` is used here, which
  accepts the RE2 syntax clients send (it also accepts look-arounds and back-references RE2 refuses).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

# the coordinator's module comes with this handler module (the first transactional request); the
# coordinator itself is built when first needed (minibroker.coordinators)
from minibroker.coordinator.txn.transaction_coordinator import replicated, verification_error_for_produce
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.topics import validate_topic_name
from minibroker_protocol.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_producers,
    describe_transactions,
    end_txn,
    list_transactions,
    txn_offset_commit,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from minibroker.coordinator.txn.transaction_coordinator import TransactionCoordinator

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _txn_coordinator(ctx: RequestContext) -> TransactionCoordinator | None:
    coord = ctx.services.txn_coordinator
    return coord if coord is not None and coord.active else None


def _fenced_for_old_clients(code: int, version: int, first_version: int = 2) -> int:
    # clients before PRODUCER_FENCED existed handle INVALID_PRODUCER_EPOCH the same way (KafkaApis)
    if code == ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


# --------------------------------------------------------------------------- AddPartitionsToTxn
@handles(add_partitions_to_txn.API, "0-5")
async def handle_add_partitions_to_txn(ctx: RequestContext, req: add_partitions_to_txn.AddPartitionsToTxnRequest) -> add_partitions_to_txn.AddPartitionsToTxnResponse:
    R = add_partitions_to_txn.RESPONSE
    v = ctx.version
    services = ctx.services
    coord = _txn_coordinator(ctx)
    if v >= 4:
        # v4+ is broker-to-coordinator (KIP-890): CLUSTER_ACTION, a top-level error (KafkaApis)
        authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)
    if v < 4:
        txns = [(req.v3_and_below_transactional_id, req.v3_and_below_producer_id, req.v3_and_below_producer_epoch,
                 False, req.v3_and_below_topics)]
    else:
        txns = [(t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics)
                for t in req.transactions]
    results = []
    for txn_id, pid, epoch, verify_only, topics in txns:
        partitions = [(t.name, p) for t in topics for p in t.partitions]
        refused: dict[tuple[str, int], int] = {}
        # a client (v0-3) needs WRITE on the transactional id, then WRITE on each topic
        if v < 4 and (code := authz.denied(ctx, authz.Op.WRITE, authz.ResourceType.TRANSACTIONAL_ID, txn_id)):
            errors = dict.fromkeys(partitions, code)
            results.append((txn_id, _by_topic(R, errors)))
            continue
        unwritable = authz.denied_topics(ctx, (t.name for t in topics), authz.Op.WRITE) if v < 4 else set()
        for tp in partitions:
            image = services.metadata_cache.topic(tp[0])
            if v < 4 and (tp[0] in INTERNAL_TOPICS or tp[0] in unwritable):
                refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif image is None or tp[1] not in image.partitions:
                # the metadata's partitions, not this broker's replicas: on a cluster the
                # coordinator holds few of a transaction's partitions (Kafka: the metadata cache)
                refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if refused:
            errors = {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
        elif coord is None:
            errors = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif verify_only:
            errors = coord.verify_partitions(txn_id, pid, epoch, partitions)
        else:
            code = coord.add_partitions(txn_id, pid, epoch, partitions)
            if not code:  # answered once the Ongoing record is replicated
                code = await replicated(coord.store, txn_id)
            errors = dict.fromkeys(partitions, _fenced_for_old_clients(code, v))
        results.append((txn_id, _by_topic(R, errors)))
    if v < 4:
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=results[0][1])
    return R(throttle_time_ms=0, error_code=0, results_by_transaction=[
        R.AddPartitionsToTxnResult(transactional_id=txn_id, topic_results=topic_results)
        for txn_id, topic_results in results])


def _by_topic(R: add_partitions_to_txn._AddPartitionsToTxnResponseSchema, errors: dict[tuple[str, int], int]
              ) -> list[add_partitions_to_txn.AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[add_partitions_to_txn.AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]] = {}
    for (topic, p), code in errors.items():
        by_topic.setdefault(topic, []).append(R.AddPartitionsToTxnPartitionResult(partition_index=p,
                                                                                   partition_error_code=code))
    return [R.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def _txn_group_denied(ctx: RequestContext, transactional_id: str, group_id: str) -> int:
    """AddOffsetsToTxn, TxnOffsetCommit: WRITE on the transactional id, then READ on the group."""
    return (authz.denied(ctx, authz.Op.WRITE, authz.ResourceType.TRANSACTIONAL_ID, transactional_id)
            or authz.group_denied(ctx, group_id))


# ----------------------------------------------------------------------------- AddOffsetsToTxn
@handles(add_offsets_to_txn.API, "0-4")
async def handle_add_offsets_to_txn(ctx: RequestContext, req: add_offsets_to_txn.AddOffsetsToTxnRequest) -> add_offsets_to_txn.AddOffsetsToTxnResponse:
    R = add_offsets_to_txn.RESPONSE
    if refused := _txn_group_denied(ctx, req.transactional_id, req.group_id):
        return R(throttle_time_ms=0, error_code=refused)
    coord = _txn_coordinator(ctx)
    group = ctx.services.group_coordinator
    if coord is None or group is None:
        return R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    try:
        await group.store.ensure_topic_async()  # the group's partition must exist to take the marker
    except KafkaError:
        return R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    code = coord.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                [coord.offsets_partition(req.group_id)])
    if not code:
        code = await replicated(coord.store, req.transactional_id)
    return R(throttle_time_ms=0, error_code=_fenced_for_old_clients(code, ctx.version))


# ------------------------------------------------------------------------------------- EndTxn
@handles(end_txn.API, "0-5")
async def handle_end_txn(ctx: RequestContext, req: end_txn.EndTxnRequest) -> end_txn.EndTxnResponse:
    R = end_txn.RESPONSE
    if refused := authz.denied(ctx, authz.Op.WRITE, authz.ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return R(throttle_time_ms=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    coord = _txn_coordinator(ctx)
    if coord is None:
        return R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # v5 is transactions v2 (KafkaApis: TransactionVersion.transactionVersionForEndTxn)
    code, pid, epoch = coord.end_transaction_and_epoch(req.transactional_id, req.producer_id, req.producer_epoch,
                                                       req.committed, tv=2 if ctx.version >= 5 else 0)
    if not code:  # the Prepare* record is replicated before the answer (Kafka: appendTransactionToLog)
        code = await replicated(coord.store, req.transactional_id)
    return R(throttle_time_ms=0, error_code=_fenced_for_old_clients(code, ctx.version), producer_id=pid,
             producer_epoch=epoch)


# ----------------------------------------------------------------------------- TxnOffsetCommit
@handles(txn_offset_commit.API, "0-6")
async def handle_txn_offset_commit(ctx: RequestContext, req: txn_offset_commit.TxnOffsetCommitRequest) -> txn_offset_commit.TxnOffsetCommitResponse:
    R = txn_offset_commit.RESPONSE
    services = ctx.services
    if refused := _txn_group_denied(ctx, req.transactional_id, req.group_id):
        return R(throttle_time_ms=0, topics=[R.TxnOffsetCommitResponseTopic(
            name=t.name, topic_id=t.topic_id, partitions=[
                R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=refused)
                for p in t.partitions]) for t in req.topics])
    unknown_ids = []
    if ctx.version >= 6:  # KIP-1319: topics by id; an id no topic has answers UNKNOWN_TOPIC_ID
        by_name = []
        for t in req.topics:
            name = services.metadata_cache.topic_name(t.topic_id)
            if name is None:
                unknown_ids.append(R.TxnOffsetCommitResponseTopic(topic_id=t.topic_id, partitions=[
                    R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                       error_code=ErrorCode.UNKNOWN_TOPIC_ID)
                    for p in t.partitions]))
            else:
                t.name = name
                by_name.append(t)
        req.topics = by_name
    unreadable = authz.denied_topics(ctx, (t.name for t in req.topics), authz.Op.READ)
    results: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        if t.name in unreadable:
            results.update(((t.name, p.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions)
            continue
        topic = services.metadata_cache.topic(t.name)
        known = [p for p in t.partitions if topic is not None and p.partition_index in topic.partitions]
        for p in t.partitions:
            if p not in known:
                results[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if known:
            t.partitions = known
            valid.append(t)
    if valid and ctx.version >= 5 and services.group_coordinator is not None:
        try:  # v5 adds the group's partition to the transaction: it must exist to take the marker
            await services.group_coordinator.store.ensure_topic_async()
        except KafkaError:
            pass  # the check below answers COORDINATOR_NOT_AVAILABLE
    if valid:
        req.topics = valid
        requested = [(t.name, p.partition_index) for t in valid for p in t.partitions]
        group = services.group_coordinator
        code = (group.store.coordinator_error(req.group_id) if group is not None else 0) or \
            _verify_offsets_partition(ctx, req)
        if code:
            results.update(dict.fromkeys(requested, code))
        else:
            committed = services.group_coordinator.commit_transactional_offsets(req)
            if any(c == ErrorCode.NONE for c in committed.values()):  # answered once replicated
                code = await services.group_coordinator.store.wait_replicated(
                    req.group_id, services.config.get("offsets.commit.timeout.ms"))
                if code:  # the group coordinator's mapping (GroupCoordinatorService.handleOperationException)
                    code = ErrorCode.NOT_COORDINATOR if code == ErrorCode.NOT_LEADER_OR_FOLLOWER \
                        else ErrorCode.COORDINATOR_NOT_AVAILABLE
                    committed = {tp: c or code for tp, c in committed.items()}
            results.update(committed)
    by_topic: dict[str, list[txn_offset_commit.TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]] = {}
    for (name, index), code in results.items():
        if ctx.version < 2 and code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE  # clients before 2.0 crash on it (KAFKA-7296)
        by_topic.setdefault(name, []).append(R.TxnOffsetCommitResponsePartition(partition_index=index, error_code=code))
    return R(throttle_time_ms=0, topics=[
        R.TxnOffsetCommitResponseTopic(name=t, topic_id=(services.metadata_cache.topic_id(t) or ZERO_UUID)
                                       if ctx.version >= 6 else ZERO_UUID, partitions=ps)
        for t, ps in by_topic.items()] + unknown_ids)


def _verify_offsets_partition(ctx: RequestContext, req: txn_offset_commit.TxnOffsetCommitRequest) -> int:
    """The group's __consumer_offsets partition must be in the producer's transaction before its
    first transactional offsets go there (AddOffsetsToTxn first)."""
    group = ctx.services.group_coordinator
    coord = _txn_coordinator(ctx)
    if group is None or not group.active or coord is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    topic, partition = coord.offsets_partition(req.group_id)
    part = ctx.services.replica_manager.get_partition(topic, partition)
    if part is not None and part.has_ongoing_transaction(req.producer_id, req.producer_epoch):
        return ErrorCode.NONE
    if ctx.version >= 5:
        # transactions v2: the commit adds the partition, as AddOffsetsToTxn did (KIP-890 part 2)
        code = coord.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                    [(topic, partition)], tv=2)
    else:
        code = coord.verify_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                       [(topic, partition)])[(topic, partition)]
    if not code:
        return ErrorCode.NONE
    code = verification_error_for_produce(code, generic_error_supported=ctx.version >= 5)
    # the group coordinator's translation of write errors (NOT_ENOUGH_REPLICAS: retry later)
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if code == ErrorCode.NOT_ENOUGH_REPLICAS else code


# ---------------------------------------------------------------------------- DescribeProducers
@handles(describe_producers.API, "0")
async def handle_describe_producers(ctx: RequestContext, req: describe_producers.DescribeProducersRequest) -> describe_producers.DescribeProducersResponse:
    R = describe_producers.RESPONSE
    services = ctx.services
    topics = []
    for t in req.topics:
        topic_error: tuple[int, str | None] | None = None
        try:
            validate_topic_name(t.name)
        except KafkaError as e:
            topic_error = (e.code, e.message)
        if topic_error is None and authz.topic_denied(ctx, t.name, authz.Op.READ):
            topic_error = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, authz.MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED])
        if topic_error is None and t.name not in services.metadata_cache:
            topic_error = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        parts = []
        for p in t.partition_indexes:
            part = None if topic_error else services.replica_manager.get_partition(t.name, p)
            if part is None:
                code, msg = topic_error or (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                parts.append(R.PartitionResponse(partition_index=p, error_code=code, error_message=msg,
                                                 active_producers=[]))
                continue
            parts.append(R.PartitionResponse(partition_index=p, error_code=0, error_message=None, active_producers=[
                R.ProducerState(producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                                last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                                current_txn_start_offset=-1 if e.current_txn_first_offset is None
                                else e.current_txn_first_offset)
                for e in sorted(part.producers().values(), key=lambda e: e.producer_id)]))
        topics.append(R.TopicResponse(name=t.name, partitions=parts))
    return R(throttle_time_ms=0, topics=topics)


# ------------------------------------------------------------------------- DescribeTransactions
@handles(describe_transactions.API, "0")
async def handle_describe_transactions(ctx: RequestContext, req: describe_transactions.DescribeTransactionsRequest) -> describe_transactions.DescribeTransactionsResponse:
    R = describe_transactions.RESPONSE
    coord = ctx.services.txn_coordinator
    states = []
    for txn_id in req.transactional_ids:
        code, md = (ErrorCode.COORDINATOR_NOT_AVAILABLE, None) if coord is None else coord.describe(txn_id)
        if denied := authz.denied(ctx, authz.Op.DESCRIBE, authz.ResourceType.TRANSACTIONAL_ID, txn_id):
            code, md = denied, None
        if md is None:
            states.append(R.TransactionState(error_code=code, transactional_id=txn_id, transaction_state="",
                                             transaction_timeout_ms=0, transaction_start_time_ms=-1,
                                             producer_id=-1, producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        hidden = authz.denied_topics(ctx, (t for t, _ in md.topic_partitions), authz.Op.DESCRIBE)
        for topic, p in sorted(md.topic_partitions):
            if topic not in hidden:  # topics the client may not DESCRIBE are left out (KafkaApis)
                by_topic.setdefault(topic, []).append(p)
        states.append(R.TransactionState(
            error_code=0, transactional_id=txn_id, transaction_state=md.state.display_name,
            transaction_timeout_ms=md.txn_timeout_ms, transaction_start_time_ms=md.txn_start_timestamp,
            producer_id=md.producer_id, producer_epoch=md.producer_epoch,
            topics=[R.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return R(throttle_time_ms=0, transaction_states=states)


# ---------------------------------------------------------------------------- ListTransactions
@handles(list_transactions.API, "0-2")
async def handle_list_transactions(ctx: RequestContext, req: list_transactions.ListTransactionsRequest) -> list_transactions.ListTransactionsResponse:
    R = list_transactions.RESPONSE
    coord = ctx.services.txn_coordinator
    if coord is None:
        return R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, unknown_state_filters=[],
                 transaction_states=[])
    duration = req.duration_filter if ctx.version >= 1 else -1
    pattern = None
    if ctx.version >= 2 and req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, unknown_state_filters=[],
                     transaction_states=[])
    code, unknown, found = coord.list_transactions(req.state_filters or [], req.producer_id_filters or [], duration)
    if pattern is not None:
        found = [md for md in found if pattern.fullmatch(md.transactional_id)]
    # only the transactional ids the client may DESCRIBE are listed (KafkaApis)
    found = [md for md in found if authz.allowed(ctx, authz.Op.DESCRIBE, authz.ResourceType.TRANSACTIONAL_ID,
                                                 md.transactional_id)]
    return R(throttle_time_ms=0, error_code=code, unknown_state_filters=unknown, transaction_states=[
        R.TransactionState(transactional_id=md.transactional_id, producer_id=md.producer_id,
                           transaction_state=md.state.display_name) for md in found])
