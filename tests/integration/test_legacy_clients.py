"""Old clients and old formats (issue 7): kafka-python pinned to api_version (0, 8, 2), (0, 9) and
(0, 10, 1) against modern confluent-kafka, on topics stored as magic 2 (default), 0 and 1.

What each pin speaks (checked from kafka-python's DEBUG log of the requests it sent):
  (0, 8, 2): Produce v0 / Fetch v0 (magic 0), ListOffsets v0, OffsetCommit v1, OffsetFetch v1, no groups;
  (0, 9):    Produce v1 / Fetch v1 (magic 0), JoinGroup v0, OffsetCommit v2;
  (0, 10, 1): Produce v2 / Fetch v3 (magic 1), ListOffsets v1, JoinGroup v1.
kafka-python 3.x producers are created with enable_idempotence=False (idempotence needs magic 2
and InitProducerId, another issue).
"""

from __future__ import annotations

import gzip
import logging
import re
import struct
import zlib

import pytest
from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from minibroker_protocol.records import legacy
from minibroker_protocol.records.batch import iter_batches
from tests.integration.helpers import (
    TIMEOUT,
    Deadline,
    confluent_consume,
    create_topic,
    module_broker,
    unique,
)

APIS = [(0, 8, 2), (0, 9), (0, 10, 1)]
API_IDS = ["0.8.2", "0.9", "0.10.1"]
CODECS = [None, "gzip"]
# message.format.version -> magic on disk; None = the default (3.0-IV1: RecordBatch v2)
FORMATS = {None: 2, "0.8.2": 0, "0.10.0": 1}
N = 6


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


class RequestLog(logging.Handler):
    """(request name, version) of every request kafka-python logs at DEBUG."""

    PATTERN = re.compile(r"(\w+Request)\(version=(\d+)")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: set[tuple[str, int]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        for m in self.PATTERN.finditer(record.getMessage()):
            self.seen.add((m.group(1), int(m.group(2))))

    def versions(self, name: str) -> set[int]:
        return {v for n, v in self.seen if n == name}


@pytest.fixture
def request_log():
    handler = RequestLog()
    logger = logging.getLogger("kafka")
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


def topic_with(mb, fmt: str | None, prefix: str = "legacy") -> str:
    name = unique(prefix)
    create_topic(mb, name, 1, {"message.format.version": fmt} if fmt else None)
    return name


def segment_data(mb, topic: str) -> bytes:
    """The bytes of the partition's segments, as a learner would open the .log file."""

    def read(broker):
        lg = broker.get_log(topic, 0)
        lg.flush()
        return b"".join(seg.log.path.read_bytes() for seg in lg.segments.values())

    return mb.call(read)


def old_producer(mb, api, codec=None) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=mb.bootstrap, api_version=api, compression_type=codec,
                         enable_idempotence=False, linger_ms=50, request_timeout_ms=int(TIMEOUT * 1000))


def old_consume(mb, api, topic: str, n: int, *, group: str | None = None) -> list:
    pin = {} if api is None else {"api_version": api}
    consumer = KafkaConsumer(bootstrap_servers=mb.bootstrap, auto_offset_reset="earliest",
                             group_id=group, enable_auto_commit=False, consumer_timeout_ms=1000, **pin)
    try:
        if group is None or (api is not None and api < (0, 9)):
            consumer.assign([TopicPartition(topic, 0)])
        else:
            consumer.subscribe([topic])
        got: list = []
        d = Deadline()
        while len(got) < n and d:
            got.extend(consumer)
        assert len(got) == n, f"read {len(got)} of {n}"
        return got
    finally:
        consumer.close()


