"""More of Produce / Fetch / ListOffsets through real clients and the wire: pipelining, fetch size
limits (KIP-74), topic ids, timestamps the topic overrides or refuses, recompression, a bulk
transfer through sendfile, and clients that go away in the middle of a long poll."""

from __future__ import annotations

import hashlib
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from minibroker_protocol.apis import fetch, list_offsets, produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import decode_batches
from tests.integration.helpers import (
    CODEC_IDS,
    TIMEOUT,
    RawClient,
    confluent_consume,
    create_topic,
    module_broker,
    offsets,
    records_batch,
    stored_batches,
    stored_records,
    unique,
    wait_until,
)

PRODUCE_V = 9


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def produce_req(parts: list[tuple[str, int, bytes]], acks: int = -1) -> object:
    R = produce.REQUEST
    by_topic: dict[str, list] = {}
    for topic, partition, records in parts:
        by_topic.setdefault(topic, []).append(R.PartitionProduceData(index=partition, records=records))
    return R(transactional_id=None, acks=acks, timeout_ms=5_000,
             topic_data=[R.TopicProduceData(name=t, partition_data=p) for t, p in by_topic.items()])


def fetch_req(parts: list[tuple[str | uuid.UUID, int, int, int]], *, max_bytes: int = 1 << 20,
              max_wait_ms: int = 0) -> object:
    """parts: (topic name or id, partition, fetch offset, partition max bytes)."""
    R = fetch.REQUEST
    topics = []
    for t, p, off, pmax in parts:
        key = {"topic_id": t} if isinstance(t, uuid.UUID) else {"topic": t}
        topics.append(R.FetchTopic(**key, partitions=[R.FetchPartition(partition=p, fetch_offset=off,
                                                                       partition_max_bytes=pmax)]))
    return R(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, isolation_level=0, session_id=0,
             session_epoch=-1, topics=topics, forgotten_topics_data=[], rack_id="")


def partitions_of(resp) -> list:
    return [pd for t in resp.responses for pd in t.partitions]


def test_pipelined_requests_are_answered_in_order(kafka_broker_module):
    """Clients pipeline (max.in.flight); responses must come back in request order."""
    topic = unique("pipe")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        cids = [raw.send(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"%d" % i]))]))
                for i in range(100)]
        got = []
        for _ in cids:
            cid, resp = raw.recv(produce.API, PRODUCE_V)
            [pr] = resp.responses[0].partition_responses
            got.append((cid, pr.error_code, pr.base_offset))
    assert got == [(cid, 0, i) for i, cid in enumerate(cids)]
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"%d" % i for i in range(100)]


def test_one_request_many_topics_and_partitions_with_per_partition_errors(kafka_broker_module):
    a, b_ = unique("multi-a"), unique("multi-b")
    create_topic(kafka_broker_module, a, 2)
    create_topic(kafka_broker_module, b_, 1)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(produce.API, PRODUCE_V, produce_req([
            (a, 0, records_batch([b"a0"])), (a, 1, records_batch([b"a1", b"a1'"])), (a, 5, records_batch([b"x"])),
            (b_, 0, records_batch([b"b0"])), (unique("nope"), 0, records_batch([b"y"])),
        ]))
    got = {(t.name, p.index): (p.error_code, p.base_offset) for t in resp.responses for p in t.partition_responses}
    U = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert {k: v for k, v in got.items() if not k[0].startswith("nope")} == {
        (a, 0): (0, 0), (a, 1): (0, 0), (a, 5): (U, -1), (b_, 0): (0, 0)}
    assert [v for k, v in got.items() if k[0].startswith("nope")] == [(U, -1)]
    assert [r.value for r in stored_records(kafka_broker_module, a, 1)] == [b"a1", b"a1'"]


