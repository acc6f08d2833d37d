"""The share-group dead-letter queue (KIP-1191) in the coordinator, over a real storage engine:
a rejected record reaches the DLQ topic (key, value, headers, partition) and is archived after;
records persisted ARCHIVING when the broker stopped are written after the restart (Kafka's
maybeResumeDlqArchiving). The wire behaviour against Kafka is tests/reference/test_share_delivery.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.config.topic import validate_topic_config
from minibroker.coordinator.share.share_group_dlq import DLQRecordParameter
from minibroker.coordinator.share.share_partition import AckType, RecordState
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.v2 import Record, build_batch, iter_batch_records
from tests.coordinator.stack import Stack

SHARE = {"share.coordinator.state.topic.num.partitions": 1}


class _Ack:
    def __init__(self, first: int, last: int, kind: AckType) -> None:
        self.first_offset, self.last_offset, self.acknowledge_types = first, last, [int(kind)]


def _dlq_records(stack: Stack, topic: str, partition: int) -> list[tuple[bytes | None, bytes | None, dict[str, str]]]:
    lg = stack.topics.get_log(topic, partition)
    assert lg is not None
    info = lg.read(0, 1 << 20, max_offset=lg.high_watermark)
    buf = info.region.read_all() if info.region is not None else b""
    return [(r.key, r.value, {k: (v or b"").decode() for k, v in r.headers})
            for v in iter_batches(buf) for r in iter_batch_records(buf, v.pos)]


async def _setup(tmp_path: Path) -> Stack:
    stack = await Stack(tmp_path, SHARE).start()
    stack.topics.create("src", 3)
    stack.topics.create("dlq.x", 2, validate_topic_config({"errors.deadletterqueue.group.enable": "true"}))
    stack.replica_manager.append_to_partition("src", 2, build_batch(
        [Record(offset_delta=i, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(3)], base_timestamp=1))
    coord = stack.broker.share_groups
    coord.set_group_configs("g", {"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq.x",
                                  "errors.deadletterqueue.copy.record.enable": "true"})
    coord.heartbeat("g", "m", 0, None, ["src"], "c", "h")
    return stack


async def test_a_rejected_record_is_written_to_the_dlq_then_archived(tmp_path: Path) -> None:
    stack = await _setup(tmp_path)
    try:
        coord = stack.broker.share_groups
        tid = stack.topics["src"].topic_id
        got = coord.acquire("g", "m", tid, 2, 10, 1 << 20)
        assert got is not None and got.acquired == [(0, 2, 1)]
        assert coord.acknowledge("g", "m", tid, 2, [_Ack(1, 1, AckType.REJECT), _Ack(0, 0, AckType.ACCEPT)]) == 0
        sp = coord.partition_state("g", tid, 2)
        assert sp is not None and sp.records[1].state is RecordState.ARCHIVING and sp.start_offset == 1
        await coord.dlq.drain()
        assert sp.start_offset == 2  # archived once written
        assert _dlq_records(stack, "dlq.x", 0) == [(b"k1", b"v1", {
            "__dlq.errors.topic": "src", "__dlq.errors.partition": "2", "__dlq.errors.offset": "1",
            "__dlq.errors.group": "g", "__dlq.errors.delivery.count": "1",
            "__dlq.errors.message": "Offset rejected by client."})]  # partition 2 % 2
        assert _dlq_records(stack, "dlq.x", 1) == []
    finally:
        await stack.stop()


async def test_records_archiving_at_a_restart_are_written_after_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    stack = await _setup(tmp_path)
    coord = stack.broker.share_groups
    tid = stack.topics["src"].topic_id
    lost: list[DLQRecordParameter] = []
    monkeypatch.setattr(coord.dlq, "enqueue", lambda param, done: lost.append(param))  # the broker stops first
    coord.acquire("g", "m", tid, 2, 10, 1 << 20)
    assert coord.acknowledge("g", "m", tid, 2, [_Ack(0, 2, AckType.REJECT)]) == 0
    assert [(p.first_offset, p.last_offset) for p in lost] == [(0, 2)]
    monkeypatch.undo()
    stack = await stack.reopen()
    try:
        coord = stack.broker.share_groups
        await coord.start()  # loads __share_group_state: offsets 0-2 ARCHIVING (Stack leaves that to its owner)
        await coord.dlq.drain()
        assert [(r[0], r[2]["__dlq.errors.offset"]) for r in _dlq_records(stack, "dlq.x", 0)] == [
            (b"k0", "0"), (b"k1", "1"), (b"k2", "2")]
        sp = coord.partition_state("g", tid, 2)
        assert sp is not None and sp.start_offset == 3
    finally:
        await coord.stop()
        await stack.stop()