def confluent_consumer(mb, group: str, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": mb.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **conf})


def expected(i: int) -> tuple[bytes, bytes]:
    return b"key-%d" % i, b"value-%d" % i


def stored_magics(mb, topic: str) -> set[int]:
    return {v.magic for v in iter_batches(segment_data(mb, topic))}


# --------------------------------------------------------------------- old producer -> modern consumer


@pytest.mark.parametrize("fmt", list(FORMATS), ids=["v2-default", "format-0.8.2", "format-0.10.0"])
@pytest.mark.parametrize("codec", CODECS, ids=["plain", "gzip"])
@pytest.mark.parametrize("api", APIS, ids=API_IDS)
def test_old_producer_modern_consumer(kafka_broker_module, api, codec, fmt):
    topic = topic_with(kafka_broker_module, fmt)
    p = old_producer(kafka_broker_module, api, codec)
    futures = [p.send(topic, key=k, value=v) for k, v in map(expected, range(N))]
    p.flush(TIMEOUT)
    assert [f.get(TIMEOUT).offset for f in futures] == list(range(N))
    p.close()
    assert stored_magics(kafka_broker_module, topic) == {FORMATS[fmt]}
    c = confluent_consumer(kafka_broker_module, unique("g"))
    c.assign([CTopicPartition(topic, 0, 0)])
    try:
        msgs = confluent_consume(c, N)
    finally:
        c.close()
    assert [(m.offset(), m.key(), m.value()) for m in msgs] == [(i, *expected(i)) for i in range(N)]
    if FORMATS[fmt] == 0:
        assert {m.timestamp()[0] for m in msgs} == {TIMESTAMP_NOT_AVAILABLE}  # magic 0 has no timestamp field
    elif api < (0, 10):
        assert {m.timestamp()[1] for m in msgs} == {-1}  # v0 messages converted up: no timestamp (-1)
    else:
        assert all(m.timestamp()[1] > 0 for m in msgs)


# --------------------------------------------------------------------- modern producer -> old consumer


@pytest.mark.parametrize("fmt", list(FORMATS), ids=["v2-default", "format-0.8.2", "format-0.10.0"])
@pytest.mark.parametrize("codec", CODECS, ids=["plain", "gzip"])
@pytest.mark.parametrize("api", APIS, ids=API_IDS)
def test_modern_producer_old_consumer(kafka_broker_module, api, codec, fmt):
    topic = topic_with(kafka_broker_module, fmt)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "compression.type": codec or "none", "linger.ms": 20,
                  "enable.idempotence": False})
    for k, v in map(expected, range(N)):
        p.produce(topic, key=k, value=v, timestamp=1_700_000_000_000)
    assert p.flush(TIMEOUT) == 0
    assert stored_magics(kafka_broker_module, topic) == {FORMATS[fmt]}
    got = old_consume(kafka_broker_module, api, topic, N)
    assert [(m.offset, m.key, m.value) for m in got] == [(i, *expected(i)) for i in range(N)]
    reader_magic = 1 if api >= (0, 10) else 0
    if min(reader_magic, FORMATS[fmt]) == 0:
        assert {m.timestamp for m in got} in ({None}, {-1})
    else:
        assert {m.timestamp for m in got} == {1_700_000_000_000}


def test_fetch_from_the_middle_of_a_batch_down_converts_only_the_rest(kafka_broker_module):
    topic = topic_with(kafka_broker_module, None)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "linger.ms": 50, "enable.idempotence": False})
    for k, v in map(expected, range(N)):
        p.produce(topic, key=k, value=v)
    assert p.flush(TIMEOUT) == 0
    assert len(list(iter_batches(segment_data(kafka_broker_module, topic)))) == 1  # one v2 batch of N records
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker_module.bootstrap, api_version=(0, 9), consumer_timeout_ms=1000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 4)
        got = []
        d = Deadline()
        while len(got) < N - 4 and d:
            got.extend(consumer)
    finally:
        consumer.close()
    assert [m.offset for m in got] == [4, 5]


# --------------------------------------------------------------------- old group APIs


@pytest.mark.parametrize("api", APIS, ids=API_IDS)
def test_committed_offsets_with_old_group_apis(kafka_broker_module, api, request_log):
    topic = topic_with(kafka_broker_module, None)
    group = unique("old-group")
    p = old_producer(kafka_broker_module, api)
    for k, v in map(expected, range(N)):
        p.send(topic, key=k, value=v)
    p.flush(TIMEOUT)
    p.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker_module.bootstrap, api_version=api, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=1000)
    tp = TopicPartition(topic, 0)
    try:
        if api < (0, 9):
            consumer.assign([tp])  # 0.8.2 has offset storage but no group membership
        else:
            consumer.subscribe([topic])
        got = []
        d = Deadline()
        while len(got) < 4 and d:
            got.extend(consumer)
        consumer.commit({tp: OffsetAndMetadata(4, "old", -1)})
        assert consumer.committed(tp) == 4
    finally:
        consumer.close()
    assert kafka_broker_module.committed(group, topic) == 4
    # a modern consumer of the same group starts where the old one committed
    c = confluent_consumer(kafka_broker_module, group)
    try:
        assert c.committed([CTopicPartition(topic, 0)], timeout=TIMEOUT)[0].offset == 4
        c.assign([CTopicPartition(topic, 0)])
        assert [m.offset() for m in confluent_consume(c, N - 4)] == [4, 5]
    finally:
        c.close()
    # the requests the pin really sent
    if api == (0, 8, 2):
        assert request_log.versions("ProduceRequest") == {0}
        assert request_log.versions("FetchRequest") == {0}
        assert request_log.versions("ListOffsetsRequest") == {0}
        assert request_log.versions("OffsetCommitRequest") == {1}
        assert request_log.versions("OffsetFetchRequest") == {1}
        assert not request_log.versions("JoinGroupRequest")
    elif api == (0, 9):
        assert request_log.versions("ProduceRequest") == {1}
        assert request_log.versions("FetchRequest") == {1}
        assert request_log.versions("ListOffsetsRequest") == {0}
        assert request_log.versions("JoinGroupRequest") == {0}
        assert request_log.versions("OffsetCommitRequest") == {2}
        assert request_log.versions("OffsetFetchRequest") == {1}
    else:
        assert request_log.versions("ProduceRequest") == {2}
        assert request_log.versions("FetchRequest") == {3}
        assert request_log.versions("ListOffsetsRequest") == {1}
        assert request_log.versions("JoinGroupRequest") == {1}


