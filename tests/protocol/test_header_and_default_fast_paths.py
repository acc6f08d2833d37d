"""The fast paths issue 33 put on every request: the request header's one-unpack read (its
short, null and malformed client ids must read as the field-by-field reader reads them) and
F.is_default of an all-constant struct (a changed field is written, a default one skipped)."""

from __future__ import annotations

import struct

import pytest

from minibroker_protocol import types as t
from minibroker_protocol.apis import fetch
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.headers import (
    _REQUEST_HEADER_VERSIONS,
    decode_request_header,
    request_header_version,
)
from minibroker_protocol.types import DecodeError


def _header(api_key: int, version: int, correlation_id: int, client_id: bytes | None) -> bytes:
    out = bytearray(struct.pack(">hhi", api_key, version, correlation_id))
    out += struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return bytes(out)


def test_the_header_reads_as_the_field_by_field_reader():
    for client_id in (b"rdkafka", b"", None, b"caf\xe9"):  # \xe9: not UTF-8, replaced as Kafka does
        raw = _header(3, 1, 42, client_id) + b"rest"  # Metadata v1: header v1, no tags
        header, pos = decode_request_header(raw)
        expected, _ = t.read_nullable_string(raw, 8)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 1, 42, expected)
        assert raw[pos:] == b"rest"
    assert decode_request_header(_header(3, 1, 42, b"caf\xe9"))[0].client_id == "caf\ufffd"


@pytest.mark.parametrize("raw", [
    b"\x00\x03\x00",  # shorter than the fixed part
    _header(3, 1, 42, b"abcdef")[:-2],  # the client id runs past the end
    struct.pack(">hhih", 3, 1, 42, -5),  # a negative length other than null
])
def test_a_short_or_bad_header_is_a_decode_error(raw: bytes):
    with pytest.raises(DecodeError):
        decode_request_header(raw)


def test_a_flexible_header_keeps_its_tagged_fields():
    raw = _header(1, 12, 7, b"c") + bytes([1, 5, 2]) + b"ab" + b"body"  # Fetch v12: header v2
    header, pos = decode_request_header(raw)
    assert header.unknown_tags == {5: b"ab"} and raw[pos:] == b"body"


def test_only_versions_a_schema_defines_are_remembered():
    before = len(_REQUEST_HEADER_VERSIONS)
    assert request_header_version(30_000, 7) == 1
    assert request_header_version(1, 30_000) == 1
    assert len(_REQUEST_HEADER_VERSIONS) == before
    assert request_header_version(1, 12) == 2 and (1, 12) in _REQUEST_HEADER_VERSIONS


def test_a_tagged_struct_is_written_only_when_it_differs_from_its_default():
    R = fetch.RESPONSE

    def encoded(**tagged: object) -> bytes:
        part = R.PartitionData(partition_index=0, high_watermark=1, records=b"", **tagged)
        return bytes(encode(R, 12, R(responses=[R.FetchableTopicResponse(topic="t", partitions=[part])])))

    plain = encoded()
    leader = encoded(current_leader=R.LeaderIdAndEpoch(leader_id=3, leader_epoch=-1))  # one field changed
    epoch = encoded(diverging_epoch=R.EpochEndOffset(epoch=-1, end_offset=9))
    assert len(leader) > len(plain) and len(epoch) > len(plain)
    assert decode(R, 12, leader).responses[0].partitions[0].current_leader.leader_id == 3
    assert decode(R, 12, epoch).responses[0].partitions[0].diverging_epoch.end_offset == 9
    assert encoded(current_leader=R.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)) == plain  # the default: skipped
