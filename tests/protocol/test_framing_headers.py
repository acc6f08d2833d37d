"""Framing (fed byte by byte, as h11's tests do) and the header-version rules."""

from __future__ import annotations

import struct

import pytest

from minibroker_protocol.apis import APIS, api_versions, fetch, metadata, produce
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.framing import FrameError, FrameReader, frame
from minibroker_protocol.headers import (
    RequestHeader,
    decode_request_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)


def test_frames_fed_one_byte_at_a_time():
    payloads = [b"", b"a", b"hello world" * 100]
    stream = b"".join(frame(p) for p in payloads)
    r = FrameReader(max_frame_size=10_000)
    got = []
    for i in range(len(stream)):
        r.feed(stream[i:i + 1])
        while (f := r.next_frame()) is not None:
            got.append(f)
    assert got == payloads
    assert r.buffered == 0


def test_oversized_frame_is_refused_before_its_body_arrives():
    r = FrameReader(max_frame_size=100)
    r.feed(struct.pack(">i", 101))
    with pytest.raises(FrameError, match="exceeds"):
        r.next_frame()


def test_negative_frame_size_is_refused():
    r = FrameReader(max_frame_size=100)
    r.feed(struct.pack(">i", -5))
    with pytest.raises(FrameError, match="negative"):
        r.next_frame()


def test_header_versions_follow_flexible_versions_with_the_api_versions_exception():
    assert request_header_version(produce.API.key, 8) == 1
    assert request_header_version(produce.API.key, 9) == 2
    assert response_header_version(produce.API.key, 8) == 0
    assert response_header_version(produce.API.key, 9) == 1
    assert request_header_version(metadata.API.key, 9) == 2
    # ApiVersions v3+ requests are flexible, but the response header is always v0 (KIP-511).
    assert request_header_version(api_versions.API.key, 3) == 2
    assert response_header_version(api_versions.API.key, 3) == 0
    assert response_header_version(fetch.API.key, 12) == 1


def test_every_api_has_a_consistent_flexible_range():
    for api in APIS.values():
        flexible = [v for v in api.versions if api.is_flexible(v)]
        if flexible:  # flexible versions are a suffix of the valid range
            assert flexible == list(range(flexible[0], api.versions.hi + 1)), api


def test_request_header_round_trip_with_tagged_fields():
    h = RequestHeader(api_key=3, api_version=12, correlation_id=7, client_id="rdkafka")
    out = bytearray()
    encode_request_header(out, h)
    # v2 header: client id stays an int16 string, then an empty tagged-field section
    assert bytes(out) == bytes.fromhex("0003000c00000007") + b"\x00\x07rdkafka" + b"\x00"
    back, pos = decode_request_header(bytes(out))
    assert (back.api_key, back.api_version, back.correlation_id, back.client_id) == (3, 12, 7, "rdkafka")
    assert pos == len(out)


def test_null_client_id():
    h = RequestHeader(api_key=18, api_version=0, correlation_id=1, client_id=None)
    out = bytearray()
    encode_request_header(out, h)
    assert bytes(out).endswith(b"\xff\xff")
    assert decode_request_header(bytes(out))[0].client_id is None


def test_api_versions_v3_request_golden_bytes():
    # What librdkafka sends as the ApiVersions v3 body: compact strings + empty tags.
    body = api_versions.REQUEST(client_software_name="librdkafka", client_software_version="2.16.0")
    raw = bytes(encode(api_versions.REQUEST, 3, body))
    assert raw == b"\x0blibrdkafka\x072.16.0\x00"
    assert decode(api_versions.REQUEST, 3, raw) == body
