"""Bad input, one table (issue 10): what the broker answers to each kind of broken request, what
Kafka answers, and that nothing bad reaches a segment and other connections keep being served.

Two tables. FRAMES: broken at the connection level (framing, header, schema) — Kafka closes the
connection (an InvalidRequestException in its log) except for an ApiVersions version it does not
know (KIP-511: UNSUPPORTED_VERSION in the v0 form). BATCHES: a well-formed Produce v9 whose
record bytes are broken — Kafka answers per partition with an error code (LogValidator,
UnifiedLog.analyzeAndValidateRecords, ProduceRequest.validateRecords) and writes nothing.

Each row names Kafka's answer and ours; where they differ the row says why (`kafka` vs `ours`).
Rows marked `xfail` are known gaps, kept strict so they flip to a failure when fixed: the broker
validates batches from their headers only (house style: record bytes stay bytes), so a batch whose
header is consistent but whose records are not is stored, where Kafka's LogValidator, which
iterates every record, refuses it.
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

import pytest

from minibroker_protocol.apis import api_versions, metadata, produce
from minibroker_protocol.codec import decode
from minibroker_protocol.errors import ErrorCode as E
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from minibroker_protocol.records.batch import crc32c
from minibroker_protocol.records.compression import compress
from minibroker_protocol.records.v2 import Record, build_batch, encode_records
from tests.integration.helpers import (
    RawClient,
    create_topic,
    module_broker,
    offsets,
    stored_batches,
    unique,
)

MAX_REQUEST = 256 * 1024  # socket.request.max.bytes of this module's broker
PRODUCE_V = 9
CLOSE = "close"


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory, {"socket.request.max.bytes": MAX_REQUEST}) as b:
        yield b


# -- building broken input ---------------------------------------------------------------------


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header(api_key: int, version: int, correlation_id: int = 7, client_id: str | None = "bad-input") -> bytes:
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, correlation_id, client_id))
    return bytes(out)


def metadata_v9(topic_name_bytes: bytes) -> bytes:
    """Metadata v9 (flexible) asking for one topic whose name is these raw bytes (unframed)."""
    body = bytearray(b"\x02")  # compact array of 1
    body += bytes([len(topic_name_bytes) + 1]) + topic_name_bytes + b"\x00"  # compact string, no tags
    body += b"\x00\x00\x00\x00"  # allow_auto_topic_creation, include_*_authorized_operations, no tags
    return header(metadata.API.key, 9) + bytes(body)


def now_ms() -> int:
    return int(time.time() * 1000)


def good_batch(n: int = 3, *, compression: int = 0, **kw: Any) -> bytearray:
    recs = [Record(timestamp_delta=i, offset_delta=i, key=b"k%d" % i, value=b"value %d" % i) for i in range(n)]
    return bytearray(build_batch(recs, base_timestamp=now_ms(), compression=compression, **kw))


def fix_crc(b: bytearray) -> bytearray:
    struct.pack_into(">I", b, 17, crc32c(memoryview(b)[21:]))
    return b


def patched(fmt: str, at: int, value: int, *, crc: bool = True, batch: bytearray | None = None) -> bytes:
    b = batch if batch is not None else good_batch()
    struct.pack_into(fmt, b, at, value)
    return bytes(fix_crc(b) if crc else b)


# v2 header field positions (minibroker_protocol.records.batch): the tests poke them directly.
BASE_OFFSET, BATCH_LENGTH, MAGIC, ATTRIBUTES, LAST_OFFSET_DELTA, RECORDS_COUNT = 0, 8, 16, 21, 23, 57


def crc_mismatch() -> bytes:
    b = good_batch()
    b[-1] ^= 0x01  # a value byte: the CRC no longer matches
    return bytes(b)


def magic_v1_message() -> bytes:
    # A MessageSet v1 entry: offset, size, crc, magic 1, attributes, timestamp, key -1, value.
    body = struct.pack(">bbqi", 1, 0, now_ms(), -1) + struct.pack(">i", 5) + b"hello"
    import zlib
    msg = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return struct.pack(">qi", 0, len(msg)) + msg


def fewer_records_than_counted() -> bytes:
    """Header says 3 records (lastOffsetDelta 2), the body holds 2, CRC valid."""
    b = good_batch(3)
    recs = [Record(timestamp_delta=i, offset_delta=i, key=b"k%d" % i, value=b"value %d" % i) for i in range(2)]
    body = encode_records(recs)
    b = b[:61] + body
    struct.pack_into(">i", b, BATCH_LENGTH, len(b) - 12)
    return bytes(fix_crc(b))


def compressed_garbage(codec: int) -> bytes:
    b = good_batch(3, compression=codec)
    b = b[:61] + b"this is not compressed data at all" * 3
    struct.pack_into(">i", b, BATCH_LENGTH, len(b) - 12)
    return bytes(fix_crc(b))


def decompression_bomb() -> bytes:
    """A zstd batch of one record whose value decompresses to 80 MB of zeros (the codec limit is
    64 MiB: minibroker_protocol.records.compression.DEFAULT_MAX_DECOMPRESSED_SIZE)."""
    body = encode_records([Record(value=bytes(80 << 20))])
    b = good_batch(1, compression=4)
    b = b[:61] + compress(4, body, magic=2)
    struct.pack_into(">i", b, BATCH_LENGTH, len(b) - 12)
    return bytes(fix_crc(b))


# -- the frame table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameRow:
    name: str
    data: Any  # bytes, or a callable returning them
    ours: str  # CLOSE, or the name of the error code in the answer
    log: str | None  # a fragment of the broker's log line for a close
    kafka: str
    answer: tuple[Any, int] = (api_versions, 0)  # the API module and version the answer is read as
    known_gap: str | None = None


FRAMES = [
    FrameRow("length prefix above socket.request.max.bytes", struct.pack(">i", MAX_REQUEST + 1), CLOSE,
             f"exceeds the limit of {MAX_REQUEST}", "close (InvalidReceiveException in SocketServer)"),
    FrameRow("length prefix of 2 GiB - 1", struct.pack(">i", 0x7FFFFFFF), CLOSE, "exceeds the limit",
             "close (InvalidReceiveException)"),
    FrameRow("negative length", struct.pack(">i", -1), CLOSE, "negative frame size",
             "close (InvalidReceiveException: Invalid receive (size = -1))"),
    FrameRow("frame shorter than a request header", framed(b"\x00\x03"), CLOSE, "unreadable request header",
             "close (InvalidRequestException: error getting request header)"),
    FrameRow("unknown api key 999", framed(header(999, 0)), CLOSE, "unknown api key 999",
             "close (InvalidRequestException: Unknown API key 999)"),
    FrameRow("unknown version of Metadata (v99)", framed(header(metadata.API.key, 99)), CLOSE,
             "Metadata v99 is not supported", "close (UnsupportedVersionException)"),
    FrameRow("unknown version of ApiVersions (v99)", framed(header(api_versions.API.key, 99) + b"junk"),
             "UNSUPPORTED_VERSION", None, "UNSUPPORTED_VERSION in ApiVersions v0 (KIP-511)"),
    FrameRow("truncated body (Metadata v9 cut in a topic name)",
             lambda: framed(metadata_v9(b"some-topic-name")[:-8]), CLOSE, "malformed Metadata v9",
             "close (InvalidRequestException: Error reading request)"),
    FrameRow("absurd array count (Metadata v4 topics = 2^31-1)",
             framed(header(metadata.API.key, 4) + struct.pack(">i", 0x7FFFFFFF) + b"\x00"), CLOSE,
             "claims 2147483647 elements", "close (Tried to allocate a collection of size 2147483647)"),
    FrameRow("absurd compact array count (Metadata v9 topics = 2^28)",
             framed(header(metadata.API.key, 9) + b"\x81\x80\x80\x80\x01" + b"\x00" * 4), CLOSE,
             "elements in", "close (Tried to allocate a collection of size ...)"),
    FrameRow("absurd string length (Metadata v4 topic name of 32767 bytes, 3 sent)",
             framed(header(metadata.API.key, 4) + struct.pack(">ih", 1, 0x7FFF) + b"abc"), CLOSE,
             "malformed Metadata v4", "close (Error reading request)"),
    FrameRow("negative array count -2 where null is not allowed (Metadata v0 topics)",
             framed(header(metadata.API.key, 0) + struct.pack(">i", -2)), CLOSE,
             "malformed Metadata v0", "close (non-nullable field topics was serialized as null); from v1, "
             "where topics is nullable, any negative count is null (all topics) in both"),
    FrameRow("negative string length -5 (Metadata v4 topic name)",
             framed(header(metadata.API.key, 4) + struct.pack(">ih", 1, -5) + b"\x00"), CLOSE,
             "malformed Metadata v4", "close (Error reading request: non-nullable field was negative)"),
    FrameRow("bad UTF-8 in a topic name (Metadata v9)", lambda: framed(metadata_v9(b"bad-\xff\xfe-name")),
             "INVALID_TOPIC_EXCEPTION", None,
             "INVALID_TOPIC_EXCEPTION: the name is read with U+FFFD replacements, then fails Topic.validate",
             answer=(metadata, 9)),
    FrameRow("bad UTF-8 in the client id (Metadata v4)",
             framed(header(metadata.API.key, 4, client_id=None)[:-2] + b"\x00\x02\xc3\x28"
                    + struct.pack(">i", 0) + b"\x00"), "NONE", None,
             "answered: the client id is read with U+FFFD replacements", answer=(metadata, 4)),
]


def _answer_of(raw: RawClient, answer: tuple[Any, int]) -> str:
    """CLOSE if the broker closed; else the error code name in the answer (ApiVersions: the
    top-level one; Metadata: the first topic's, NONE for no topic)."""
    raw.sock.settimeout(5.0)
    try:
        frame = raw.recv_frame()
    except (EOFError, ConnectionResetError):
        return CLOSE
    mod, version = answer
    pos = 4 + (1 if response_header_version(mod.API.key, version) >= 1 else 0)
    body = decode(mod.RESPONSE, version, frame, pos)
    if mod is metadata:
        return E(body.topics[0].error_code).name if body.topics else "NONE"
    return E(body.error_code).name


def api_versions_works(bootstrap: str) -> bool:
    with RawClient(bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="bad-input",
                                                                  client_software_version="1"))
    return body.error_code == 0


