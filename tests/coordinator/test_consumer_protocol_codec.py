"""The embedded consumer protocol as the online migration reads and writes it (consumer_protocol.py):
a classic member's ConsumerProtocolSubscription (v0-v3) and the ConsumerProtocolAssignment it is
answered with in SyncGroup, byte for byte as Kafka's ConsumerProtocol lays them out."""

from __future__ import annotations

import struct

import pytest

from minibroker.coordinator.group.consumer_protocol import (
    parse_assignment,
    parse_subscription,
    protocol_version,
    serialize_assignment,
    subscription_topics,
)


def _str(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_subscription_versions() -> None:
    v0 = struct.pack(">hi", 0, 2) + _str("a") + _str("b") + struct.pack(">i", -1)
    s = parse_subscription(v0)
    assert (s.version, s.topics, s.user_data, s.owned, s.generation, s.rack_id) == (0, ["a", "b"], None, {}, -1, None)
    v3 = (struct.pack(">hi", 3, 1) + _str("a") + struct.pack(">i", 2) + b"ud"
          + struct.pack(">i", 1) + _str("a") + struct.pack(">iii", 2, 0, 3) + struct.pack(">i", 7) + _str("r1"))
    s = parse_subscription(v3)
    assert (s.version, s.topics, s.user_data, s.owned, s.generation, s.rack_id) == (3, ["a"], b"ud", {"a": {0, 3}},
                                                                                    7, "r1")
    assert subscription_topics(v3) == ["a"] and protocol_version(v3) == 3
    with pytest.raises(ValueError):
        parse_subscription(v3[:9])


def test_assignment_round_trip_and_layout() -> None:
    data = serialize_assignment({"t": {2, 0}, "empty": set()}, 1)
    # version, one topic, "t", two partitions (sorted), null user data
    assert data == struct.pack(">hi", 1, 1) + _str("t") + struct.pack(">iii", 2, 0, 2) + struct.pack(">i", -1)
    assert parse_assignment(data) == ({"t": {0, 2}}, None)
    assert serialize_assignment({}, 9)[:2] == struct.pack(">h", 3)  # capped at the newest version
