"""Transactions v2 (KIP-890 part 2) on the wire: one scenario run against any broker.

`raw_scenario(bootstrap)` speaks the protocol directly (Produce v12, EndTxn v5, TxnOffsetCommit
v5, and the v1 requests beside them) and returns what each step answered, with the producer id
replaced by its rank, so that Apache Kafka's trace and minibroker's can be compared as they are.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from minibroker_protocol.apis import (
    add_partitions_to_txn,
    create_topics,
    describe_producers,
    describe_transactions,
    end_txn,
    find_coordinator,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
    txn_offset_commit,
)
from minibroker_protocol.records.v2 import Record, build_batch
from tests.integration.helpers import RawClient

PR = produce.REQUEST


def _produce(c: RawClient, version: int, txn_id: str, topic: str, pid: int, epoch: int, seq: int) -> int:
    data = build_batch([Record(value=f"v{seq}".encode())], base_timestamp=int(time.time() * 1000),
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    r = c.call(produce.API, version, PR(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[
        PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=0, records=data)])]))
    return int(r.responses[0].partition_responses[0].error_code)


def _end(c: RawClient, version: int, txn_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    r = c.call(end_txn.API, version, end_txn.REQUEST(transactional_id=txn_id, producer_id=pid,
                                                     producer_epoch=epoch, committed=commit))
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def _init(c: RawClient, txn_id: str, deadline_s: float = 30.0) -> tuple[list[int], int, int]:
    """InitProducerId until it is not CONCURRENT_TRANSACTIONS (nor the coordinator loading):
    (distinct codes seen in order, producer id, epoch)."""
    codes = []
    end = time.monotonic() + deadline_s
    while True:
        r = c.call(init_producer_id.API, 5, init_producer_id.REQUEST(
            transactional_id=txn_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        # a coordinator still loading its new partition is timing, not behaviour: left out
        if r.error_code not in (14, 15) and (not codes or codes[-1] != r.error_code):
            codes.append(int(r.error_code))
        # CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
        if r.error_code not in (51, 14, 15) or time.monotonic() > end:
            return codes, int(r.producer_id), int(r.producer_epoch)
        time.sleep(0.05)


def _describe_epoch(c: RawClient, txn_id: str) -> tuple[str, int]:
    r = c.call(describe_transactions.API, 0, describe_transactions.REQUEST(transactional_ids=[txn_id]))
    [s] = r.transaction_states
    return s.transaction_state, int(s.producer_epoch)


def _wait_settled(c: RawClient, txn_id: str) -> tuple[str, int]:
    """The state once the markers are written (Kafka answers EndTxn before them)."""
    end = time.monotonic() + 10
    while True:
        state, epoch = _describe_epoch(c, txn_id)
        if not state.startswith("Prepare") or time.monotonic() > end:
            return state, epoch
        time.sleep(0.05)


def raw_scenario(bootstrap: str, name: str | None = None) -> list[tuple[Any, ...]]:
    """Every step's answer. Producer ids are reported as 'pid' when they are the producer's own.
    `name` names the topic, transactional id and group (the same on both brokers, so that what a
    later `kafka-transactions list` of the shared brokers shows is the same too); random if None."""
    name = name or f"txn-v2-{uuid.uuid4().hex[:8]}"
    topic, txn_id, group = name, f"{name}-tid", f"{name}-group"
    out: list[tuple[Any, ...]] = []
    with RawClient(bootstrap, timeout=30) as c:
        CT = create_topics.REQUEST
        r = c.call(create_topics.API, 5, CT(topics=[CT.CreatableTopic(name=topic, num_partitions=1,
                                                                      replication_factor=1)], timeout_ms=30000))
        assert r.topics[0].error_code == 0, r
        # Kafka answers CreateTopics before the partition has a leader; a produce meanwhile gets
        # NOT_LEADER_OR_FOLLOWER (seen in a full-suite run on a loaded machine): wait for the leader
        end = time.monotonic() + 30
        while True:
            md = c.call(metadata.API, 9, metadata.REQUEST(topics=[metadata.REQUEST.MetadataRequestTopic(name=topic)],
                                                           allow_auto_topic_creation=False))
            parts = md.topics[0].partitions if md.topics and md.topics[0].error_code == 0 else []
            if (parts and all(p.error_code == 0 and p.leader_id >= 0 for p in parts)) or time.monotonic() > end:
                break
            time.sleep(0.05)
        # ... and Kafka's Metadata can name the leader before its ReplicaManager leads the partition
        # (a Produce then still gets NOT_LEADER_OR_FOLLOWER; seen in a fresh CI run): ListOffsets
        # answers the same error until it does, and changes nothing
        LO = list_offsets.REQUEST
        end = time.monotonic() + 30
        while True:
            lo = c.call(list_offsets.API, 7, LO(replica_id=-1, isolation_level=0, topics=[LO.ListOffsetsTopic(
                name=topic, partitions=[LO.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
            if lo.topics[0].partitions[0].error_code == 0 or time.monotonic() > end:
                break
            time.sleep(0.05)
        # the coordinator's own topics first (a fresh broker answers COORDINATOR_NOT_AVAILABLE meanwhile)
        for key_type, key in ((1, txn_id), (0, group)):
            end = time.monotonic() + 30
            while True:
                fc = c.call(find_coordinator.API, 4, find_coordinator.REQUEST(key_type=key_type,
                                                                              coordinator_keys=[key]))
                if fc.coordinators[0].error_code == 0 or time.monotonic() > end:
                    break
                time.sleep(0.1)
        codes, pid, e0 = _init(c, txn_id)
        out.append(("init", codes, e0))

        def rel(p: int) -> str | int:
            return "pid" if p == pid else p

        # KIP-890 part 2: Produce v12 adds the partition by itself
        out.append(("produce v12", _produce(c, 12, txn_id, topic, pid, e0, 0)))
        out.append(("describe", _describe_epoch(c, txn_id)))
        code, p, e1 = _end(c, 5, txn_id, pid, e0, True)
        out.append(("end v5 commit", code, rel(p), e1))
        out.append(("settled", _wait_settled(c, txn_id)))
        code, p, e = _end(c, 5, txn_id, pid, e0, True)
        out.append(("end v5 commit retried", code, rel(p), e))
        code, p, e = _end(c, 5, txn_id, pid, e0, False)
        out.append(("end v5 abort with the old epoch", code, rel(p), e))
        # the hanging-transaction protection: a late write of the ended transaction is refused
        out.append(("late produce v12, old epoch", _produce(c, 12, txn_id, topic, pid, e0, 1)))
        out.append(("produce v12, new epoch", _produce(c, 12, txn_id, topic, pid, e1, 0)))
        # TxnOffsetCommit v5 adds the group's __consumer_offsets partition by itself
        T = txn_offset_commit.REQUEST
        end = time.monotonic() + 30
        while True:  # retried as clients do while a new __consumer_offsets partition loads
            r = c.call(txn_offset_commit.API, 5, T(
                transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=e1, generation_id_or_member_epoch=-1,
                member_id="", group_instance_id=None, topics=[T.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                    T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                                      committed_metadata="")])]))
            codes = [p.error_code for t in r.topics for p in t.partitions]
            if codes[0] not in (14, 15, 16) or time.monotonic() > end:
                break
            time.sleep(0.1)
        out.append(("txn offset commit v5", codes))
        code, p, e2 = _end(c, 5, txn_id, pid, e1, False)
        out.append(("end v5 abort", code, rel(p), e2))
        out.append(("settled", _wait_settled(c, txn_id)))
        # with transactions v2 an abort needs no partition: it ends an empty transaction
        code, p, e3 = _end(c, 5, txn_id, pid, e2, False)
        out.append(("end v5 abort, nothing added", code, rel(p), e3))
        out.append(("settled", _wait_settled(c, txn_id)))
        code, p, e = _end(c, 5, txn_id, pid, e3, True)
        out.append(("end v5 commit, nothing added", code, rel(p), e))
        # a v1 client beside it: Produce v11 needs AddPartitionsToTxn first, EndTxn v4 bumps nothing
        out.append(("produce v11 unadded", _produce(c, 11, txn_id, topic, pid, e3, 0)))
        A = add_partitions_to_txn.REQUEST
        r = c.call(add_partitions_to_txn.API, 3, A(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=e3,
            v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
        out.append(("add partitions v3", [p.partition_error_code for t in r.results_by_topic_v3_and_below
                                          for p in t.results_by_partition]))
        out.append(("produce v11", _produce(c, 11, txn_id, topic, pid, e3, 0)))
        code, p, e = _end(c, 4, txn_id, pid, e3, True)
        out.append(("end v4 commit", code))
        out.append(("settled", _wait_settled(c, txn_id)))
        # fencing: a new instance's InitProducerId aborts the open v2 transaction
        out.append(("produce v12 again", _produce(c, 12, txn_id, topic, pid, e3, 1)))
        codes, p, e = _init(c, txn_id)
        out.append(("init fences", codes, rel(p), e))
        out.append(("settled", _wait_settled(c, txn_id)))
        out.append(("fenced produce", _produce(c, 12, txn_id, topic, pid, e3, 2)))
        code, p, _ = _end(c, 5, txn_id, pid, e3, True)
        out.append(("fenced end", code, rel(p)))
        D = describe_producers.REQUEST
        r = c.call(describe_producers.API, 0, D(topics=[D.TopicRequest(name=topic, partition_indexes=[0])]))
        out.append(("partition producers", [(rel(s.producer_id), s.producer_epoch, s.last_sequence,
                                             s.current_txn_start_offset)
                                            for s in r.topics[0].partitions[0].active_producers]))
    return out