def _frame_params() -> list[Any]:
    return [pytest.param(r, id=r.name, marks=[pytest.mark.xfail(strict=True, reason=r.known_gap)]
                         if r.known_gap else []) for r in FRAMES]


@pytest.mark.parametrize("row", _frame_params())
def test_frame_table(kafka_broker_module, row: FrameRow, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    data = row.data() if callable(row.data) else row.data
    with RawClient(kafka_broker_module.bootstrap) as bystander, RawClient(kafka_broker_module.bootstrap) as raw:
        api_versions_works(kafka_broker_module.bootstrap)
        raw.send_raw(data)
        assert _answer_of(raw, row.answer) == row.ours, row.kafka
        # The connection opened before is still served, and so are new ones.
        body = bystander.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="x",
                                                                        client_software_version="1"))
        assert body.error_code == 0
    assert api_versions_works(kafka_broker_module.bootstrap)
    if row.log is not None:
        lines = [r.getMessage() for r in caplog.records]
        assert any(row.log in m for m in lines), lines


def test_client_closing_mid_frame_and_mid_prefix_leaves_the_broker_serving(kafka_broker_module):
    """A frame cut short by the client's own close has no answer; the broker drops the half-read
    frame with the connection (Kafka: the same, silently)."""
    for partial in (b"\x00\x00", struct.pack(">i", 100) + b"x" * 10):
        host, port = kafka_broker_module.bootstrap.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
        s.sendall(partial)
        s.close()
    assert api_versions_works(kafka_broker_module.bootstrap)