def test_fetch_returns_at_least_one_batch_above_the_limits(kafka_broker_module):
    """KIP-74: the first partition with data gets one whole batch even when it is larger than
    partition_max_bytes and max_bytes; later partitions get nothing past the request's limit."""
    topic = unique("kip74")
    create_topic(kafka_broker_module, topic, 2)
    big = [bytes(1000)] * 5
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch(big)), (topic, 1, records_batch(big))]))
        raw.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"second"]))]))
        resp = raw.call(fetch.API, 12, fetch_req([(topic, 0, 0, 10), (topic, 1, 0, 10)], max_bytes=100))
    p0, p1 = partitions_of(resp)
    [batch] = decode_batches(bytes(p0.records))  # exactly the first batch, not the second
    assert (batch.base_offset, batch.records_count, p0.high_watermark) == (0, 5, 6)
    assert (p1.error_code, bytes(p1.records), p1.high_watermark) == (0, b"", 5)


def test_fetch_by_topic_id(kafka_broker_module):
    topic = unique("by-id")
    create_topic(kafka_broker_module, topic)
    tid = kafka_broker_module.call(lambda broker: broker.topics[topic].topic_id)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"x", b"y"]))]))
        for v in (13, 16, 17):
            resp = raw.call(fetch.API, v, fetch_req([(tid, 0, 0, 1 << 20), (uuid.uuid4(), 0, 0, 1 << 20)]))
            by_id = {t.topic_id: t.partitions[0] for t in resp.responses}
            assert [r.value for bt in decode_batches(bytes(by_id[tid].records)) for r in bt.records] == [b"x", b"y"]
            [unknown] = [pd for t_id, pd in by_id.items() if t_id != tid]
            assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_list_offsets_on_an_empty_and_an_unknown_partition(kafka_broker_module):
    topic = unique("lo-empty")
    create_topic(kafka_broker_module, topic)
    R = list_offsets.REQUEST
    parts = [R.ListOffsetsPartition(partition_index=0, timestamp=ts) for ts in (-2, -1, -3, 1000)]
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(list_offsets.API, 8, R(replica_id=-1, isolation_level=0, topics=[
            R.ListOffsetsTopic(name=topic, partitions=parts),
            R.ListOffsetsTopic(name=topic + "-missing", partitions=[R.ListOffsetsPartition(partition_index=0,
                                                                                        timestamp=-1)])]))
    found, missing = resp.topics
    assert [(p.error_code, p.offset, p.timestamp) for p in found.partitions] == [
        (0, 0, -1), (0, 0, -1), (0, -1, -1), (0, -1, -1)]
    assert missing.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_log_append_time_topic(kafka_broker_module):
    topic = unique("lat")
    create_topic(kafka_broker_module, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap})
    reports: list = []
    before = int(time.time() * 1000)
    p.produce(topic, value=b"x", timestamp=1234, on_delivery=lambda err, msg: reports.append((err, msg.timestamp())))
    assert p.flush(TIMEOUT) == 0
    after = int(time.time() * 1000)
    [(err, (kind, ts))] = reports
    assert err is None
    assert kind == 2 and before <= ts <= after  # TIMESTAMP_LOG_APPEND_TIME, from the produce response
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        [msg] = confluent_consume(c, 1)
    finally:
        c.close()
    assert msg.timestamp() == (2, ts)
    [batch] = stored_batches(kafka_broker_module, topic)
    assert batch.timestamp_type == 1 and batch.max_timestamp == ts


def test_timestamp_outside_the_allowed_window_is_refused(kafka_broker_module):
    topic = unique("ts-window")
    create_topic(kafka_broker_module, topic, 1, {"message.timestamp.before.max.ms": "3600000",
                                "message.timestamp.after.max.ms": "3600000"})
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "message.send.max.retries": 0})
    reports: list = []
    now = int(time.time() * 1000)
    for ts in (1000, now + 7_200_000, now):
        p.produce(topic, value=b"%d" % ts, timestamp=ts, on_delivery=lambda err, msg: reports.append(err))
        p.flush(TIMEOUT)
    assert [e.code() if e else None for e in reports] == [KafkaError.INVALID_TIMESTAMP] * 2 + [None]
    assert offsets(kafka_broker_module, topic) == (0, 1)


