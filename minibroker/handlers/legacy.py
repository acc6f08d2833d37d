"""The old message formats at the broker's edge: Produce v0-2, Fetch v0-3, ListOffsets v0 (issue 7).

Not a handler module (it handles no API): the helpers Produce, Fetch and ListOffsets use when a
client or a topic speaks MessageSet v0/v1 (shared/seeds 000-002, 004).

Theory of operation. Apache Kafka 4.0 dropped these versions (KIP-896); minibroker keeps them
so that the seeds' formats can be seen working and old clients keep working.

* Stored format. A topic's `message.format.version` picks the magic its segments hold, as in
  Kafka 2.x (`record_version_for`): 0.8.x/0.9.x -> 0, 0.10.x -> 1, anything newer -> 2 (the
  default). `minibroker_protocol.records.convert.conform_produce`, called by the append validator
  (minibroker_storage.log_validator), brings what a producer sent to that format before it is stored: a
  v0/v1 message set for a magic-2 topic is up-converted to one RecordBatch v2 (Kafka 3.x
  behaviour); v2 batches for a magic 0/1 topic are down-converted into a message set (Kafka:
  LogValidator's conversion path, which refuses idempotent and transactional batches,
  UNSUPPORTED_FOR_MESSAGE_FORMAT, and records with headers); a v0 set for a v1 topic or the other
  way round is rewritten in the topic's magic. The log then validates and numbers the result.
* Fetch. A Fetch v0-1 reader understands magic 0 only, v2-3 magic 1 at most (Kafka:
  KafkaApis.handleFetchRequest). When the topic stores a newer magic, the fetched bytes are read
  into memory and down-converted (`fetch_records`), which gives up zero-copy: seed 002 explains
  that the broker can send a segment's bytes straight from the page cache only while the
  consumer reads the stored format. With message.downconversion.enable=false the partition gets
  UNSUPPORTED_VERSION instead. Fetch v4+ gets whatever is stored, v0/v1 included: modern clients
  still read message sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.config import record_version_for
from minibroker_protocol.records.convert import down_convert

if TYPE_CHECKING:
    from minibroker.metadata_cache import TopicImage
    from minibroker_storage.file_region import FileRegion

DEFAULT_FORMAT_VERSION = "3.0-IV1"


def stored_magic(topic: TopicImage) -> int:
    """The magic a topic's segments hold (its message.format.version)."""
    return record_version_for(str(topic.config.get("message.format.version", DEFAULT_FORMAT_VERSION)))


def fetch_magic(version: int) -> int:
    """The newest magic a Fetch version can carry: v0-1 magic 0, v2-3 magic 1, v4+ magic 2."""
    return 0 if version <= 1 else 1 if version <= 3 else 2


def fetch_records(region: FileRegion, *, stored: int, version: int, fetch_offset: int,
                  max_bytes: int | None = None) -> FileRegion | bytes:
    """What a Fetch of `version` returns for `region` of a topic storing magic `stored`: the
    region itself (zero-copy) when the reader understands that magic, else down-converted bytes,
    at most about `max_bytes` of them past the first record (the partition's fetch size)."""
    to_magic = fetch_magic(version)
    if stored <= to_magic:
        return region
    return down_convert(region.read_all(), to_magic, first_offset=fetch_offset, max_bytes=max_bytes)
