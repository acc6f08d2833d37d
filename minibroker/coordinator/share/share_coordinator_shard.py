"""__share_group_state: where share partitions' delivery state lives (KIP-932; Kafka's
ShareCoordinatorShard + ShareCoordinatorRecordSerde).

Theory of operation: each share partition (group, topic id, partition) keys its records; the key
is an int16 record type (0 ShareSnapshot, 1 ShareUpdate) followed by the key struct, the value an
int16 version (0) followed by the value struct, as Kafka's share coordinator writes them, in
partition Utils.abs("group:topicId:partition".hashCode()) % share.coordinator.state.topic.num.partitions
(Kafka's SharePartitionKey.asCoordinatorKey), so `kafka-dump-log --share-group-state-decoder`
reads them. A snapshot carries the whole state (start offset and every in-flight state batch);
an update carries the start offset and the batches that changed. We write a snapshot on the first
write of a partition and every `SNAPSHOT_EVERY` updates after it, and updates in between (the
topic is compacted, and the two record types have different keys, so compaction keeps the last
of each; loading applies updates in log order on top of the last snapshot before them).

Records go through the coordinator runtime's store (runtime/coordinator_store.py: topic creation,
key -> partition, the one partition writer). Loading replays a partition in log order when this
broker becomes its leader (at start-up, every partition); resigning forgets its states.
"""

from __future__ import annotations

import base64
import binascii
import logging
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore, TopicConfigs
from minibroker.coordinator.share.share_partition import StateBatch
from minibroker_protocol import share_records as sr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import M, Schema

log = logging.getLogger("minibroker.coordinator.share_state")

TOPIC = "__share_group_state"
SNAPSHOT_KEY_TYPE = 0
UPDATE_KEY_TYPE = 1
VALUE_VERSION = 0
SNAPSHOT_EVERY = 500  # Kafka: share.coordinator.snapshot.update.records.per.snapshot

ShareKey = tuple[str, uuid.UUID, int]  # (group, topic id, partition)

if TYPE_CHECKING:
    ShareValue = sr.ShareSnapshotValue | sr.ShareUpdateValue  # what the two record types hold
_B = TypeVar("_B", "sr.ShareSnapshotValue.StateBatch", "sr.ShareUpdateValue.StateBatch")


@dataclass(slots=True)
class PersistedState:
    """The last persisted state of one share partition."""

    start_offset: int
    state_epoch: int = 0
    batches: list[StateBatch] = field(default_factory=list)
    create_timestamp: int = -1
    snapshot_epoch: int = 0
    updates_since_snapshot: int = 0


def coordinator_key(key: ShareKey) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey: "group:topicId:partition" (topic id in Kafka's
    URL-safe base64 form)."""
    tid = base64.urlsafe_b64encode(key[1].bytes).decode().rstrip("=")
    return f"{key[0]}:{tid}:{key[2]}"


def parse_coordinator_key(text: str) -> ShareKey | None:
    """The share key of a FindCoordinator key type 2 ("group:topicId:partition", the group may
    itself hold colons), or None when Kafka's SharePartitionKey.validate would refuse it."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or len(parts[1]) != 22:
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "==")
        partition = int(parts[2])
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16 or not parts[2].lstrip("-").isdigit():
        return None
    return parts[0], uuid.UUID(bytes=raw), partition


def encode_key(key_type: int, key: ShareKey) -> bytes:
    schema: Schema[sr.ShareSnapshotKey | sr.ShareUpdateKey] = (
        sr.SHARE_SNAPSHOT_KEY if key_type == SNAPSHOT_KEY_TYPE else sr.SHARE_UPDATE_KEY)
    out = bytearray(struct.pack(">h", key_type))
    out += encode(schema, 0, schema(group_id=key[0], topic_id=key[1], partition=key[2]))
    return bytes(out)


def _batches(make: Callable[..., _B], batches: list[StateBatch]) -> list[_B]:
    return [make(first_offset=b.first_offset, last_offset=b.last_offset,
                 delivery_state=b.state, delivery_count=b.delivery_count) for b in batches]


def decode_record(key: bytes, value: bytes | None) -> tuple[int, ShareKey, ShareValue | None] | None:
    """(record type, share key, value message or None for a tombstone), or None if not ours."""
    (key_type,) = struct.unpack_from(">h", key)
    if key_type not in (SNAPSHOT_KEY_TYPE, UPDATE_KEY_TYPE):
        return None
    kschema: Schema[sr.ShareSnapshotKey | sr.ShareUpdateKey] = (
        sr.SHARE_SNAPSHOT_KEY if key_type == SNAPSHOT_KEY_TYPE else sr.SHARE_UPDATE_KEY)
    k = decode(kschema, 0, key, 2)
    skey = (k.group_id, k.topic_id, k.partition)
    if value is None:
        return key_type, skey, None
    vschema: Schema[sr.ShareSnapshotValue | sr.ShareUpdateValue] = (
        sr.SHARE_SNAPSHOT_VALUE if key_type == SNAPSHOT_KEY_TYPE else sr.SHARE_UPDATE_VALUE)
    return key_type, skey, decode(vschema, VALUE_VERSION, value, 2)


def topic_configs(segment_bytes: int) -> TopicConfigs:
    """The configs __share_group_state is created with (compacted, share.coordinator.state.topic.segment.bytes)."""
    return {"cleanup.policy": ["compact"], "segment.bytes": segment_bytes, "compression.type": "producer"}


