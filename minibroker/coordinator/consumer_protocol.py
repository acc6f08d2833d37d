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