# --------------------------------------------------------------------- the seeds' bytes on disk


def test_v1_topic_segment_is_the_seed_001_layout(kafka_broker_module):
    """kafka-python (0, 10, 1) writes key="key" value="value" to a 0.10.0 topic: the .log file holds
    exactly the 42-byte v1 message of seed 002, field by field as seed 001 lays it out."""
    topic = topic_with(kafka_broker_module, "0.10.0")
    p = old_producer(kafka_broker_module, (0, 10, 1))
    ts = p.send(topic, key=b"key", value=b"value", timestamp_ms=1_700_000_000_123).get(TIMEOUT).timestamp
    p.close()
    data = segment_data(kafka_broker_module, topic)
    assert len(data) == 42
    offset, size, crc, magic, attrs, stamp, klen = struct.unpack_from(">qiIbbqi", data)
    assert (offset, size, magic, attrs, stamp, klen) == (0, 30, 1, 0, 1_700_000_000_123, 3)
    assert ts == 1_700_000_000_123
    assert crc == zlib.crc32(data[16:])
    assert data[30:33] == b"key" and struct.unpack_from(">i", data, 33)[0] == 5 and data[37:] == b"value"


def test_v1_topic_holds_a_compressed_wrapper_with_relative_inner_offsets(kafka_broker_module):
    topic = topic_with(kafka_broker_module, "0.10.0")
    p = old_producer(kafka_broker_module, (0, 10, 1))
    p.send(topic, value=b"first").get(TIMEOUT)
    p.close()
    p = old_producer(kafka_broker_module, (0, 10, 1), "gzip")
    for i in range(3):
        p.send(topic, value=b"v%d" % i)
    p.flush(TIMEOUT)
    p.close()
    shallow = list(legacy.iter_shallow(segment_data(kafka_broker_module, topic)))
    assert [(m.offset, m.magic, m.attributes & 7) for m in shallow] == [(0, 1, 0), (3, 1, 1)]
    wrapper = shallow[1]
    assert wrapper.key is None
    assert [m.offset for m in legacy.iter_shallow(gzip.decompress(wrapper.value))] == [0, 1, 2]
    assert [(m.offset, m.value) for m in legacy.inner_records(wrapper)] == [(1, b"v0"), (2, b"v1"), (3, b"v2")]


def test_v0_topic_segment_has_26_byte_headers(kafka_broker_module):
    topic = topic_with(kafka_broker_module, "0.8.2")
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "enable.idempotence": False})
    p.produce(topic, key=b"key", value=b"value")
    assert p.flush(TIMEOUT) == 0
    data = segment_data(kafka_broker_module, topic)
    assert len(data) == 26 + 3 + 5  # a v2 batch from librdkafka, down-converted on append
    offset, size, crc, magic, attrs, klen = struct.unpack_from(">qiIbbi", data)
    assert (offset, size, magic, attrs, klen) == (0, 22, 0, 0, 3)
    assert crc == zlib.crc32(data[16:])


def test_modern_consumer_reads_magic_0_and_1_topics_at_new_fetch_versions(kafka_broker_module):
    """Fetch v4+ returns the stored message sets as they are (zero-copy); librdkafka reads them."""
    for fmt in ("0.8.2", "0.10.0"):
        topic = topic_with(kafka_broker_module, fmt)
        p = old_producer(kafka_broker_module, (0, 10, 1), "gzip")
        for k, v in map(expected, range(N)):
            p.send(topic, key=k, value=v)
        p.flush(TIMEOUT)
        p.close()
        c = confluent_consumer(kafka_broker_module, unique("g"), **{"api.version.request": True})
        c.assign([CTopicPartition(topic, 0, 2)])
        try:
            msgs = confluent_consume(c, N - 2)
        finally:
            c.close()
        assert [(m.offset(), m.value()) for m in msgs] == [(i, expected(i)[1]) for i in range(2, N)]


