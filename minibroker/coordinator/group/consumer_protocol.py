"""The topics in a consumer's group subscription (the "consumer" embedded protocol).

A JoinGroup from a Kafka consumer carries, per assignor, an opaque ConsumerProtocolSubscription:
int16 version, then the version-0 fields every later version starts with: an array (int32 count)
of topic names (int16-length strings), user data, and in later versions owned partitions,
generation and rack. The coordinator reads only the topic list, with the version-0 layout, as
Kafka's ClassicGroup.computeSubscribedTopics does, so future versions parse too. It needs them
for OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC) and offset expiry of unsubscribed topics.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


def subscription_topics(metadata: bytes | bytearray | memoryview) -> list[str]:
    """Topic names of a serialized ConsumerProtocolSubscription; ValueError if malformed."""
    buf = bytes(metadata)
    try:
        (version,) = struct.unpack_from(">h", buf, 0)
        if version < 0:
            raise ValueError(f"negative consumer protocol version {version}")
        (count,) = struct.unpack_from(">i", buf, 2)
        if count < 0 or count > len(buf):
            raise ValueError(f"bad topic count {count}")
        pos = 6
        topics = []
        for _ in range(count):
            (n,) = struct.unpack_from(">h", buf, pos)
            pos += 2
            if n < 0 or pos + n > len(buf):
                raise ValueError("truncated topic name")
            topics.append(buf[pos:pos + n].decode("utf-8"))
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"malformed consumer subscription: {e}") from None


# -- the full subscription and the assignment, for classic members of a consumer group --------
# (Kafka: ConsumerProtocolSubscription v0-3 and ConsumerProtocolAssignment v0-3; the later
# versions only append fields, so a reader of version N reads what it knows and stops.)

@dataclass(slots=True)
class Subscription:
    version: int
    topics: list[str]
    user_data: bytes | None
    owned: dict[str, set[int]]  # v1+
    generation: int  # v2+, -1 when absent
    rack_id: str | None  # v3+


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def string(self, nullable: bool = False) -> str | None:
        n = self.unpack(">h")
        if n < 0:
            if nullable:
                return None
            raise ValueError("null string")
        if self.pos + n > len(self.buf):
            raise ValueError("truncated string")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.unpack(">i")
        if n < 0:
            return None
        if self.pos + n > len(self.buf):
            raise ValueError("truncated bytes")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def count(self) -> int:
        n = self.unpack(">i")
        if n > len(self.buf):
            raise ValueError(f"bad array length {n}")
        return max(n, 0)

    @property
    def left(self) -> int:
        return len(self.buf) - self.pos


def _topic_partitions(r: _Reader) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for _ in range(r.count()):
        topic = r.string() or ""
        out.setdefault(topic, set()).update(r.unpack(">i") for _ in range(r.count()))
    return out


def parse_subscription(metadata: bytes | bytearray | memoryview) -> Subscription:
    """Decode a ConsumerProtocolSubscription; ValueError if malformed."""
    r = _Reader(bytes(metadata))
    try:
        version = r.unpack(">h")
        if version < 0:
            raise ValueError(f"negative consumer protocol version {version}")
        topics = [r.string() or "" for _ in range(r.count())]
        user_data = r.bytes_()
        owned: dict[str, set[int]] = {}
        generation, rack = -1, None
        if version >= 1 and r.left:
            owned = _topic_partitions(r)
        if version >= 2 and r.left:
            generation = r.unpack(">i")
        if version >= 3 and r.left:
            rack = r.string(nullable=True)
        return Subscription(version, topics, user_data, owned, generation, rack)
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"malformed consumer subscription: {e}") from None


def protocol_version(metadata: bytes | bytearray | memoryview) -> int:
    """The version a subscription was written at: the assignment is answered at the same one
    (Kafka: ConsumerProtocol.deserializeVersion)."""
    buf = bytes(metadata)
    if len(buf) < 2:
        raise ValueError("consumer protocol metadata shorter than its version")
    (version,) = struct.unpack_from(">h", buf, 0)
    return int(version)


def parse_assignment(data: bytes | bytearray | memoryview) -> tuple[dict[str, set[int]], bytes | None]:
    """Decode a ConsumerProtocolAssignment: (partitions by topic, user data); ValueError if malformed."""
    r = _Reader(bytes(data))
    try:
        version = r.unpack(">h")
        if version < 0:
            raise ValueError(f"negative consumer protocol version {version}")
        partitions = _topic_partitions(r)
        user_data = r.bytes_() if r.left else None
        return partitions, user_data
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"malformed consumer assignment: {e}") from None


def serialize_assignment(partitions: dict[str, set[int]], version: int) -> bytes:
    """A ConsumerProtocolAssignment without user data (every version up to 3 has the same fields)."""
    out = bytearray(struct.pack(">hi", min(max(version, 0), 3), len([t for t, ps in partitions.items() if ps])))
    for topic, ps in sorted(partitions.items()):
        if not ps:
            continue
        name = topic.encode("utf-8")
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(ps))
        for p in sorted(ps):
            out += struct.pack(">i", p)
    out += struct.pack(">i", -1)  # null user data
    return bytes(out)