# -- the record batch table ----------------------------------------------------------------------


@dataclass(frozen=True)
class BatchRow:
    name: str
    records: Any  # callable returning the Produce partition's record bytes
    ours: str  # error code name, or "NONE" (accepted)
    kafka: str
    topic_config: tuple[tuple[str, str], ...] = ()
    known_gap: str | None = None



BATCHES = [
    BatchRow("a valid batch (control row)", lambda: bytes(good_batch()), "NONE", "accepted at offsets 2-4"),
    BatchRow("wrong CRC", crc_mismatch, "CORRUPT_MESSAGE", "CORRUPT_MESSAGE (Record is corrupt)"),
    BatchRow("batch length past the end of the data", lambda: patched(">i", BATCH_LENGTH, 500, crc=False),
             "INVALID_RECORD", "INVALID_RECORD (no whole batch: 'must have at least one record batch')"),
    BatchRow("batch length below the header size", lambda: patched(">i", BATCH_LENGTH, 20, crc=False),
             "CORRUPT_MESSAGE", "CORRUPT_MESSAGE (Record size is less than the minimum record overhead)"),
    BatchRow("negative batch length", lambda: patched(">i", BATCH_LENGTH, -5, crc=False), "CORRUPT_MESSAGE",
             "CORRUPT_MESSAGE"),
    BatchRow("batch cut to 40 bytes", lambda: bytes(good_batch()[:40]), "INVALID_RECORD",
             "INVALID_RECORD (no whole batch)"),
    BatchRow("trailing junk after a valid batch", lambda: bytes(good_batch()) + b"\x00junk", "CORRUPT_MESSAGE",
             "kafka differs: appends the batch and drops the junk (UnifiedLog.trimInvalidBytes)"),
    BatchRow("empty records", lambda: b"", "INVALID_RECORD", "INVALID_RECORD (at least one record batch)"),
    BatchRow("magic 1 (MessageSet v1) on Produce v9", magic_v1_message, "INVALID_RECORD",
             "INVALID_RECORD (v3+ may only contain RecordBatch v2)"),
    BatchRow("17-byte entry: size 5, magic 0, no attributes byte",
             lambda: struct.pack(">qi", 0, 5) + b"\x00\x00\x00\x00\x00", "CORRUPT_MESSAGE",
             "CORRUPT_MESSAGE (Record size 5 is less than the minimum record overhead (14))"),
    BatchRow("magic 3 (unknown)", lambda: patched(">b", MAGIC, 3, crc=False), "CORRUPT_MESSAGE",
             "CORRUPT_MESSAGE (Invalid magic found in record: 3)"),
    BatchRow("second batch magic 1 after a v2 batch", lambda: bytes(good_batch()) + magic_v1_message(),
             "INVALID_RECORD", "INVALID_RECORD (Batch magic 1 is not the same as the first batch's)"),
    BatchRow("records count 5 with lastOffsetDelta 2", lambda: patched(">i", RECORDS_COUNT, 5),
             "INVALID_RECORD", "INVALID_RECORD (Inconsistent batch offset range)"),
    BatchRow("records count 0", lambda: patched(">i", RECORDS_COUNT, 0, batch=patched_b(">i", LAST_OFFSET_DELTA, 0)),
             "INVALID_RECORD", "INVALID_RECORD (Invalid reported count for record batch: 0)"),
    BatchRow("negative lastOffsetDelta", lambda: patched(">i", LAST_OFFSET_DELTA, -3), "INVALID_RECORD",
             "INVALID_RECORD (Batch has an invalid offset range)"),
    BatchRow("base offset 3 from a client (overlaps the next batch's offsets)",
             lambda: patched(">q", BASE_OFFSET, 3, crc=False), "INVALID_RECORD",
             "INVALID_RECORD (baseOffset of the record batch ... should be 0)"),
    BatchRow("two batches both at base offset 0 (overlapping as sent)",
             lambda: bytes(good_batch()) + bytes(good_batch()), "INVALID_RECORD",
             "INVALID_RECORD (Produce v3+ must have exactly one record batch per partition)"),
    BatchRow("control batch from a client", lambda: patched(">h", ATTRIBUTES, 0x20), "INVALID_RECORD",
             "INVALID_RECORD (Clients are not allowed to write control records)"),
    BatchRow("header says 3 records, body holds 2", fewer_records_than_counted, "INVALID_RECORD",
             "INVALID_RECORD (Incorrect declared batch size, premature EOF reached)"),
    # Kafka's codec streams wrap the decompression IOException in a plain KafkaException (wrapForInput,
    # DefaultRecordBatch.StreamRecordIterator), which ReplicaManager.appendToLocalLog maps to
    # UNKNOWN_SERVER_ERROR whether or not the topic recompresses; we answer the same in both rows.
    BatchRow("gzip batch that does not decompress", lambda: compressed_garbage(1), "UNKNOWN_SERVER_ERROR",
             "UNKNOWN_SERVER_ERROR (KafkaException: java.util.zip.ZipException: Not in GZIP format, from "
             "GzipCompression.wrapForInput)"),
    BatchRow("gzip batch that does not decompress, topic compression.type=lz4", lambda: compressed_garbage(1),
             "UNKNOWN_SERVER_ERROR", "UNKNOWN_SERVER_ERROR (the same KafkaException: LogValidator decompresses "
             "before it recompresses)", (("compression.type", "lz4"),)),
    BatchRow("zstd batch expanding to 80 MB, topic compression.type=gzip", decompression_bomb,
             "INVALID_RECORD", "ours: INVALID_RECORD, not retriable, so the client does not resend the bomb; kafka differs: no limit, decompresses it all (then RecordTooLarge if the "
             "result exceeds max.message.bytes)", (("compression.type", "gzip"),)),
]