# --------------------------------------------------------------------- modern clients stay modern


def test_advertising_v0_does_not_pull_modern_clients_down(kafka_broker_module, request_log):
    """Produce/Fetch/ListOffsets now start at v0 in ApiVersions; unpinned clients must still pick
    their newest versions (flexible ones), not the seeds'."""
    topic = topic_with(kafka_broker_module, None)
    p = KafkaProducer(bootstrap_servers=kafka_broker_module.bootstrap, enable_idempotence=False)
    p.send(topic, b"x").get(TIMEOUT)
    p.close()
    old_consume(kafka_broker_module, None, topic, 1)
    assert min(request_log.versions("ProduceRequest")) >= 9
    assert min(request_log.versions("FetchRequest")) >= 12
    assert min(request_log.versions("ListOffsetsRequest")) >= 6
    sent: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            sent.append(record.getMessage())

    rdk = logging.getLogger(unique("rdkafka"))
    rdk.addHandler(Lines())
    rdk.setLevel(logging.DEBUG)
    conf = {"bootstrap.servers": kafka_broker_module.bootstrap, "debug": "protocol", "logger": rdk}
    cp = Producer({**conf, "enable.idempotence": False})
    cp.produce(topic, b"y")
    assert cp.flush(TIMEOUT) == 0
    c = Consumer({**conf, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    c.assign([CTopicPartition(topic, 0, 0)])
    try:
        confluent_consume(c, 2)
    finally:
        c.close()
    versions: dict[str, set[int]] = {}
    for line in sent:
        for name, v in re.findall(r"Sent (\w+)Request \(v(\d+)", line):
            versions.setdefault(name, set()).add(int(v))
    assert min(versions["Produce"]) >= 9 and min(versions["Fetch"]) >= 12, versions


def test_stored_format_survives_a_restart_and_follows_alter_configs(tmp_path):
    """message.format.version is a topic override like any other: kept across a restart (the log
    and the produce path both read it back), and an AlterConfigs applies to the next append."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    from minibroker.testing import BrokerThread
    from tests.helpers import TEST_OVERRIDES

    data = tmp_path / "data"
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        topic = topic_with(b, "0.10.0")
        p = old_producer(b, (0, 10, 1))
        p.send(topic, value=b"before").get(TIMEOUT)
        p.close()
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        cp = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": False})
        cp.produce(topic, value=b"after restart")
        assert cp.flush(TIMEOUT) == 0
        assert [v.magic for v in iter_batches(segment_data(b, topic))] == [1, 1]
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"message.format.version": "0.8.2"})
        for f in admin.alter_configs([res]).values():
            f.result(TIMEOUT)
        cp.produce(topic, value=b"as v0")
        assert cp.flush(TIMEOUT) == 0
        assert [v.magic for v in iter_batches(segment_data(b, topic))] == [1, 1, 0]
        # Fetch v1: as in Kafka, down-conversion follows the topic's current format (magic 0 now),
        # so the two older v1 entries go out as stored; kafka-python reads either magic
        got = old_consume(b, (0, 9), topic, 3)
        assert [(m.offset, m.value) for m in got] == [(0, b"before"), (1, b"after restart"), (2, b"as v0")]


@pytest.mark.parametrize("codec", ["snappy", "lz4"])
@pytest.mark.parametrize("api", [(0, 9), (0, 10, 1)], ids=["0.9", "0.10.1"])
def test_old_producer_snappy_and_lz4_on_a_v1_topic(kafka_broker_module, api, codec):
    """kafka-python at (0, 9) writes magic 0, whose lz4 frames carry the old header checksum
    (KAFKA-3160); the v1 topic stores them rewritten as magic 1 with a correct frame; librdkafka
    and an old reader both get the records back."""
    topic = topic_with(kafka_broker_module, "0.10.0")
    p = old_producer(kafka_broker_module, api, codec)
    for k, v in map(expected, range(N)):
        p.send(topic, key=k, value=v)
    p.flush(TIMEOUT)
    p.close()
    shallow = list(legacy.iter_shallow(segment_data(kafka_broker_module, topic)))
    assert {(m.magic, m.attributes & 7) for m in shallow} == {(1, {"snappy": 2, "lz4": 3}[codec])}
    c = confluent_consumer(kafka_broker_module, unique("g"))
    c.assign([CTopicPartition(topic, 0, 0)])
    try:
        assert [(m.offset(), m.value()) for m in confluent_consume(c, N)] == [(i, expected(i)[1]) for i in range(N)]
    finally:
        c.close()
    assert [m.value for m in old_consume(kafka_broker_module, (0, 9), topic, N)] == [expected(i)[1] for i in range(N)]
