"""Kafka's small text files of a data directory, byte for byte in Kafka's formats.

Checkpoint files (Kafka: server-common CheckpointFile, OffsetCheckpointFile,
LeaderEpochCheckpointFile) are three parts of text, one item a line:

    0                  <- version
    2                  <- number of entries
    my-topic 0 1234    <- entries: "topic partition offset" (offset checkpoints)
    my-topic 1 99         or "epoch startOffset" (leader-epoch-checkpoint)

`partition.metadata` is `version: 0\\ntopic_id: <base64 topic id>` (PartitionMetadata.encode,
no final newline). `meta.properties` is a Java properties file with version=1, cluster.id and
node.id (KRaft MetaProperties v1). `.kafka_cleanshutdown` holds JSON
`{"version":0,"brokerEpoch":N}` (CleanShutdownFileHandler). Every write is atomic: temp file,
fsync, rename, fsync of the directory.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from minibroker_storage.log_files import atomic_write

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
META_PROPERTIES_FILE = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0


class CorruptCheckpoint(ValueError):
    """A checkpoint file that does not parse; Kafka logs it and starts from defaults."""


# -- generic checkpoint ---------------------------------------------------------------------


def write_checkpoint(path: Path, version: int, lines: Iterable[str]) -> None:
    lines = list(lines)
    text = f"{version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    atomic_write(path, text.encode())


def read_checkpoint(path: Path, version: int) -> list[list[str]]:
    """The entries of a checkpoint file, each split on whitespace; [] if the file is missing."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if not lines:
        return []
    try:
        found = int(lines[0])
    except ValueError:
        raise CorruptCheckpoint(f"Malformed line in checkpoint file [{path}]: {lines[0]}") from None
    if found != version:
        raise CorruptCheckpoint(f"Unrecognised version:{found}, expected version: {version} "
                                f"in checkpoint file at: {path}")
    if len(lines) < 2:
        return []
    try:
        expected = int(lines[1])
    except ValueError:
        raise CorruptCheckpoint(f"Malformed line in checkpoint file [{path}]: {lines[1]}") from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != expected:
        raise CorruptCheckpoint(f"Expected [{expected}] entries in checkpoint file [{path}], "
                                f"but found only [{len(entries)}]")
    return entries


class OffsetCheckpointFile:
    """`topic partition offset` lines: recovery points, log start offsets, high watermarks."""

    def __init__(self, path: Path, version: int = OFFSET_CHECKPOINT_VERSION):
        self.path = path
        self.version = version

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        write_checkpoint(self.path, self.version,
                         (f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())))

    def read(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for parts in read_checkpoint(self.path, self.version):
            if len(parts) != 3:
                raise CorruptCheckpoint(f"Malformed line in checkpoint file [{self.path}]: {' '.join(parts)}")
            try:
                out[(parts[0], int(parts[1]))] = int(parts[2])
            except ValueError:
                raise CorruptCheckpoint(
                    f"Malformed line in checkpoint file [{self.path}]: {' '.join(parts)}") from None
        return out


class LeaderEpochCheckpointFile:
    """`epoch startOffset` lines, in epoch order."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        write_checkpoint(self.path, LEADER_EPOCH_CHECKPOINT_VERSION, (f"{e} {o}" for e, o in entries))

    def read(self) -> list[tuple[int, int]]:
        out = []
        for parts in read_checkpoint(self.path, LEADER_EPOCH_CHECKPOINT_VERSION):
            if len(parts) != 2:
                raise CorruptCheckpoint(f"Malformed line in checkpoint file [{self.path}]: {' '.join(parts)}")
            out.append((int(parts[0]), int(parts[1])))
        return out


# -- topic ids (Kafka's Uuid prints as URL-safe base64 without padding) ----------------------


def uuid_to_kafka(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka(s: str) -> uuid.UUID:
    s = s.strip()
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def random_kafka_uuid() -> uuid.UUID:
    """A random id that is neither Kafka's reserved ZERO/METADATA ids nor prints with a leading
    '-' (Kafka: Uuid.randomUuid; a leading dash would look like a command-line option)."""
    while True:
        u = uuid.uuid4()
        if u.int > 1 and not uuid_to_kafka(u).startswith("-"):
            return u


class PartitionMetadataFile:
    """`partition.metadata`: the topic id of the partition directory."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, topic_id: uuid.UUID) -> None:
        text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_kafka(topic_id)}"
        atomic_write(self.path, text.encode())

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> uuid.UUID:
        lines = self.path.read_text("utf-8").splitlines()
        try:
            key, version = lines[0].split()
            if key != "version:" or int(version) < PARTITION_METADATA_VERSION:
                raise ValueError(lines[0])
            key, value = lines[1].split()
            if key != "topic_id:":
                raise ValueError(lines[1])
            topic_id = uuid_from_kafka(value)
        except (IndexError, ValueError) as e:
            raise CorruptCheckpoint(f"Malformed partition metadata file [{self.path}]: {e}") from None
        if topic_id.int == 0:
            raise CorruptCheckpoint(f"Invalid topic ID in partition metadata file ({self.path})")
        return topic_id


# -- meta.properties -------------------------------------------------------------------------


def write_properties(path: Path, props: dict[str, str]) -> None:
    """A Java properties file as Properties.store writes it: an empty comment, a date comment,
    then key=value lines (our values need no escaping: ids, numbers)."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    body = "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in sorted(props.items()))
    atomic_write(path, body.encode("utf-8"))


def read_properties(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in path.read_text("utf-8").splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            out[line] = ""
        else:
            out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


# -- clean shutdown marker ---------------------------------------------------------------------


class CleanShutdownFile:
    """`.kafka_cleanshutdown`: present only between a clean shutdown and the next startup."""

    def __init__(self, data_dir: Path):
        self.path = data_dir / CLEAN_SHUTDOWN_FILE

    def exists(self) -> bool:
        return self.path.exists()

    def write(self, broker_epoch: int = -1) -> None:
        atomic_write(self.path, json.dumps({"version": 0, "brokerEpoch": broker_epoch},
                                           separators=(",", ":")).encode())

    def read_broker_epoch(self) -> int | None:
        """The broker epoch written at the clean shutdown, None when the file is missing or not
        version 0 JSON with an integer `brokerEpoch` (Kafka: CleanShutdownFileHandler.read's
        empty OptionalLong). A KRaft broker sends it as PreviousBrokerEpoch (KIP-966)."""
        try:
            content = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(content, dict) or content.get("version") != 0:
            return None
        epoch = content.get("brokerEpoch")
        return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
