"""Leader epoch -> first offset of that epoch, kept in `leader-epoch-checkpoint`
(Kafka: LeaderEpochFileCache, KIP-101/KIP-279).

Entries are (epoch, start offset), both increasing. A new epoch is recorded when a batch stamped
with it is appended (or when the broker becomes leader). OffsetForLeaderEpoch answers with
`end_offset_for`; ListOffsets and Fetch use `epoch_for_offset`. When the log start moves
(retention, DeleteRecords) the entries before it collapse into one starting at the new start;
recovery drops entries past the recovered end.
"""

from __future__ import annotations

import logging
from pathlib import Path

from minibroker_storage.checkpoint import CorruptCheckpoint, LeaderEpochCheckpointFile

logger = logging.getLogger("minibroker_storage.leader_epoch")

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochFileCache:
    def __init__(self, path: Path):
        self.checkpoint = LeaderEpochCheckpointFile(path)
        self._epochs: list[tuple[int, int]] = []
        try:
            for epoch, start in self.checkpoint.read():
                self._assign(epoch, start)
        except (CorruptCheckpoint, ValueError) as e:
            logger.warning("ignoring unreadable %s: %s", path, e)
            self._epochs = []

    # -- queries -------------------------------------------------------------------------------
    def entries(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1][0] if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in which `offset` was written, if known."""
        previous = None
        for epoch, start in self._epochs:
            if start == offset:
                return epoch
            if start > offset:
                return previous
            previous = epoch
        return previous

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch: the largest epoch <= requested and the
        start offset of the next epoch (or the log end offset for the latest epoch)."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1][0] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next(((e, s) for e, s in self._epochs if e > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e, s in self._epochs:
            if e <= requested_epoch:
                floor = (e, s)
        return (floor[0] if floor else requested_epoch), higher[1]

    # -- changes -------------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; writes the file when anything changed."""
        if self._assign(epoch, start_offset):
            self.write()
            return True
        return False

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry ({epoch}, {start_offset})")
        if self._epochs:
            last_epoch, last_start = self._epochs[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return False
        # drop entries that the new one contradicts: same or later epoch, or a start at or after it
        while self._epochs and (self._epochs[-1][0] >= epoch or self._epochs[-1][1] >= start_offset):
            removed = self._epochs.pop()
            if removed[1] != start_offset:
                logger.warning("new epoch entry (%d, %d) truncated conflicting entry %s", epoch, start_offset, removed)
        self._epochs.append((epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was cut there)."""
        before = len(self._epochs)
        while self._epochs and end_offset >= 0 and self._epochs[-1][1] >= end_offset:
            self._epochs.pop()
        if len(self._epochs) != before:
            self.write()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the latest entry at or before it moves there."""
        removed = [e for e in self._epochs if e[1] <= start_offset]
        if not removed:
            return
        keep = [e for e in self._epochs if e[1] > start_offset]
        self._epochs = [(removed[-1][0], start_offset)] + keep
        if removed != [(removed[-1][0], start_offset)]:
            self.write()

    def clear(self) -> None:
        self._epochs = []
        self.write()

    def write(self) -> None:
        if self.checkpoint.path.parent.exists():  # the directory may be renamed for deletion
            self.checkpoint.write(self._epochs)
