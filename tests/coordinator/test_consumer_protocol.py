"""Reading the topics out of a ConsumerProtocolSubscription."""

from __future__ import annotations

import struct

import pytest

from minibroker.coordinator.group.consumer_protocol import subscription_topics


def subscription(version: int, topics: list[str], tail: bytes = b"") -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1) + tail  # null user data, then later versions' fields


def test_v0_subscription():
    assert subscription_topics(subscription(0, ["a", "bb"])) == ["a", "bb"]


def test_later_versions_parse_with_the_v0_prefix():
    # v3: owned partitions, generation id and rack id follow; they are not needed here.
    tail = struct.pack(">i", 0) + struct.pack(">i", 7) + struct.pack(">h", -1)
    assert subscription_topics(subscription(3, ["orders"], tail)) == ["orders"]


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x02\x00\x01a", b"\xff\xff\x00\x00\x00\x00"])
def test_malformed_subscriptions_raise(data):
    with pytest.raises(ValueError):
        subscription_topics(data)
