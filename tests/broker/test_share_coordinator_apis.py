"""The share coordinator's inter-broker APIs 83-87 (KIP-932; issue 29: share groups on a cluster):
Initialize/Read/Write/Delete ShareGroupState and ReadShareGroupStateSummary, served over the state
minibroker's share groups keep in __share_group_state (minibroker/handlers/share_coordinator.py).

One broker for the module. The raw round trip is what a share-partition leader on another broker
sends (Kafka's PersisterStateManager); the second test reads, through ReadShareGroupState, the state
a real share consumer (librdkafka's ShareConsumer) left by acknowledging."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import (
    delete_share_group_state as dsgs,
)
from minibroker_protocol.apis import (
    initialize_share_group_state as isgs,
)
from minibroker_protocol.apis import (
    read_share_group_state as rsgs,
)
from minibroker_protocol.apis import (
    read_share_group_state_summary as rsum,
)
from minibroker_protocol.apis import (
    write_share_group_state as wsgs,
)
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient

ACQUIRED, ACKNOWLEDGED, ARCHIVED = 1, 2, 4  # RecordState ids (Kafka's RecordState)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with BrokerThread(Path(tmp_path_factory.mktemp("share-coord")) / "data",
                      overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _read(c: RawClient, group: str, tid: uuid.UUID, leader_epoch: int = 0) -> rsgs.ReadShareGroupStateResponse.PartitionResult:
    R = rsgs.REQUEST
    resp = c.call(rsgs.API, 0, R(group_id=group, topics=[R.ReadStateData(
        topic_id=tid, partitions=[R.PartitionData(partition=0, leader_epoch=leader_epoch)])]))
    return resp.results[0].partitions[0]


def _write(c: RawClient, group: str, tid: uuid.UUID, state_epoch: int, leader_epoch: int, start: int,
           batches: list[tuple[int, int, int, int]]) -> int:
    W = wsgs.REQUEST
    resp = c.call(wsgs.API, 1, W(group_id=group, topics=[W.WriteStateData(topic_id=tid, partitions=[W.PartitionData(
        partition=0, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start, state_batches=[
            W.StateBatch(first_offset=f, last_offset=last, delivery_state=s, delivery_count=n)
            for f, last, s, n in batches])])]))
    return int(resp.results[0].partitions[0].error_code)


def test_state_round_trip_and_fencing(broker: BrokerThread) -> None:
    group, tid = "sc-raw", uuid.uuid4()
    with RawClient(broker.bootstrap) as c:
        assert _read(c, group, tid).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        Init = isgs.REQUEST
        resp = c.call(isgs.API, 0, Init(group_id=group, topics=[Init.InitializeStateData(
            topic_id=tid, partitions=[Init.PartitionData(partition=0, state_epoch=1, start_offset=5)])]))
        assert resp.results[0].partitions[0].error_code == ErrorCode.NONE
        got = _read(c, group, tid)
        assert (got.error_code, got.state_epoch, got.start_offset, got.state_batches) == (ErrorCode.NONE, 1, 5, [])
        # two writes: the second's batches merged over the first's (PersisterStateBatchCombiner)
        assert _write(c, group, tid, 1, 3, 5, [(5, 9, ACQUIRED, 1)]) == ErrorCode.NONE
        assert _write(c, group, tid, 1, 3, 7, [(7, 8, ACKNOWLEDGED, 1)]) == ErrorCode.NONE
        got = _read(c, group, tid, 3)
        assert got.start_offset == 7
        assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in got.state_batches] == [
            (7, 8, ACKNOWLEDGED, 1), (9, 9, ACQUIRED, 1)]
        # an older state epoch or leader epoch is fenced, and changes nothing
        assert _write(c, group, tid, 0, 3, 9, []) == ErrorCode.FENCED_STATE_EPOCH
        assert _write(c, group, tid, 1, 2, 9, []) == ErrorCode.FENCED_LEADER_EPOCH
        assert _read(c, group, tid, 2).error_code == ErrorCode.FENCED_LEADER_EPOCH
        S = rsum.REQUEST
        summ = c.call(rsum.API, 1, S(group_id=group, topics=[S.ReadStateSummaryData(
            topic_id=tid, partitions=[S.PartitionData(partition=0, leader_epoch=3)])])).results[0].partitions[0]
        assert (summ.error_code, summ.state_epoch, summ.leader_epoch, summ.start_offset) == (ErrorCode.NONE, 1, 3, 7)
        D = dsgs.REQUEST
        resp = c.call(dsgs.API, 0, D(group_id=group, topics=[D.DeleteStateData(
            topic_id=tid, partitions=[D.PartitionData(partition=0)])]))
        assert resp.results[0].partitions[0].error_code == ErrorCode.NONE
        assert _read(c, group, tid).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_reads_what_a_share_consumer_acknowledged(broker: BrokerThread) -> None:
    pytest.importorskip("confluent_kafka", minversion="2.16")
    from tests.reference import share_clients as sc

    topic, group = "sc-acked", "sc-acked-group"
    sc.create_topic(broker.bootstrap, topic, {group: {"share.auto.offset.reset": "earliest"}})
    sc.produce(broker.bootstrap, topic, [f"v{i}" for i in range(10)])
    c = sc.consumer(broker.bootstrap, group, topic, 100)
    try:
        got = sc.poll_until(c, lambda g: len(g) >= 10, sc.accept, timeout=60)
    finally:
        c.close()
    assert sorted(m.offset() for m in got) == list(range(10))
    t = broker.broker.topics.get(topic)
    assert t is not None
    with RawClient(broker.bootstrap) as raw:
        deadline = time.monotonic() + 30
        while True:  # the acknowledgements reach the state when commit_sync returned; bounded wait anyway
            st = _read(raw, group, t.topic_id, -1)
            if st.error_code == ErrorCode.NONE and st.start_offset == 10 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert (st.error_code, st.start_offset) == (ErrorCode.NONE, 10)
