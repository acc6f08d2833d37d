"""The `_schemas` topic: the registry's state as records, in the format of Confluent's registry
(io.confluent.kafka.schemaregistry.storage: SchemaRegistryKey/Value and their subclasses), so that
Confluent's registry or Karapace could take over the topic, and ours theirs.

Theory of operation. One partition, compacted, keyed by what a record is about; the newest record
of a key is its state, a tombstone (null value) deletes it:

  {"keytype":"SCHEMA","subject":S,"version":V,"magic":1} -> {"subject","version","id","schemaType",
      "schema","references","deleted"}  (schemaType left out for AVRO, as Confluent writes it)
  {"keytype":"CONFIG","subject":S|null,"magic":0}       -> {"compatibilityLevel": LEVEL}
  {"keytype":"MODE","subject":S|null,"magic":0}         -> {"mode": MODE}
  {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}    -> {"subject":S,"version":V} (soft delete up to V)
  {"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}     -> {"subject":S} (a hard delete, Confluent 7+)
  {"keytype":"NOOP","magic":0}                          -> null (readers' sync marker; skipped)

Keys are written with Confluent's field order and no spaces, so a key compacts with the same key
written by Confluent. Records go through the CoordinatorPartitionWriter (one batch per write, into
ReplicaManager.append, as the coordinators' stores write theirs) and are read back from the log, from
its start at start-up, then from where the registry left off before each request, as Confluent's and
Karapace's readers tail the topic (another writer's records, a Karapace beside us or a restore tool,
become state too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from minibroker.config import ConfigValue
from minibroker.config.definitions import as_int
from minibroker.coordinator.runtime.coordinator_loader import LOAD_READ_BYTES
from minibroker.coordinator.runtime.partition_writer import CoordinatorPartitionWriter
from minibroker.replica_manager import ReplicaManager
from minibroker.schema_registry import errors
from minibroker.topics import Topic, TopicRegistry
from minibroker_protocol.records.v2 import decode_batches
from minibroker_storage.clock import Clock

log = logging.getLogger("minibroker.schema_registry")

TOPIC = "_schemas"  # Confluent's kafkastore.topic and Karapace's topic_name default
# Confluent creates _schemas compacted with one partition (KafkaStore.createOrVerifySchemaTopic)
TOPIC_CONFIGS: dict[str, ConfigValue] = {"cleanup.policy": ["compact"]}
JsonObject = dict[str, object]
RECORD_OVERHEAD = 61 + 32  # a batch header and a record's own varints and attributes, at most


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def subject_key(keytype: str, subject: str | None) -> bytes:
    """CONFIG, MODE (subject None: the global one), DELETE_SUBJECT, CLEAR_SUBJECT."""
    return _dump({"keytype": keytype, "subject": subject, "magic": 0})


def _dump(value: JsonObject) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class SchemaLog:
    """Writes and replays the `_schemas` topic (created, compacted, on first use)."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, clock: Clock) -> None:
        self.topics = topics
        self.clock = clock
        self.replica_manager = replica_manager
        self.writer = CoordinatorPartitionWriter(topics, replica_manager)

    def check_leader(self) -> None:
        """Writes go to the leader of _schemas-0 only (Confluent elects one registry leader and forwards
        writes to it; here the registry of the partition's leader is that one). A follower's registry
        serves reads from its replica and answers writes 50003, naming the leader."""
        part = self.replica_manager.get_partition(TOPIC, 0)
        if part is not None and part.leader_id != self.replica_manager.node_id:
            raise errors.RegistryError(500, 50003, f"Error while forwarding the request to the leader: this broker "
                                                   f"(node {self.replica_manager.node_id}) does not lead {TOPIC}-0; "
                                                   f"node {part.leader_id} does: send writes to its schema registry")

    def ensure_topic(self) -> Topic:
        topic = self.topics.get(TOPIC)
        return topic if topic is not None else self.topics.create(TOPIC, 1, dict(TOPIC_CONFIGS))

    def max_record_bytes(self) -> int:
        return as_int("max.message.bytes", self.ensure_topic().config.get("max.message.bytes", 1048588))

    def check_fits(self, size: int) -> None:
        """Refuse (42209) a record of about `size` bytes that the topic cannot hold, before anything
        is parsed or written: a schema too large to store is refused whole, and early."""
        limit = self.max_record_bytes()
        if size + RECORD_OVERHEAD > limit:
            raise errors.RegistryError(422, 42209, f"Schema is too large: {size} bytes in _schemas, whose records are "
                                                   f"at most {limit} bytes (max.message.bytes)")

    def write(self, records: list[tuple[bytes, JsonObject | None]]) -> int:
        """Append `records` (key, value or None for a tombstone) in one batch; their first offset.
        A record the topic cannot hold is refused before anything is written (42209)."""
        encoded = [(k, None if v is None else _dump(v)) for k, v in records]
        self.check_fits(sum(len(k) + len(v or b"") for k, v in encoded))
        self.check_leader()
        self.ensure_topic()
        try:
            return self.writer.append(TOPIC, 0, encoded, timestamp=self.clock())
        except Exception as e:  # the log refused or failed: nothing was applied, the client gets 50001
            log.exception("writing to %s failed", TOPIC)
            raise errors.store_error(f"Error while writing to {TOPIC}: {e}") from e

    def topic_id(self) -> object:
        """The topic's id (None before it exists): another id means the topic was deleted and made anew."""
        topic = self.topics.get(TOPIC)
        return topic.topic_id if topic is not None else None

    def end_offset(self) -> int:
        topic = self.topics.get(TOPIC)
        return topic.partitions[0].log_end_offset if topic is not None and 0 in topic.partitions else 0

    def read_from(self, offset: int) -> Iterator[tuple[int, JsonObject, JsonObject | None]]:
        """The records from `offset` to the end, in log order, each with the offset after it, keys
        and values decoded (Confluent's and Karapace's readers tail the topic the same way: records
        other writers append are state too). A record that is not JSON or has no keytype (not
        written by a registry) is skipped with a warning; control batches are skipped."""
        topic = self.topics.get(TOPIC)
        if topic is None or 0 not in topic.partitions:
            return
        lg = topic.partitions[0]
        offset, end = max(offset, lg.log_start_offset), lg.log_end_offset
        while offset < end:
            info = lg.read(offset, LOAD_READ_BYTES, max_offset=end)
            if info.region is None:
                return
            batches = decode_batches(info.region.read_all())
            if not batches:
                return
            for batch in batches:
                for r in [] if batch.is_control else batch.records:
                    if r.offset >= offset:
                        decoded = _decode(r.key, r.value)
                        if decoded is not None:
                            yield r.offset + 1, decoded[0], decoded[1]
                offset = max(offset, batch.next_offset)
                yield offset, {"keytype": "NOOP"}, None  # the position moves past skipped records too


def _decode(key: bytes | None, value: bytes | None) -> tuple[JsonObject, JsonObject | None] | None:
    if key is None:
        return None
    try:
        k = json.loads(key)
        v = json.loads(value) if value is not None else None
    except (ValueError, RecursionError):
        log.warning("skipping a record of %s that is not JSON", TOPIC)
        return None
    if not isinstance(k, dict) or "keytype" not in k or not (v is None or isinstance(v, dict)):
        log.warning("skipping a record of %s without a registry key: %r", TOPIC, key)
        return None
    return k, v