@pytest.mark.parametrize("topic_codec, producer_codec", [("gzip", "lz4"), ("zstd", "none"), ("uncompressed", "snappy")])
def test_topic_compression_type_recompresses(kafka_broker_module, topic_codec, producer_codec):
    topic = unique(f"recomp-{topic_codec}")
    create_topic(kafka_broker_module, topic, 1, {"compression.type": topic_codec})
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "compression.type": producer_codec, "linger.ms": 20})
    values = [b"value %d %s" % (i, b"x" * 100) for i in range(20)]
    for i, v in enumerate(values):
        p.produce(topic, key=b"k%d" % i, value=v, headers=[("i", b"%d" % i)], timestamp=1000 + i)
    assert p.flush(TIMEOUT) == 0
    want = 0 if topic_codec == "uncompressed" else CODEC_IDS[topic_codec]
    assert {bt.compression for bt in stored_batches(kafka_broker_module, topic)} == {want}
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        msgs = confluent_consume(c, 20)
    finally:
        c.close()
    assert [(m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in msgs] == [
        (i, b"k%d" % i, v, [("i", b"%d" % i)], 1000 + i) for i, v in enumerate(values)]


def test_acks_0_through_a_client(kafka_broker_module):
    topic = unique("acks0-client")
    create_topic(kafka_broker_module, topic)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "acks": 0, "linger.ms": 5})
    reports: list = []
    for i in range(50):
        p.produce(topic, value=b"%d" % i, on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert p.flush(TIMEOUT) == 0
    assert [err for err, _ in reports] == [None] * 50
    assert {off for _, off in reports} <= {None, -1001}  # no response, so no offsets
    wait_until(lambda: offsets(kafka_broker_module, topic) == (0, 50), what="50 acks=0 records")
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"%d" % i for i in range(50)]


def test_bulk_transfer_through_sendfile(kafka_broker_module):
    """20 MB in 4 partitions, consumed by one consumer with small fetch sizes and default ones."""
    topic = unique("bulk")
    create_topic(kafka_broker_module, topic, 4)
    n, size = 5_000, 4_096
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "linger.ms": 20, "queue.buffering.max.messages": 100_000,
                  "batch.size": 1 << 20})
    for i in range(n):
        p.produce(topic, key=b"%d" % i, value=hashlib.sha256(b"%d" % i).digest() * (size // 32), partition=i % 4)
        if i % 1000 == 999:
            p.poll(0)
    assert p.flush(60) == 0
    for conf in ({"fetch.max.bytes": 100_000, "message.max.bytes": 50_000,
                 "max.partition.fetch.bytes": 20_000}, {}):
        c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "enable.auto.commit": False,
                      **conf})
        try:
            c.assign([TopicPartition(topic, q, 0) for q in range(4)])
            msgs = confluent_consume(c, n, timeout=90)
        finally:
            c.close()
        seen = {}
        for m in msgs:
            i = int(m.key())
            assert m.value() == hashlib.sha256(b"%d" % i).digest() * (size // 32)
            assert (m.partition(), m.offset()) == (i % 4, i // 4)
            seen[i] = True
        assert len(seen) == n


def test_client_gone_during_a_long_poll(kafka_broker_module):
    """A client that disconnects while its fetch waits leaves no waiter behind."""
    topic = unique("gone")
    create_topic(kafka_broker_module, topic)
    for _ in range(5):
        raw = RawClient(kafka_broker_module.bootstrap)
        raw.send(fetch.API, 12, fetch_req([(topic, 0, 0, 1 << 20)], max_wait_ms=10_000))
        time.sleep(0.05)
        raw.close()
    wait_until(lambda: kafka_broker_module.call(lambda broker: len(broker.replica_manager.fetch_waiters) == 0), timeout=5,
               what="the fetch waiters of closed connections to go")
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"after"]))]))
        resp = raw.call(fetch.API, 12, fetch_req([(topic, 0, 0, 1 << 20)]))
    [pd] = partitions_of(resp)
    assert [r.value for bt in decode_batches(bytes(pd.records)) for r in bt.records] == [b"after"]


