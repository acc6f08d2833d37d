"""Fuzz targets: every decoder that reads bytes from the network or a segment, as a function of
one `bytes` input, plus seeds (valid inputs) for mutation.

A target may reject its input only with one of the protocol's own errors (`EXPECTED`: DecodeError,
InvalidBatch and its subclasses, FrameError): those are the answers the broker maps to an error
code or a closed connection. Anything else (IndexError, struct.error, UnicodeDecodeError, a bare
ValueError, OverflowError, MemoryError, RecursionError) escaping a decoder is a crash: the
dispatcher would turn it into UNKNOWN_SERVER_ERROR or a dropped connection with a traceback.

Used by tests/fuzz (hypothesis, bounded example counts) and bench/fuzz.py (time-bounded
mutation loop, and atheris when it is installed).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from minibroker_protocol.apis import APIS
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.coordinator_records import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    TRANSACTION_LOG_KEY,
    TRANSACTION_LOG_VALUE,
)
from minibroker_protocol.framing import FrameError, FrameReader
from minibroker_protocol.headers import RequestHeader, decode_request_header, encode_request_header
from minibroker_protocol.records import convert, legacy
from minibroker_protocol.records.batch import InvalidBatch, iter_batches
from minibroker_protocol.records.compression import compress, decompress
from minibroker_protocol.records.convert import recompress
from minibroker_protocol.records.dump import iter_summaries
from minibroker_protocol.records.v2 import Record, build_batch, decode_batches
from minibroker_protocol.types import DecodeError

EXPECTED: tuple[type[BaseException], ...] = (DecodeError, InvalidBatch, FrameError)
MAX_OUT = 1 << 20  # decompression limit used by the targets: fuzz inputs must not allocate much

SCHEMAS = [(api.name, side, schema, v) for api in APIS.values()
           for side, schema in (("request", api.request), ("response", api.response)) for v in schema.valid]
COORDINATOR_SCHEMAS = [(s, v) for s in (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE, GROUP_METADATA_KEY,
                                        GROUP_METADATA_VALUE, TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)
                       for v in s.valid]


def request_header(data: bytes) -> None:
    decode_request_header(data)


def any_schema(data: bytes) -> None:
    """The first two bytes choose the message and version (all of them, requests and
    responses); the rest is its body."""
    if len(data) < 2:
        return
    _, _, schema, version = SCHEMAS[struct.unpack_from(">H", data)[0] % len(SCHEMAS)]
    decode(schema, version, data[2:])


def coordinator_record(data: bytes) -> None:
    if not data:
        return
    schema, version = COORDINATOR_SCHEMAS[data[0] % len(COORDINATOR_SCHEMAS)]
    decode(schema, version, data[1:])


def frame_reader(data: bytes) -> None:
    """Fed in pieces of sizes taken from the input itself, as a socket would hand them over."""
    r = FrameReader(64 * 1024)
    step = (data[0] % 17 + 1) if data else 1
    for i in range(0, len(data), step):
        r.feed(data[i:i + step])
        while r.next_frame() is not None:
            pass


def batch_headers(data: bytes) -> None:
    """The broker's produce path: headers only (BatchView.validate)."""
    for view in iter_batches(data):
        view.validate()
        _ = (view.last_offset, view.is_control, view.timestamp_type, view.compression)


def v2_batches(data: bytes) -> None:
    for _ in decode_batches(data, max_size=MAX_OUT):
        pass


def legacy_message_sets(data: bytes) -> None:
    for _ in legacy.iter_deep(data, max_size=MAX_OUT):
        pass


def legacy_validate_and_convert(data: bytes) -> None:
    legacy.validate_legacy(data, max_size=MAX_OUT)
    convert.up_convert(data, base_offset=0)


def decompress_any(data: bytes) -> None:
    if not data:
        return
    codec = data[0] % 4 + 1  # gzip, snappy, lz4, zstd
    magic = 2 if data[0] & 0x80 else data[0] >> 5 & 1
    decompress(codec, data[1:], magic=magic, max_size=MAX_OUT)


def recompress_any(data: bytes) -> None:
    if not data:
        return
    recompress(data[1:], data[0] % 5, max_size=MAX_OUT)


