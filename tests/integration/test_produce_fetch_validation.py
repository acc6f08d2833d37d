"""What the broker refuses in a Produce, per partition and with Kafka's error codes
(ProduceRequest.validateRecords, LogValidator): nothing of a refused batch is stored, the
other partitions of the request are appended, and the connection stays usable."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from minibroker_protocol.apis import produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import Record, build_batch
from tests.integration.helpers import (
    TIMEOUT,
    RawClient,
    create_topic,
    module_broker,
    offsets,
    records_batch,
    stored_records,
    unique,
)

E = ErrorCode


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def produce_req(topic: str, batches: list[tuple[int, bytes]], acks: int = -1) -> object:
    R = produce.REQUEST
    return R(transactional_id=None, acks=acks, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=p, records=r) for p, r in batches])])


def recs(n: int, key: bytes | None = b"k") -> list[Record]:
    return [Record(offset_delta=i, timestamp_delta=i, key=key, value=b"v%d" % i) for i in range(n)]


def corrupt_crc(batch: bytes) -> bytes:
    b = bytearray(batch)
    b[-1] ^= 0xFF  # inside the records, covered by the CRC
    return bytes(b)


BAD = {
    "crc": (corrupt_crc(records_batch([b"a", b"b"])), E.CORRUPT_MESSAGE),
    "two-batches": (records_batch([b"a"]) + records_batch([b"b"]), E.INVALID_RECORD),
    "empty": (b"", E.INVALID_RECORD),
    "control-batch": (build_batch(recs(1), base_timestamp=1000, is_control=True), E.INVALID_RECORD),
    "count-mismatch": (build_batch(recs(3), base_timestamp=1000, last_offset_delta=1), E.INVALID_RECORD),
    "producer-id-without-sequence": (build_batch(recs(1), base_timestamp=1000, producer_id=7, producer_epoch=0,
                                                 base_sequence=-1), E.INVALID_RECORD),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_refused_batch(kafka_broker_module, case):
    data, code = BAD[case]
    topic = unique(f"bad-{case}")
    create_topic(kafka_broker_module, topic, 2)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(produce.API, 9, produce_req(topic, [(0, data), (1, records_batch([b"good"]))]))
        got = {p.index: (p.error_code, p.base_offset) for p in resp.responses[0].partition_responses}
        assert got == {0: (code, -1), 1: (0, 0)}, case
        # The connection is still usable.
        again = raw.call(produce.API, 9, produce_req(topic, [(0, records_batch([b"after"]))]))
        assert again.responses[0].partition_responses[0].error_code == 0
    assert [r.value for r in stored_records(kafka_broker_module, topic, 0)] == [b"after"]
    assert [r.value for r in stored_records(kafka_broker_module, topic, 1)] == [b"good"]


@pytest.mark.parametrize("version, code", [(3, E.UNSUPPORTED_COMPRESSION_TYPE), (6, E.UNSUPPORTED_COMPRESSION_TYPE),
                                           (7, 0), (9, 0)])
def test_zstd_needs_produce_v7(kafka_broker_module, version, code):
    """KIP-110: zstd batches only in Produce v7+ (older clients could not read them back)."""
    topic = unique(f"zstd-v{version}")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(produce.API, version, produce_req(topic, [(0, records_batch([b"z"], compression=4))]))
    assert resp.responses[0].partition_responses[0].error_code == code
    assert offsets(kafka_broker_module, topic) == (0, 0 if code else 1)


def test_null_key_on_a_compacted_topic(kafka_broker_module):
    topic = unique("compact")
    create_topic(kafka_broker_module, topic, 1, {"cleanup.policy": "compact"})
    with RawClient(kafka_broker_module.bootstrap) as raw:
        batch = build_batch(recs(1, key=b"k") + [Record(offset_delta=1, key=None, value=b"no key")],
                            base_timestamp=1000)
        resp = raw.call(produce.API, 9, produce_req(topic, [(0, batch)]))
    [pr] = resp.responses[0].partition_responses
    assert pr.error_code == E.INVALID_RECORD
    assert "without key" in pr.error_message
    assert offsets(kafka_broker_module, topic) == (0, 0)


def test_null_key_on_a_compacted_topic_names_the_record(kafka_broker_module):
    """v8+: the response says which record of the batch was refused, as Kafka's LogValidator does."""
    topic = unique("compact-idx")
    create_topic(kafka_broker_module, topic, 1, {"cleanup.policy": "compact"})
    with RawClient(kafka_broker_module.bootstrap) as raw:
        batch = build_batch(recs(1, key=b"k") + [Record(offset_delta=1, key=None, value=b"no key")],
                            base_timestamp=1000)
        resp = raw.call(produce.API, 9, produce_req(topic, [(0, batch)]))
    [pr] = resp.responses[0].partition_responses
    assert [(e.batch_index, "without key" in (e.batch_index_error_message or "")) for e in pr.record_errors] == [
        (1, True)]


def test_null_key_on_a_compacted_topic_through_a_client(kafka_broker_module):
    topic = unique("compact-client")
    create_topic(kafka_broker_module, topic, 1, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "message.send.max.retries": 0})
    reports: list = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: reports.append(err))
    p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: reports.append(err))
    p.flush(TIMEOUT)
    p.flush(TIMEOUT)
    codes = [e.code() if e else None for e in reports]
    assert KafkaError.INVALID_RECORD in codes
    assert [r.value for r in stored_records(kafka_broker_module, topic)] in ([b"keyed"], [])