def test_two_long_polls_on_one_partition_both_wake(kafka_broker_module):
    topic = unique("two-polls")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as r1, RawClient(kafka_broker_module.bootstrap) as r2, RawClient(kafka_broker_module.bootstrap) as w:
        t0 = time.monotonic()
        for r in (r1, r2):
            r.send(fetch.API, 12, fetch_req([(topic, 0, 0, 1 << 20)], max_wait_ms=5_000))
        time.sleep(0.2)
        w.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"both"]))]))
        for r in (r1, r2):
            _, resp = r.recv(fetch.API, 12)
            [pd] = partitions_of(resp)
            assert [x.value for bt in decode_batches(bytes(pd.records)) for x in bt.records] == [b"both"]
        assert time.monotonic() - t0 < 2.0


def test_delete_topic_wakes_its_long_polls(kafka_broker_module):
    topic = unique("del-poll")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        t0 = time.monotonic()
        raw.send(fetch.API, 12, fetch_req([(topic, 0, 0, 1 << 20)], max_wait_ms=5_000))
        time.sleep(0.2)
        kafka_broker_module.call(lambda broker: broker.topics.delete(topic))
        _, resp = raw.recv(fetch.API, 12)
    [pd] = partitions_of(resp)
    assert pd.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert time.monotonic() - t0 < 2.0


# -- incremental fetch sessions (KIP-227) -----------------------------------------------------------


