"""__consumer_offsets record layouts (golden bytes) and the group -> partition mapping."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.coordinator.group.classic_group import ClassicGroup, Member
from minibroker.coordinator.group.records import (
    GroupMetadataRecord,
    OffsetAndMetadata,
    OffsetCommitRecord,
    decode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from minibroker.coordinator.runtime.coordinator_store import java_string_hash, partition_for


def s16(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def test_java_string_hash_golden_values():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    # The well-known string whose hashCode is Integer.MIN_VALUE; Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert partition_for("polygenelubricants", 50) == 0
    # Outside the BMP Java hashes the UTF-16 surrogate pair: 0xD83D * 31 + 0xDE00.
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00


@given(st.text(max_size=40), st.integers(min_value=1, max_value=200))
def test_partition_for_is_in_range_and_matches_the_formula(group, n):
    h = 0
    units = group.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i:i + 2], "big")) % (1 << 32)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    expected = (0 if signed == -(1 << 31) else abs(signed)) % n
    assert partition_for(group, n) == expected


def test_offset_commit_record_golden_bytes():
    key, value = offset_commit_record("g", "t", 3, OffsetAndMetadata(42, 7, "meta", 1700000000000))
    assert key == struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 3)
    # Value v3: offset, leader epoch, metadata, commit timestamp.
    assert value == struct.pack(">hqi", 3, 42, 7) + s16("meta") + struct.pack(">q", 1700000000000)
    rec = decode_record(key, value)
    assert rec == OffsetCommitRecord("g", "t", 3, OffsetAndMetadata(42, 7, "meta", 1700000000000, None))


def test_offset_commit_with_retention_uses_value_v1():
    key, value = offset_commit_record("g", "t", 0, OffsetAndMetadata(5, -1, "", 1000, 9000))
    # Value v1: offset, metadata, commit timestamp, expire timestamp (no leader epoch).
    assert value == struct.pack(">hq", 1, 5) + s16("") + struct.pack(">qq", 1000, 9000)
    assert decode_record(key, value).value == OffsetAndMetadata(5, -1, "", 1000, 9000)


def test_tombstones_decode_as_deletions():
    k, v = offset_commit_tombstone("g", "t", 1)
    assert v is None and decode_record(k, v) == OffsetCommitRecord("g", "t", 1, None)
    k, v = group_metadata_tombstone("g")
    assert k == struct.pack(">h", 2) + s16("g")
    assert decode_record(k, v) == GroupMetadataRecord("g", None)


def test_group_metadata_record_golden_bytes():
    g = ClassicGroup("grp", generation_id=4, protocol_type="consumer", protocol_name="range",
                     current_state_timestamp=123)
    g.add(Member("m-1", "inst", "cid", "/127.0.0.1", 30000, 10000, "consumer", [("range", b"SUB")]))
    key, value = group_metadata_record(g, {"m-1": b"ASSIGN"})
    assert key == struct.pack(">h", 2) + s16("grp")
    member = (s16("m-1") + s16("inst") + s16("cid") + s16("/127.0.0.1") + struct.pack(">ii", 30000, 10000)
              + struct.pack(">i", 3) + b"SUB" + struct.pack(">i", 6) + b"ASSIGN")
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 4) + s16("range") + s16("m-1")
                + struct.pack(">q", 123) + struct.pack(">i", 1) + member)
    assert value == expected
    rec = decode_record(key, value)
    assert rec.group == "grp" and rec.value.generation == 4 and rec.value.leader == "m-1"
    m = rec.value.members[0]
    assert (m.member_id, m.group_instance_id, bytes(m.subscription), bytes(m.assignment)) == \
        ("m-1", "inst", b"SUB", b"ASSIGN")


def test_empty_group_metadata_has_null_protocol_and_leader():
    g = ClassicGroup("e", current_state_timestamp=5)
    _, value = group_metadata_record(g, {})
    # protocol type "", generation 0, null protocol, null leader, timestamp, no members.
    assert value == struct.pack(">h", 3) + s16("") + struct.pack(">ihhqi", 0, -1, -1, 5, 0)


def test_unknown_record_types_are_skipped_and_garbage_is_refused():
    assert decode_record(struct.pack(">h", 3) + s16("x"), b"\x00\x00") is None  # KIP-848 records
    with pytest.raises(ValueError):
        decode_record(struct.pack(">h", 1) + b"\x00", None)
    with pytest.raises(ValueError):
        decode_record(None, None)
