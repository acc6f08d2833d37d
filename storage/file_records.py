"""A segment's `.log` file: batches back to back, exactly as they arrived (Kafka: FileRecords).

Appends write at the end with `pwrite`, so the page cache holds them at once and `flush` makes
them durable. Reads never copy record bytes into Python: lookups read a batch's 61-byte header
with `pread`, and fetches hand out a `FileRegion` for `sendfile`.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

from minibroker_protocol.records.batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    V2_HEADER_SIZE,
    BatchView,
    InvalidBatch,
)
from minibroker_storage.file_region import FileRegion

_MIN_HEADER = LOG_OVERHEAD + 5  # offset, size, epoch/crc, magic: enough to know the entry's format
# Header scans (an offset lookup walks from the index entry below the target, at most about
# index.interval.bytes = 4096 bytes of batches) read this much at a time instead of one pread per
# header: a fetch at the log end of 100 B batches walked a dozen headers twice (issue 22).
_SCAN_CHUNK = 8 * 1024
_OFFSET_LENGTH = struct.Struct(">qi")  # a v2 batch's base offset and length
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23  # after base offset, length, leader epoch, magic, crc, attributes


class FileRecords:
    def __init__(self, path: Path, fd: int, size: int):
        self.path = path
        self.fd = fd
        self._size = size
        self._lock = threading.Lock()  # flush vs close/truncate from another thread
        self._closed = False

    @classmethod
    def open(cls, path: Path) -> FileRecords:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return cls(path, fd, os.fstat(fd).st_size)

    @property
    def size(self) -> int:
        return self._size

    # -- writes ----------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end; on a failed write, cut the file back so no partial batch stays."""
        view = memoryview(data)
        start = self._size
        pos = start
        try:
            while view:
                n = os.pwrite(self.fd, view, pos)
                pos += n
                view = view[n:]
        except OSError:
            try:
                os.ftruncate(self.fd, start)
            except OSError:
                pass  # recovery at the next start cuts the torn tail
            raise
        self._size = pos
        return pos - start

    def truncate_to(self, size: int) -> int:
        """Cut the file to `size` bytes; returns how many bytes went."""
        if size < 0 or size > self._size:
            raise ValueError(f"Attempt to truncate log segment {self.path} to {size} bytes failed, "
                             f"size of this log segment is {self._size} bytes.")
        with self._lock:
            os.ftruncate(self.fd, size)
        removed = self._size - size
        self._size = size
        return removed

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                os.fsync(self.fd)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self.fd)

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False

    def last_modified_ms(self) -> int:
        return os.stat(self.path).st_mtime_ns // 1_000_000

    # -- reads -----------------------------------------------------------------------------------
    def read(self, position: int, size: int) -> bytes:
        return FileRegion(self.fd, position, max(0, min(size, self._size - position))).read_all()

    def slice(self, position: int, size: int) -> FileRegion:
        return FileRegion(self.fd, position, size)

    def header_at(self, position: int, end: int | None = None) -> BatchView | None:
        """The header of the batch starting at `position` if the whole batch lies before `end`
        (default: the file's size), else None (Kafka: FileLogInputStream.nextBatch)."""
        end = self._size if end is None else end
        if end - position < _MIN_HEADER:
            return None
        buf = os.pread(self.fd, V2_HEADER_SIZE, position)
        if len(buf) < _MIN_HEADER:
            return None
        try:
            view = BatchView(buf)  # refuses an unknown magic, or a v2 header cut short by EOF
        except InvalidBatch:
            return None
        if view.batch_length < 0 or position + view.size > end:
            return None
        return view

    def batches_from(self, position: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchView]]:
        """(position, header) of each whole batch from `position` on; headers only, no CRC check."""
        while True:
            view = self.header_at(position, end)
            if view is None:
                return
            yield position, view
            position += view.size

    def search_for_offset_with_size(self, target_offset: int, start_position: int) -> tuple[int, BatchView] | None:
        """The first batch at or after `start_position` whose last offset is >= target_offset:
        the batch that holds the target (Kafka: FileRecords.searchForOffsetWithSize)."""
        position, view = self._scan(start_position, self._size, target_offset)
        return None if view is None else (position, view)

    def whole_batches_end(self, position: int, end: int) -> int:
        """The end of the last whole batch from `position` on that ends by `end` (`position`
        itself if none does): what `batches_from(position, end)` walks to."""
        return self._scan(position, end, None)[0]

    def _scan(self, position: int, end: int, target_offset: int | None) -> tuple[int, BatchView | None]:
        """Walk the whole batches from `position` that end by `end`, as `batches_from` does, a
        buffer of `_SCAN_CHUNK` bytes at a time; a v2 header is read for its offsets and length
        only. Returns the position and header of the first batch whose last offset is >=
        `target_offset`, else (where the walk stopped, None)."""
        buf = b""
        buf_at = position  # the file position of buf[0]
        while end - position >= _MIN_HEADER:
            rel = position - buf_at
            if len(buf) - rel < V2_HEADER_SIZE:
                buf = os.pread(self.fd, min(_SCAN_CHUNK, end - position), position)
                buf_at, rel = position, 0
            if len(buf) - rel >= V2_HEADER_SIZE and buf[rel + MAGIC_OFFSET] == 2:
                base_offset, length = _OFFSET_LENGTH.unpack_from(buf, rel)
                size = LOG_OVERHEAD + length
                if length < 0 or position + size > end:
                    break
                if target_offset is not None and (
                        base_offset + _LAST_OFFSET_DELTA.unpack_from(buf, rel + _LAST_OFFSET_DELTA_AT)[0]
                        >= target_offset):
                    return position, BatchView(buf, rel)
            else:  # an old-format entry, or a header cut short by the end of the file
                view = self.header_at(position, end)
                if view is None:
                    break
                size = view.size
                if target_offset is not None and view.last_offset >= target_offset:
                    return position, view
            position += size
        return position, None

    def search_for_timestamp(self, target_timestamp: int, start_position: int,
                             starting_offset: int) -> tuple[int, BatchView] | None:
        """The first batch from `start_position` with a max timestamp >= target and a last offset
        >= starting_offset (Kafka: FileRecords.searchForTimestamp, at batch level)."""
        for pos, view in self.batches_from(start_position):
            if view.max_timestamp >= target_timestamp and view.last_offset >= starting_offset:
                return pos, view
        return None

    def largest_timestamp_after(self, start_position: int) -> tuple[int, int]:
        """(max timestamp, last offset of the batch holding it) over the batches from a position."""
        best_ts, best_off = -1, -1
        for _, view in self.batches_from(start_position):
            if view.max_timestamp > best_ts:
                best_ts, best_off = view.max_timestamp, view.last_offset
        return best_ts, best_off

    def __repr__(self) -> str:
        return f"FileRecords({self.path}, size={self._size})"
