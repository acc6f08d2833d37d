"""Produce v0-2, Fetch v0-3 and ListOffsets v0 over a raw socket (issue 7): what no client lets a
test choose (the exact bytes of a message set, a version, a codec quirk)."""

from __future__ import annotations

import gzip

import pytest

from minibroker_protocol.apis import api_versions, fetch, list_offsets, produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records import legacy
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.compression import compress
from minibroker_protocol.records.legacy import RecordData, build_message_set, encode_message
from minibroker_protocol.records.v2 import Record, build_batch, decode_batches
from tests.integration.helpers import RawClient, create_topic, module_broker, unique

T = 1_700_000_000_000


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def topic_with(mb, **configs: str) -> str:
    name = unique("wire")
    create_topic(mb, name, 1, dict(configs))
    return name


def produce_req(topic: str, records: bytes, acks: int = -1):
    R = produce.REQUEST
    return R(transactional_id=None, acks=acks, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=0, records=records)])])


def fetch_req(topic: str, offset: int = 0, max_bytes: int = 1 << 20):
    R = fetch.REQUEST
    return R(max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
             topics=[R.FetchTopic(topic=topic, partitions=[
                 R.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)])],
             forgotten_topics_data=[], rack_id="")


def do_produce(mb, topic: str, records: bytes, version: int):
    with RawClient(mb.bootstrap) as raw:
        [t] = raw.call(produce.API, version, produce_req(topic, records)).responses
        [p] = t.partition_responses
        return p


def fetch_part(mb, topic: str, version: int, offset: int = 0):
    with RawClient(mb.bootstrap) as raw:
        [t] = raw.call(fetch.API, version, fetch_req(topic, offset)).responses
        [p] = t.partitions
        return p


def records_of(p) -> bytes:
    return bytes(p.records or b"")


def msgs(values, *, magic: int, compression: int = 0, ts: int = T) -> bytes:
    return build_message_set([RecordData(i, ts + i, None, v) for i, v in enumerate(values)], magic=magic,
                             compression=compression)


