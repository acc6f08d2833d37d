"""Log compaction end to end: the broker's cleaner task on compacted topics and on
__consumer_offsets, read back by real consumers, across restarts and kill -9."""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from minibroker.testing import BrokerThread
from minibroker_protocol.records.dump import dump

from .helpers import TIMEOUT, create_topic, offsets, stored_records, unique, wait_until

FAST_CLEANER = {"log.cleaner.backoff.ms": 50, "log.retention.check.interval.ms": 100,
                "group.initial.rebalance.delay.ms": 0}
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "3000", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": "300", "file.delete.delay.ms": "100"}


def produce(bootstrap: str, topic: str, writes: list[tuple[bytes, bytes | None]]) -> None:
    # batches stay well under the topics' small segment.bytes (a batch larger than a segment is
    # refused with RECORD_LIST_TOO_LARGE, as Kafka does)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "batch.size": 1000})
    errors = []
    for i, (k, v) in enumerate(writes):
        p.produce(topic, key=k, value=v, on_delivery=lambda e, m: e is not None and errors.append(e))
        if i % 50 == 49:
            p.flush(TIMEOUT)
    assert p.flush(TIMEOUT) == 0
    assert errors == []


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """Everything from offset 0 to the end, as a consumer sees it."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g"), "enable.partition.eof": True,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    raise AssertionError("no end of partition in time")


def view(records: list[tuple[int, bytes, bytes | None]]) -> dict[bytes, bytes | None]:
    """The table a consumer builds by reading in order (tombstones delete)."""
    table: dict[bytes, bytes | None] = {}
    for _, k, v in records:
        if v is None:
            table.pop(k, None)
        else:
            table[k] = v
    return table


def expected(writes: list[tuple[bytes, bytes | None]]) -> tuple[dict[bytes, bytes], dict[bytes, int]]:
    table: dict[bytes, bytes | None] = {}
    last: dict[bytes, int] = {}
    for off, (k, v) in enumerate(writes):
        table[k] = v
        last[k] = off
    return {k: v for k, v in table.items() if v is not None}, last


def test_compacted_topic_keeps_latest_per_key_with_offsets(tmp_path):
    rnd = random.Random(7)
    keys = [b"key-%02d" % i for i in range(20)]
    writes = [(rnd.choice(keys), b"value-%04d" % i) for i in range(600)]
    writes += [(k, None) for k in keys[:5]]  # tombstones
    writes += [(b"tail-%d" % i, b"x" * 100) for i in range(30)]  # roll past the tombstones
    table, last = expected(writes)
    with BrokerThread(tmp_path / "data", overrides=FAST_CLEANER) as b:
        t = unique("compact")
        create_topic(b, t, configs=COMPACT)
        produce(b.bootstrap, t, writes)
        log_end = len(writes)

        def settled() -> bool:
            recs = stored_records(b, t)
            below_active = [r for r in recs if r.offset < b.call(lambda br: br.get_log(t, 0).active_segment.base_offset)]
            return (len({r.key for r in below_active}) == len(below_active)
                    and not any(r.value is None for r in below_active))
        wait_until(settled, what="the cleaner to compact the topic and drop expired tombstones")
        recs = consume_all(b.bootstrap, t)
        assert view(recs) == table  # a consumer reading from 0 sees the same table
        active = b.call(lambda br: br.get_log(t, 0).active_segment.base_offset)
        cleaned = [(off, k) for off, k, _ in recs if off < active]
        # one record per live key, at the offset of its last write
        assert all(last[k] == off for off, k in cleaned)
        assert offsets(b, t)[1] == log_end and recs[-1][0] == log_end - 1
        assert len(recs) < len(writes) / 5
        assert b.call(lambda br: br.log_manager.cleaner_checkpoints[(t, 0)]) > 0
    # the cleaned log reopens as it was
    with BrokerThread(tmp_path / "data", overrides=FAST_CLEANER) as b:
        assert view(consume_all(b.bootstrap, t)) == table
        ckpt = (tmp_path / "data" / "cleaner-offset-checkpoint").read_text().split("\n")
        assert any(line.startswith(f"{t} 0 ") for line in ckpt)


def test_keyless_records_refused_on_compacted_topics(tmp_path):
    with BrokerThread(tmp_path / "data", overrides=FAST_CLEANER) as b:
        t = unique("nokey")
        create_topic(b, t, configs={"cleanup.policy": "compact,delete"})
        errors = []
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "retries": 0})
        p.produce(t, value=b"no key", on_delivery=lambda e, m: errors.append(e))
        p.flush(TIMEOUT)  # alone in its batch: Kafka refuses the whole batch
        p.produce(t, key=b"k", value=b"keyed", on_delivery=lambda e, m: errors.append(e))
        p.flush(TIMEOUT)
        assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
        assert errors[1] is None
        assert [r.key for r in stored_records(b, t)] == [b"k"]


def test_consumer_offsets_is_compacted(tmp_path):
    overrides = {**FAST_CLEANER, "offsets.topic.num.partitions": 1, "offsets.topic.segment.bytes": 2000,
                 "log.cleaner.min.cleanable.ratio": 0.01}
    group = "compacted-group"
    with BrokerThread(tmp_path / "data", overrides=overrides) as b:
        t = unique("src")
        create_topic(b, t, partitions=2)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            for i in range(150):
                c.commit(offsets=[TopicPartition(t, 0, i), TopicPartition(t, 1, 1000 + i)], asynchronous=False)
        finally:
            c.close()

        def live_commits() -> int:
            return len([r for r in stored_records(b, "__consumer_offsets") if r.value is not None])

        def compacted() -> bool:
            # The cleaner may first run while most commits are still in the active segment; wait
            # for the passes after it rather than for the first one (300 commits were written).
            cleaned = b.call(lambda br: ("__consumer_offsets", 0) in br.log_manager.cleaner_checkpoints)
            return cleaned and live_commits() < 100
        wait_until(compacted, what="__consumer_offsets to be cleaned down to fewer than 100 live commits")
        assert live_commits() < 100
    with BrokerThread(tmp_path / "data", overrides=overrides) as b:
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
        try:
            got = c.committed([TopicPartition(t, 0), TopicPartition(t, 1)], timeout=TIMEOUT)
        finally:
            c.close()
        assert [tp.offset for tp in got] == [149, 1149]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_during_cleaning_recovers_a_consistent_log(kafka_broker_process, seed):
    """kill -9 at a random moment while the cleaner keeps rewriting the log: after the restart a
    consumer from 0 sees every acknowledged write's latest value (the old or the new segment set,
    never a mix that loses or resurrects a value)."""
    rnd = random.Random(seed)
    bp = kafka_broker_process(overrides={**FAST_CLEANER, "log.cleaner.backoff.ms": 10})
    bp.start()
    t = "kill-compact"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bp.bootstrap})
    admin.create_topics([NewTopic(t, 1, 1, config={**COMPACT, "delete.retention.ms": "86400000"})])[t].result(TIMEOUT)
    keys = [b"k%02d" % i for i in range(15)]
    writes = [(rnd.choice(keys), b"v%05d" % i + b"." * rnd.randint(0, 80)) for i in range(1500)]
    produce(bp.bootstrap, t, writes[:1000])
    time.sleep(rnd.uniform(0.0, 0.4))
    produce(bp.bootstrap, t, writes[1000:])
    time.sleep(rnd.uniform(0.0, 0.3))
    bp.kill()
    bp.start()
    table, _ = expected(writes)
    assert view(consume_all(bp.bootstrap, t)) == table
    bp.stop()


def test_dump_before_and_after(tmp_path, capsys):
    """What a compacted partition looks like on disk before and after cleaning (DumpLogSegments style)."""
    with BrokerThread(tmp_path / "data", overrides={**FAST_CLEANER, "log.cleaner.enable": False}) as b:
        t = "dumped"
        create_topic(b, t, configs={**COMPACT, "segment.bytes": "100000"})
        produce(b.bootstrap, t, [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", None), (b"a", b"3")])
        lg = b.call(lambda br: br.get_log(t, 0))
        b.call(lambda br: lg.roll())
        seg0 = tmp_path / "data" / f"{t}-0" / "00000000000000000000.log"
        before = "\n".join(dump(seg0.read_bytes(), records=True, payload=True))
        from minibroker_storage.cleaner import clean, log_to_clean, swap_in

        def run(br):
            now_ms = br.clock
            result = clean(lg, log_to_clean(lg, None, now_ms()), now_ms(), now_ms)
            assert swap_in(result)
        b.call(run)
        after = "\n".join(dump(seg0.read_bytes(), records=True, payload=True))
    print("--- before\n" + before + "\n--- after\n" + after)
    assert before.count("| offset:") == 6 and after.count("| offset:") == 3
    assert "key: a payload: 3" in after and "key: b payload: null" in after  # b's tombstone is kept for now
    assert "key: a payload: 1" not in after
