"""Retention in the background: the broker's periodic task retires whole segments past
retention.ms / retention.bytes (renamed `.deleted`, removed after file.delete.delay.ms), the log
start offset moves, and consumers positioned below it are reset by their auto.offset.reset."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigResource
from confluent_kafka.admin import ConfigEntry as CEntry

from .helpers import TIMEOUT, create_topic, module_broker, offsets, unique, wait_until

HOUR_MS = 3600 * 1000


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory, {"log.retention.check.interval.ms": 100}) as broker:
        yield broker


def produce(b, topic: str, n: int, timestamp_ms: int | None = None, size: int = 200) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    errors = []
    for i in range(n):
        kw = {"timestamp": timestamp_ms} if timestamp_ms is not None else {}
        p.produce(topic, key=b"k%d" % i, value=b"v" * size, on_delivery=lambda e, m: e and errors.append(e), **kw)
        p.flush(TIMEOUT)  # one batch per record: segments roll at predictable points
    assert errors == []


def holder_base(b, topic: str, offset: int) -> int:
    """Base offset of the segment holding `offset`: retention stops there, since that segment
    also holds fresh records."""
    return b.call(lambda br: br.get_log(topic, 0).segments.floor_segment(offset).base_offset)


def files(b, topic: str) -> list[str]:
    return sorted(p.name for p in (b.data_dir / f"{topic}-0").iterdir())


def test_retention_ms_deletes_old_segments_and_consumers_reset(kafka_broker_module):
    t = unique("ret-ms")
    create_topic(kafka_broker_module, t, configs={"segment.bytes": "1000", "retention.ms": str(HOUR_MS),
                                "file.delete.delay.ms": "300"})
    now = int(time.time() * 1000)
    produce(kafka_broker_module, t, 20, timestamp_ms=now - 2 * HOUR_MS)  # already past retention.ms
    produce(kafka_broker_module, t, 5)  # fresh records: the segments holding them stay
    want_start = holder_base(kafka_broker_module, t, 20)
    assert want_start > 0
    wait_until(lambda: offsets(kafka_broker_module, t)[0] == want_start, what="retention.ms to retire the old segments")
    start, end = offsets(kafka_broker_module, t)
    assert end == 25 and start == kafka_broker_module.call(lambda br: br.get_log(t, 0).segments.first.base_offset)
    # the retired files are renamed first, then removed after file.delete.delay.ms
    wait_until(lambda: not any(n.endswith(".deleted") for n in files(kafka_broker_module, t)), what=".deleted files to go")
    assert min(n for n in files(kafka_broker_module, t) if n.endswith(".log")) == f"{start:020d}.log"

    # a consumer at offset 0 gets OFFSET_OUT_OF_RANGE and resets to the new start (earliest)
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(t, 0, 0)])
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < end - start and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.offset())
        assert got == list(range(start, end))
    finally:
        c.close()
    # with auto.offset.reset=error the client is told instead
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "auto.offset.reset": "error"})
    try:
        c.assign([TopicPartition(t, 0, 1)])
        deadline = time.monotonic() + TIMEOUT
        err = None
        while err is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error():
                err = m.error()
        assert err is not None and err.code() == KafkaError._AUTO_OFFSET_RESET
    finally:
        c.close()


def test_retention_bytes(kafka_broker_module):
    t = unique("ret-bytes")
    create_topic(kafka_broker_module, t, configs={"segment.bytes": "1000", "retention.bytes": "2500", "file.delete.delay.ms": "0"})
    produce(kafka_broker_module, t, 40)
    wait_until(lambda: kafka_broker_module.call(lambda br: br.get_log(t, 0).size_in_bytes()) <= 2500 + 1000,
               what="retention.bytes to shrink the log")
    lg_size, n_segments = kafka_broker_module.call(lambda br: (br.get_log(t, 0).size_in_bytes(), br.get_log(t, 0).num_segments))
    start, end = offsets(kafka_broker_module, t)
    assert end == 40 and start > 0 and n_segments <= 4
    # what is left is the newest data, and it reads from the new start
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    kc = KafkaConsumer(bootstrap_servers=kafka_broker_module.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                       consumer_timeout_ms=3000)
    try:
        kc.assign([KTP(t, 0)])
        kc.seek(KTP(t, 0), 0)  # below the log start: out of range, reset to earliest
        got = [m.offset for m in kc]
    finally:
        kc.close()
    assert got == list(range(start, end))


def test_retention_applies_live_after_alter_configs(kafka_broker_module):
    t = unique("ret-live")
    create_topic(kafka_broker_module, t, configs={"segment.bytes": "1000"})
    now = int(time.time() * 1000)
    produce(kafka_broker_module, t, 15, timestamp_ms=now - 3 * HOUR_MS)
    produce(kafka_broker_module, t, 2)
    time.sleep(0.4)
    assert offsets(kafka_broker_module, t)[0] == 0  # a week's retention by default: nothing goes
    a = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap})
    r = ConfigResource("topic", t, incremental_configs=[
        CEntry("retention.ms", str(HOUR_MS), incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([r])[r].result(TIMEOUT)
    want_start = holder_base(kafka_broker_module, t, 15)
    wait_until(lambda: offsets(kafka_broker_module, t)[0] == want_start > 0, what="the new retention.ms to apply")


def test_compact_delete_policy_also_retires_by_time(kafka_broker_module):
    t = unique("ret-cd")
    create_topic(kafka_broker_module, t, configs={"segment.bytes": "1000", "retention.ms": str(HOUR_MS),
                                "cleanup.policy": "compact,delete"})
    produce(kafka_broker_module, t, 15, timestamp_ms=int(time.time() * 1000) - 2 * HOUR_MS)
    produce(kafka_broker_module, t, 2)
    want_start = holder_base(kafka_broker_module, t, 15)
    wait_until(lambda: offsets(kafka_broker_module, t)[0] == want_start > 0, what="retention on a compact,delete topic")


def test_retention_ms_empties_a_log_whose_active_segment_expired(kafka_broker_module):
    """Kafka 4.4: when the active segment's records are past retention.ms too, the retention check
    rolls an empty segment and deletes the rest; the log start offset moves to the log end."""
    t = unique("ret-active")
    create_topic(kafka_broker_module, t, configs={"retention.ms": str(HOUR_MS), "file.delete.delay.ms": "300"})
    produce(kafka_broker_module, t, 3, timestamp_ms=int(time.time() * 1000) - 2 * HOUR_MS)  # one segment
    wait_until(lambda: offsets(kafka_broker_module, t) == (3, 3), what="retention.ms to empty the log")
    assert [n for n in files(kafka_broker_module, t) if n.endswith(".log")] == [f"{3:020d}.log"]
    produce(kafka_broker_module, t, 2)  # fresh records go on at the log end
    assert offsets(kafka_broker_module, t) == (3, 5)
