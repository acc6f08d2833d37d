"""One directory of `log.dirs` (Kafka: a LogManager log dir with its own `.lock`,
meta.properties, checkpoints and clean-shutdown marker).

Kafka keeps the offset checkpoints per directory (LogManager.recoveryPointCheckpoints is a map
from directory to file), so a partition's recovery point lives next to it and a directory can
be moved, lost or taken offline without touching the others' files. `offline` is Kafka's
LogDirFailureChannel verdict: set once an I/O error hit the directory, never cleared while the
broker runs (Kafka brings a directory back only with a restart)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from minibroker_storage.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from minibroker_storage.file_lock import FileLock


@dataclass(eq=False)
class LogDir:
    path: Path
    lock: FileLock | None = None
    directory_id: str = ""
    offline: bool = False
    recovery_points: OffsetCheckpointFile = field(init=False)
    log_start_offsets: OffsetCheckpointFile = field(init=False)
    high_watermarks: OffsetCheckpointFile = field(init=False)
    cleaner_offsets: OffsetCheckpointFile = field(init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.recovery_points = OffsetCheckpointFile(self.path / RECOVERY_POINT_CHECKPOINT_FILE)
        self.log_start_offsets = OffsetCheckpointFile(self.path / LOG_START_OFFSET_CHECKPOINT_FILE)
        self.high_watermarks = OffsetCheckpointFile(self.path / REPLICATION_OFFSET_CHECKPOINT_FILE)
        self.cleaner_offsets = OffsetCheckpointFile(self.path / CLEANER_OFFSET_CHECKPOINT_FILE)

    def holds(self, log_path: Path) -> bool:
        """The partition directory `log_path` lies in this log dir."""
        return log_path.parent == self.path