class ShareCoordinatorShard:
    """The persisted state of every share partition, written to and replayed from
    __share_group_state through the runtime's store (Kafka: ShareCoordinatorShard)."""

    def __init__(self, store: CoordinatorStore) -> None:
        self.store = store
        self.states: dict[ShareKey, PersistedState] = {}
        # the last leader epoch a share-partition leader read or wrote each state with (Kafka keeps
        # it in the records; ours carry 0), fencing an older leader (handlers/share_coordinator.py)
        self.leader_epochs: dict[ShareKey, int] = {}

    # -- writing -----------------------------------------------------------------------------
    def write(self, key: ShareKey, start_offset: int, state_epoch: int, batches: list[StateBatch],
              changed: list[StateBatch] | None = None) -> None:
        """Persist one share partition's state: a snapshot, or an update with `changed` (the
        batches that differ from the last write) when a snapshot is recent."""
        now = self.store.now_ms()
        prev = self.states.get(key)
        snapshot = (prev is None or changed is None or prev.state_epoch != state_epoch
                    or prev.updates_since_snapshot + 1 >= SNAPSHOT_EVERY)
        value: sr.ShareSnapshotValue | sr.ShareUpdateValue
        if snapshot:
            epoch = prev.snapshot_epoch + 1 if prev is not None else 0
            created = prev.create_timestamp if prev is not None and prev.create_timestamp >= 0 else now
            v = sr.SHARE_SNAPSHOT_VALUE
            value = v(snapshot_epoch=epoch, state_epoch=state_epoch, leader_epoch=0, start_offset=start_offset,
                      create_timestamp=created, write_timestamp=now, state_batches=_batches(v.StateBatch, batches))
            self._append(key, encode_key(SNAPSHOT_KEY_TYPE, key), v, value)
            self.states[key] = PersistedState(start_offset, state_epoch, list(batches), created, epoch, 0)
        else:
            assert prev is not None and changed is not None
            u = sr.SHARE_UPDATE_VALUE
            value = u(snapshot_epoch=prev.snapshot_epoch, leader_epoch=0, start_offset=start_offset,
                      state_batches=_batches(u.StateBatch, changed))
            self._append(key, encode_key(UPDATE_KEY_TYPE, key), u, value)
            prev.start_offset, prev.batches = start_offset, list(batches)
            prev.updates_since_snapshot += 1

    def delete(self, key: ShareKey) -> None:
        """Tombstones for both record types: the share partition's state is gone (DeleteGroups,
        DeleteShareGroupOffsets)."""
        if self.states.pop(key, None) is None:
            return
        self.store.append(coordinator_key(key), [(encode_key(t, key), None) for t in (SNAPSHOT_KEY_TYPE, UPDATE_KEY_TYPE)])

    def _append(self, key: ShareKey, kbytes: bytes, schema: Schema[M], value: M) -> None:
        vbytes = struct.pack(">h", VALUE_VERSION) + bytes(encode(schema, VALUE_VERSION, value))
        self.store.append(coordinator_key(key), [(kbytes, vbytes)])

    # -- loading -----------------------------------------------------------------------------
    def load(self) -> dict[ShareKey, PersistedState]:
        """Replay the topic: the last snapshot of each share partition with the updates after it."""
        self.states = {}
        for p in self.store.partitions():
            self.load_partition(p)
        return self.states

    def load_partition(self, partition: int) -> None:
        """Replay one partition of the topic on top of what is loaded."""
        for k, v in self.store.load_partition(partition):
            rec = decode_record(k, v) if k is not None else None
            if rec is not None:
                self._apply(*rec)

    def unload_partition(self, partition: int) -> None:
        """Forget the states kept in `partition` (its leadership moved away)."""
        for key in [k for k in self.states if self.store.partition_for(coordinator_key(k)) == partition]:
            del self.states[key]

    def _apply(self, key_type: int, key: ShareKey, value: ShareValue | None) -> None:
        if value is None:
            if key_type == SNAPSHOT_KEY_TYPE:
                self.states.pop(key, None)
            return
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in value.state_batches]
        if isinstance(value, sr.ShareSnapshotValue):  # the value of a SNAPSHOT_KEY_TYPE record
            self.states[key] = PersistedState(value.start_offset, value.state_epoch, batches,
                                              value.create_timestamp, value.snapshot_epoch, 0)
            return
        prev = self.states.get(key)
        if prev is None:
            return
        prev.start_offset = value.start_offset if value.start_offset >= 0 else prev.start_offset
        prev.batches = merge_batches(prev.batches, batches, prev.start_offset)
        prev.updates_since_snapshot += 1


def merge_batches(base: list[StateBatch], changed: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """`changed` over `base`, offset by offset, everything below `start_offset` dropped (Kafka:
    ShareCoordinatorShard's state-batch merge)."""
    per: dict[int, tuple[int, int]] = {}
    for b in (*base, *changed):
        for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
            per[off] = (b.state, b.delivery_count)
    out: list[StateBatch] = []
    for off in sorted(per):
        state, count = per[off]
        if out and out[-1].last_offset == off - 1 and out[-1].state == state and out[-1].delivery_count == count:
            out[-1].last_offset = off
        else:
            out.append(StateBatch(off, off, state, count))
    return out