def test_api_versions_advertises_the_old_versions(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        body = raw.call(api_versions.API, 0, api_versions.REQUEST())
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert ranges[produce.API.key][0] == 0 and ranges[produce.API.key][1] >= 11  # KAFKA-18659: Produce from v0
    assert ranges[fetch.API.key][0] == 0
    assert ranges[list_offsets.API.key][0] == 0


@pytest.mark.parametrize("magic, version", [(0, 0), (0, 1), (1, 2)])
@pytest.mark.parametrize("codec", [0, 1, 2, 3], ids=["none", "gzip", "snappy", "lz4"])
def test_message_set_is_up_converted_on_a_default_topic(kafka_broker_module, magic, version, codec):
    topic = topic_with(kafka_broker_module)
    p = do_produce(kafka_broker_module, topic, msgs([b"a", b"b", b"c"], magic=magic, compression=codec), version)
    assert (p.error_code, p.base_offset) == (0, 0)
    got = fetch_part(kafka_broker_module, topic, 4)
    [batch] = list(decode_batches(records_of(got)))
    assert batch.magic == 2 and batch.attributes & 7 == codec
    assert [(r.offset, r.value) for r in batch.records] == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert [r.timestamp for r in batch.records] == ([-1] * 3 if magic == 0 else [T, T + 1, T + 2])


def test_lz4_v0_frame_quirk_is_read_and_kept_for_v0_readers(kafka_broker_module):
    """Magic 0 lz4 frames carry the old (wrong) header checksum (KAFKA-3160)."""
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.8.2"})
    data = msgs([b"x", b"y"], magic=0, compression=3)
    assert do_produce(kafka_broker_module, topic, data, 0).error_code == 0
    out = records_of(fetch_part(kafka_broker_module, topic, 0))
    [wrapper] = list(legacy.iter_shallow(out))
    assert wrapper.magic == 0 and wrapper.attributes & 7 == 3 and wrapper.offset == 1
    assert [(m.offset, m.value) for m in legacy.iter_deep(out)] == [(0, b"x"), (1, b"y")]


def test_bad_crc_is_corrupt_message_and_nothing_is_stored(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    data = bytearray(msgs([b"a"], magic=0))
    data[-1] ^= 0xFF
    assert do_produce(kafka_broker_module, topic, bytes(data), 0).error_code == ErrorCode.CORRUPT_MESSAGE
    assert kafka_broker_module.end_offsets(topic) == {0: 0}


def test_inner_message_of_another_magic_is_invalid(kafka_broker_module):
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.10.0"})
    inner = encode_message(0, None, b"a", magic=0)
    wrapper = encode_message(0, None, compress(1, inner, magic=1), magic=1, timestamp=T, attributes=1)
    assert do_produce(kafka_broker_module, topic, wrapper, 2).error_code == ErrorCode.INVALID_RECORD


def test_v1_wrapper_with_absolute_inner_offsets_is_renumbered(kafka_broker_module):
    """Old clients sent absolute inner offsets in v1 wrappers; the broker rebuilds the wrapper so the
    stored inner offsets are relative (0..n-1) and the wrapper carries the last absolute offset."""
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.10.0"})
    assert do_produce(kafka_broker_module, topic, msgs([b"first"], magic=1), 2).base_offset == 0
    inner = b"".join(encode_message(o, None, v, magic=1, timestamp=T) for o, v in ((7, b"a"), (8, b"b")))
    wrapper = encode_message(8, None, compress(1, inner, magic=1), magic=1, timestamp=T, attributes=1)
    assert do_produce(kafka_broker_module, topic, wrapper, 2).base_offset == 1
    out = records_of(fetch_part(kafka_broker_module, topic, 3, 1))
    [w] = list(legacy.iter_shallow(out))
    assert w.offset == 2 and [m.offset for m in legacy.iter_shallow(gzip.decompress(w.value))] == [0, 1]
    assert [(m.offset, m.value) for m in legacy.iter_deep(out)] == [(1, b"a"), (2, b"b")]


def test_produce_v3_refuses_a_message_set(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    assert do_produce(kafka_broker_module, topic, msgs([b"a"], magic=1), 3).error_code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("make, code", [
    (lambda: build_batch([Record(value=b"a")], base_timestamp=T, producer_id=5, producer_epoch=0, base_sequence=0),
     ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
    (lambda: build_batch([Record(value=b"a", headers=[("h", b"1")])], base_timestamp=T), ErrorCode.INVALID_RECORD),
    (lambda: build_batch([Record(value=b"a")], base_timestamp=T, compression=4),
     ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
], ids=["idempotent", "headers", "zstd"])
def test_v2_batches_a_v1_topic_cannot_hold(kafka_broker_module, make, code):
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.10.0"})
    assert do_produce(kafka_broker_module, topic, make(), 9).error_code == code
    assert kafka_broker_module.end_offsets(topic) == {0: 0}


def test_fetch_versions_down_convert_to_what_the_reader_knows(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    batch = build_batch([Record(offset_delta=i, timestamp_delta=i, key=b"k", value=b"v%d" % i) for i in range(3)],
                        base_timestamp=T, compression=1)
    assert do_produce(kafka_broker_module, topic, batch, 9).error_code == 0
    stored = records_of(fetch_part(kafka_broker_module, topic, 4))
    assert [v.magic for v in iter_batches(stored)] == [2]
    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1), (4, 2)):
        p = fetch_part(kafka_broker_module, topic, version)
        out = records_of(p)
        assert p.error_code == 0 and p.high_watermark == 3
        assert {v.magic for v in iter_batches(out)} == {magic}, version
        if magic < 2:
            [w] = list(legacy.iter_shallow(out))
            assert w.offset == 2 and w.attributes & 7 == 1  # one gzip wrapper, as the batch was
            got = list(legacy.iter_deep(out))
            assert [(m.offset, m.value) for m in got] == [(0, b"v0"), (1, b"v1"), (2, b"v2")]
            assert [m.timestamp for m in got] == ([-1] * 3 if magic == 0 else [T, T + 1, T + 2])


def test_fetch_v3_of_a_v1_topic_sends_the_stored_bytes(kafka_broker_module):
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.10.0"})
    assert do_produce(kafka_broker_module, topic, msgs([b"a", b"b"], magic=1, compression=2), 2).error_code == 0
    assert records_of(fetch_part(kafka_broker_module, topic, 3)) == records_of(fetch_part(kafka_broker_module, topic, 12))
    v0 = records_of(fetch_part(kafka_broker_module, topic, 1))
    assert {v.magic for v in iter_batches(v0)} == {0}


def test_zstd_cannot_be_down_converted(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    assert do_produce(kafka_broker_module, topic, build_batch([Record(value=b"z")], base_timestamp=T, compression=4), 9).error_code == 0
    assert fetch_part(kafka_broker_module, topic, 2).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert fetch_part(kafka_broker_module, topic, 4).error_code == 0


def test_down_conversion_disabled_answers_unsupported_version(kafka_broker_module):
    topic = topic_with(kafka_broker_module, **{"message.downconversion.enable": "false"})
    assert do_produce(kafka_broker_module, topic, msgs([b"a"], magic=1), 2).error_code == 0
    assert fetch_part(kafka_broker_module, topic, 3).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert fetch_part(kafka_broker_module, topic, 4).error_code == 0


def test_log_append_time_topic_answers_the_time_at_produce_v2(kafka_broker_module):
    topic = topic_with(kafka_broker_module, **{"message.format.version": "0.10.0", "message.timestamp.type": "LogAppendTime"})
    p = do_produce(kafka_broker_module, topic, msgs([b"a", b"b"], magic=1, compression=1), 2)
    assert p.error_code == 0 and p.log_append_time_ms > T
    [w] = list(legacy.iter_shallow(records_of(fetch_part(kafka_broker_module, topic, 2))))
    assert w.timestamp == p.log_append_time_ms and w.timestamp_type == legacy.LOG_APPEND_TIME


def list_offsets_v0(mb, topic: str, timestamp: int, max_num: int, replica_id: int = -1):
    R = list_offsets.REQUEST
    req = R(replica_id=replica_id, topics=[R.ListOffsetsTopic(name=topic, partitions=[
        R.ListOffsetsPartition(partition_index=0, timestamp=timestamp, max_num_offsets=max_num)])])
    with RawClient(mb.bootstrap) as raw:
        [t] = raw.call(list_offsets.API, 0, req).topics
        [p] = t.partitions
        return p


def test_list_offsets_v0(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    for _ in range(3):
        do_produce(kafka_broker_module, topic, msgs([b"a", b"b"], magic=0), 0)
        kafka_broker_module.call(lambda b: b.get_log(topic, 0).roll())
    do_produce(kafka_broker_module, topic, msgs([b"c"], magic=0), 0)
    p = list_offsets_v0(kafka_broker_module, topic, -1, 10)
    assert (p.error_code, p.old_style_offsets) == (0, [7, 6, 4, 2, 0])
    assert list_offsets_v0(kafka_broker_module, topic, -1, 1).old_style_offsets == [7]
    assert list_offsets_v0(kafka_broker_module, topic, -2, 5).old_style_offsets == [0]
    assert list_offsets_v0(kafka_broker_module, topic, 0, 5).old_style_offsets == []  # no segment is that old
    assert list_offsets_v0(kafka_broker_module, topic, -3, 5).error_code == ErrorCode.UNSUPPORTED_VERSION
    unknown = list_offsets_v0(kafka_broker_module, unique("missing"), -1, 1)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_mixed_magics_in_one_partition_are_invalid(kafka_broker_module):
    topic = topic_with(kafka_broker_module)
    data = msgs([b"a"], magic=0) + msgs([b"b"], magic=1)
    assert do_produce(kafka_broker_module, topic, data, 2).error_code == ErrorCode.INVALID_RECORD
    assert kafka_broker_module.end_offsets(topic) == {0: 0}


@pytest.mark.parametrize("sent, fmt, stored", [(0, "0.10.0", 1), (1, "0.8.2", 0)])
def test_a_message_set_of_the_other_legacy_magic_is_rewritten_in_the_topics(kafka_broker_module, sent, fmt, stored):
    topic = topic_with(kafka_broker_module, **{"message.format.version": fmt})
    assert do_produce(kafka_broker_module, topic, msgs([b"a", b"b"], magic=sent, compression=1), 2).error_code == 0
    out = records_of(fetch_part(kafka_broker_module, topic, 4))
    [w] = list(legacy.iter_shallow(out))
    assert (w.magic, w.offset, w.attributes & 7) == (stored, 1, 1)
    got = list(legacy.iter_deep(out))
    assert [(m.offset, m.value, m.magic) for m in got] == [(0, b"a", stored), (1, b"b", stored)]
    assert {m.timestamp for m in got} == {-1}  # v0 had none; v0 cannot hold one