def dump_summaries(data: bytes) -> None:
    for _ in iter_summaries(data, records=True):
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    f.__name__: f for f in (request_header, any_schema, coordinator_record, frame_reader, batch_headers,
                            v2_batches, legacy_message_sets, legacy_validate_and_convert, decompress_any,
                            recompress_any, dump_summaries)
}


def run(target: Callable[[bytes], None], data: bytes) -> None:
    """Run one input; an EXPECTED rejection is fine, anything else propagates."""
    try:
        target(data)
    except EXPECTED:
        pass


# -- seeds: valid inputs that mutations start from -------------------------------------------------


def _records(n: int) -> list[Record]:
    return [Record(timestamp_delta=i, offset_delta=i, key=b"key-%d" % i, value=b"value %d " % i * 3,
                   headers=[("h", b"x")]) for i in range(n)]


def seed_batches() -> list[bytes]:
    out = [build_batch(_records(3), base_timestamp=1_700_000_000_000, compression=c) for c in range(5)]
    out.append(out[0] + out[1])
    out.append(legacy.build_message_set([legacy.RecordData(0, 5, b"k", b"v")], magic=1, compression=0)
               if hasattr(legacy, "RecordData") else out[0])
    return out


def seed_requests() -> list[bytes]:
    """Header + body of a few common requests (unframed), as the dispatcher sees them."""
    from minibroker_protocol.apis import api_versions, fetch, metadata, produce

    out = []
    R = produce.REQUEST
    bodies = [
        (produce, 9, R(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[R.TopicProduceData(
            name="t", partition_data=[R.PartitionProduceData(index=0, records=seed_batches()[0])])])),
        (metadata, 12, metadata.REQUEST(topics=[metadata.REQUEST.MetadataRequestTopic(name="t")],
                                        allow_auto_topic_creation=False,
                                        include_topic_authorized_operations=False)),
        (api_versions, 3, api_versions.REQUEST(client_software_name="fuzz", client_software_version="1")),
        (fetch, 12, fetch.REQUEST(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                                  session_epoch=-1, topics=[fetch.REQUEST.FetchTopic(topic="t", partitions=[
                                      fetch.REQUEST.FetchPartition(partition=0, fetch_offset=0,
                                                                   partition_max_bytes=1 << 20)])],
                                  forgotten_topics_data=[], rack_id="")),
    ]
    for mod, version, body in bodies:
        head = bytearray()
        encode_request_header(head, RequestHeader(mod.API.key, version, 1, "fuzz"))
        out.append(bytes(head) + bytes(encode(mod.API.request, version, body)))
    return out


def seeds_for(name: str) -> list[bytes]:
    if name in ("request_header",):
        return seed_requests()
    if name == "frame_reader":
        return [struct.pack(">i", len(r)) + r for r in seed_requests()]
    if name == "any_schema":
        return [b"\x00\x00" + r for r in seed_requests()]
    if name == "decompress_any":
        return [bytes([0x80 | (c - 1)]) + compress(c, b"hello hello hello" * 20, magic=2) for c in range(1, 5)]
    if name == "recompress_any":
        return [b"\x02" + b for b in seed_batches()]
    if name == "coordinator_record":
        return [b"\x00" + b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00"]
    return seed_batches()


def mutate(rng, data: bytes, max_len: int = 4096) -> bytes:
    """A few byte-level edits: flips, interesting integers, inserts, deletions, splices."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[pos % len(b)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[pos % len(b)] = rng.randrange(256)
        elif op == 2:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and b:
            del b[pos:pos + rng.randint(1, 16)]
        elif op == 4 and len(b) >= 4:
            p = pos % (len(b) - 3)
            b[p:p + 4] = struct.pack(">i", rng.choice([0, -1, 1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000]))
        elif op == 5:
            b = b[:pos]
        elif op == 6 and len(b) >= 2:
            p = pos % (len(b) - 1)
            b[p:p + 2] = struct.pack(">h", rng.choice([0, -1, 0x7FFF, -0x8000, 1]))
    return bytes(b[:max_len])