def session_fetch(session_id: int, epoch: int, parts: list[tuple[str, int, int]], forgotten=(), max_wait_ms=0):
    R = fetch.REQUEST
    by_topic: dict[str, list] = {}
    for t, p, off in parts:
        by_topic.setdefault(t, []).append(R.FetchPartition(partition=p, fetch_offset=off, partition_max_bytes=1 << 20))
    forgot: dict[str, list[int]] = {}
    for t, p in forgotten:
        forgot.setdefault(t, []).append(p)
    return R(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=session_id,
             session_epoch=epoch, topics=[R.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
             forgotten_topics_data=[R.ForgottenTopic(topic=t, partitions=ps) for t, ps in forgot.items()],
             rack_id="")


def listed(resp) -> dict[tuple[str, int], list[bytes]]:
    return {(t.topic, pd.partition_index): [r.value for bt in decode_batches(bytes(pd.records)) for r in bt.records]
            for t in resp.responses for pd in t.partitions}


def test_incremental_fetch_session(kafka_broker_module):
    topic = unique("session")
    create_topic(kafka_broker_module, topic, 3)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        def put(p: int, v: bytes) -> None:
            raw.call(produce.API, PRODUCE_V, produce_req([(topic, p, records_batch([v]))]))

        put(0, b"a")
        full = raw.call(fetch.API, 12, session_fetch(0, 0, [(topic, p, 0) for p in range(3)]))
        sid = full.session_id
        assert sid != 0 and full.error_code == 0
        assert listed(full) == {(topic, 0): [b"a"], (topic, 1): [], (topic, 2): []}
        # Epoch 1, the client moved partition 0 past "a": nothing changed, nothing listed.
        inc = raw.call(fetch.API, 12, session_fetch(sid, 1, [(topic, 0, 1)]))
        assert (inc.error_code, inc.session_id, listed(inc)) == (0, sid, {})
        # A produce to partition 2 (in the session, not in this request) shows up by itself.
        put(2, b"c")
        inc = raw.call(fetch.API, 12, session_fetch(sid, 2, []))
        assert listed(inc) == {(topic, 2): [b"c"]}
        # Forget partition 2: its new data is no longer listed.
        put(2, b"c2")
        put(1, b"b")
        inc = raw.call(fetch.API, 12, session_fetch(sid, 3, [(topic, 2, 1)], forgotten=[(topic, 2)]))
        assert listed(inc) == {(topic, 1): [b"b"]}
        # A wrong epoch, an unknown session.
        bad = raw.call(fetch.API, 12, session_fetch(sid, 7, []))
        assert (bad.error_code, bad.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, [])
        gone = raw.call(fetch.API, 12, session_fetch(sid + 12345, 1, []))
        assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # Close it (epoch -1): a full fetch, and the session is gone.
        closed = raw.call(fetch.API, 12, session_fetch(sid, -1, [(topic, 1, 0)]))
        assert (closed.error_code, closed.session_id, listed(closed)) == (0, 0, {(topic, 1): [b"b"]})
        after = raw.call(fetch.API, 12, session_fetch(sid, 4, []))
        assert after.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_incremental_fetch_long_polls_until_something_changes(kafka_broker_module):
    topic = unique("session-wait")
    create_topic(kafka_broker_module, topic, 2)
    with RawClient(kafka_broker_module.bootstrap) as raw, RawClient(kafka_broker_module.bootstrap) as writer:
        full = raw.call(fetch.API, 12, session_fetch(0, 0, [(topic, p, 0) for p in range(2)]))
        t0 = time.monotonic()
        idle = raw.call(fetch.API, 12, session_fetch(full.session_id, 1, [], max_wait_ms=500))
        assert listed(idle) == {} and 0.4 <= time.monotonic() - t0 < 2.0
        raw.send(fetch.API, 12, session_fetch(full.session_id, 2, [], max_wait_ms=5_000))
        time.sleep(0.2)
        t0 = time.monotonic()
        writer.call(produce.API, PRODUCE_V, produce_req([(topic, 1, records_batch([b"wake"]))]))
        _, woke = raw.recv(fetch.API, 12)
        assert time.monotonic() - t0 < 1.0
    assert listed(woke) == {(topic, 1): [b"wake"]}


def test_fetch_of_no_partitions_is_answered_at_once(kafka_broker_module):
    # The Java consumer's close() ends its session with a fetch of no partitions (epoch -1): Kafka
    # answers it at once rather than long-polling max_wait_ms (bench/README.md, issue 22).
    topic = unique("session-close")
    create_topic(kafka_broker_module, topic, 1)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        full = raw.call(fetch.API, 12, session_fetch(0, 0, [(topic, 0, 0)]))
        t0 = time.monotonic()
        for req in (session_fetch(full.session_id, -1, [], max_wait_ms=3_000),
                    session_fetch(0, -1, [], max_wait_ms=3_000)):
            resp = raw.call(fetch.API, 12, req)
            assert (resp.error_code, resp.session_id, listed(resp)) == (0, 0, {})
        assert time.monotonic() - t0 < 1.0


@pytest.mark.parametrize("version", range(1, 11))
def test_list_offsets_every_version(kafka_broker_module, version):
    topic = unique(f"lo-v{version}")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        for ts in (1000, 3000, 2000):  # the largest timestamp is not the last record
            raw.call(produce.API, PRODUCE_V, produce_req([(topic, 0, records_batch([b"t%d" % ts], base_timestamp=ts))]))
        R = list_offsets.REQUEST
        queries = [-2, -1, 1500, 2500, 3001] + ([-3] if version >= 7 else [])
        resp = raw.call(list_offsets.API, version, R(replica_id=-1, isolation_level=0, topics=[R.ListOffsetsTopic(
            name=topic, partitions=[R.ListOffsetsPartition(partition_index=0, timestamp=ts) for ts in queries])]))
    got = [(p.error_code, p.offset, p.timestamp) for p in resp.topics[0].partitions]
    # The first offset whose timestamp is >= the target (1500 -> offset 1 at 3000), none after the max.
    want = [(0, 0, -1), (0, 3, -1), (0, 1, 3000), (0, 1, 3000), (0, -1, -1)] + ([(0, 1, 3000)] if version >= 7 else [])
    assert got == want
    if version >= 4:
        assert {p.leader_epoch for p in resp.topics[0].partitions if p.offset >= 0} == {0}