def patched_b(fmt: str, at: int, value: int) -> bytearray:
    b = good_batch()
    struct.pack_into(fmt, b, at, value)
    return b


def produce_request(topic: str, records: bytes) -> Any:
    R = produce.REQUEST
    return R(transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=0, records=records)])])


def _batch_params() -> list[Any]:
    out = []
    for r in BATCHES:
        marks = [pytest.mark.xfail(strict=True, reason=r.known_gap)] if r.known_gap else []
        out.append(pytest.param(r, id=r.name, marks=marks))
    return out


@pytest.mark.parametrize("row", _batch_params())
def test_record_batch_table(kafka_broker_module, row: BatchRow):
    topic = unique("bad-batch")
    create_topic(kafka_broker_module, topic, configs=dict(row.topic_config))
    with RawClient(kafka_broker_module.bootstrap) as raw:
        # A good batch first, so "nothing already stored is damaged" has something to check.
        first = raw.call(produce.API, PRODUCE_V, produce_request(topic, bytes(good_batch(2))))
        assert first.responses[0].partition_responses[0].error_code == 0
        before = stored_batches(kafka_broker_module, topic)
        resp = raw.call(produce.API, PRODUCE_V, produce_request(topic, row.records()))
        [part] = resp.responses[0].partition_responses
        got = E(part.error_code).name
        # The connection stays usable after an error answer.
        again = raw.call(produce.API, PRODUCE_V, produce_request(topic, bytes(good_batch(1))))
        assert again.responses[0].partition_responses[0].error_code == 0
    # Every stored batch decodes whole (records included): nothing bad reached the segment.
    after = stored_batches(kafka_broker_module, topic)
    assert all(b.records_count == len(b.records) for b in after)
    if row.ours == "NONE":
        assert got == "NONE", row.kafka
        assert offsets(kafka_broker_module, topic) == (0, 2 + 3 + 1)
    else:
        assert got == row.ours, row.kafka
        assert part.base_offset == -1
        assert after[:len(before)] == before and len(after) == len(before) + 1
        assert offsets(kafka_broker_module, topic) == (0, 3)
