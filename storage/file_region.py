"""A byte range of a segment file, handed to the network layer for `sendfile` (zero-copy fetch).

The descriptor stays valid after the segment leaves the log: retention and topic deletion only
rename files and close them `file.delete.delay.ms` later (Kafka's asynchronous delete), so a
fetch answered just before a deletion can still be sent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class FileRegion:
    """`size` bytes of the open file `fd` starting at `position` (Kafka: FileRecords.slice)."""

    fd: int
    position: int
    size: int

    def __len__(self) -> int:
        return self.size

    def read_all(self) -> bytes:
        """The bytes themselves, for tests, tracing and the TLS path (no sendfile there)."""
        chunks = []
        pos, left = self.position, self.size
        while left > 0:
            chunk = os.pread(self.fd, left, pos)
            if not chunk:
                raise EOFError(f"file ended {left} bytes before the end of the region")
            chunks.append(chunk)
            pos += len(chunk)
            left -= len(chunk)
        return b"".join(chunks)
