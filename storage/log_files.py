"""File and directory names of a Kafka data directory, and crash-safe small-file writes.

Facts from Kafka (LogFileUtils, LocalLog): a partition lives in `<topic>-<partition>/`; a
segment's files are named by its base offset in 20 digits plus a suffix; a file being deleted
gets `.deleted` appended, a partition directory being deleted is renamed
`<topic>-<partition>.<uuid hex>-delete`. Later issues add `.snapshot` (producer state),
`.txnindex` (aborted transactions) and `.cleaned`/`.swap` (compaction); the suffix table below
already knows them so that loading and deletion treat a segment's files as one set.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"  # a log being copied into another log dir (Kafka: UnifiedLog.FutureDirSuffix)

SEGMENT_FILE_SUFFIXES = (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)
INDEX_FILE_SUFFIXES = (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)


def filename_prefix_from_offset(offset: int) -> str:
    """`00000000000000000000`: offsets in 20 digits so that names sort in offset order."""
    return f"{offset:020d}"


def segment_file(dir: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    return dir / (filename_prefix_from_offset(base_offset) + suffix + extra)


def offset_from_file(path: Path | str) -> int:
    """The base offset a segment file is named by (the digits before the first dot)."""
    return int(Path(path).name.split(".", 1)[0])


def is_segment_file_name(name: str, suffix: str) -> bool:
    prefix, dot, rest = name.partition(".")
    return bool(dot) and len(prefix) == 20 and prefix.isdigit() and "." + rest == suffix


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def log_delete_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<uuid hex>-delete`, the topic cut so the name fits in 255 bytes."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: 255 - len(suffix)] + suffix


def log_future_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<uuid hex>-future` (Kafka: UnifiedLog.logFutureDirName)."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
    return topic[: 255 - len(suffix)] + suffix


def parse_topic_partition_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory name, or None if it is not one."""
    if name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX)):
        return None
    topic, dash, part = name.rpartition("-")
    if not dash or not topic or not part.isdigit():
        return None
    return topic, int(part)


def parse_log_dir_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory, also a `-future` or `-delete` one
    (Kafka: UnifiedLog.parseTopicPartitionName strips `.<uuid>-future`)."""
    if name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX)):
        base, dot, _ = name.rpartition(".")
        return parse_topic_partition_name(base) if dot else None
    return parse_topic_partition_name(name)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` durable (Kafka: Utils.flushDir)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `path` so that a crash leaves either the old or the new content: temp file, fsync,
    rename over the target, fsync the directory (Kafka: CheckpointFile.write +
    Utils.atomicMoveWithFallback)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
