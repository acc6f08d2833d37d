"""One process per data directory: the `.lock` file (Kafka: `org.apache.kafka.common.utils.FileLock`,
taken by `LogManager.lockLogDirs` on every log dir before anything in it is read or written).

Theory of operation: `flock(LOCK_EX | LOCK_NB)` on `<dir>/.lock`, held open for the broker's life.
An flock belongs to the open file, so the kernel drops it when the process ends in any way, a
`kill -9` included: there is no stale lock to clean up, and the `.lock` file itself stays (as
Kafka's does). The lock also excludes a second `LogManager` in the same process, as Kafka's
`FileChannel.tryLock` does inside one JVM ("in another process or thread").
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK_FILE_NAME = ".lock"  # Kafka: LogManager.LockFileName


class LogDirFailure(Exception):
    """The data directory cannot be used: a file where the directory should be, no permission,
    or another broker holding its lock (Kafka raises KafkaException / KafkaStorageException).
    The message names the directory, never a file inside it other than `.lock`."""


class FileLock:
    """An exclusive advisory lock on one file (Kafka's FileLock: tryLock / unlock / destroy)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def try_lock(self) -> bool:
        """Take the lock if no one holds it; False if another open file (any process) does."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise
        self._fd = fd
        return True

    @property
    def locked(self) -> bool:
        return self._fd is not None

    def unlock(self) -> None:
        """Release the lock (closing the file releases it; the file stays, as Kafka's does)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor of the open file drops its flock

    def __del__(self) -> None:
        # a LogManager dropped without shutdown (a test simulating a crash) frees the directory,
        # as the kernel does for a killed process
        self.unlock()


def lock_log_dir(data_dir: Path) -> FileLock:
    """Create `data_dir` if missing, check that it is a writable directory and take its `.lock`
    (Kafka: LogManager.createAndValidateLogDirs, then lockLogDirs). Raises LogDirFailure with a
    message naming the directory."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise LogDirFailure(f"Failed to create or validate data directory {data_dir}: "
                            "it exists and is not a directory") from None
    except OSError as e:
        raise LogDirFailure(f"Failed to create or validate data directory {data_dir}: "
                            f"{e.strerror or e}") from None
    if not data_dir.is_dir():  # e.g. a symlink to a file
        raise LogDirFailure(f"Failed to create or validate data directory {data_dir}: "
                            "it exists and is not a directory")
    lock = FileLock(data_dir / LOCK_FILE_NAME)
    try:
        acquired = lock.try_lock()
    except OSError as e:
        raise LogDirFailure(f"Cannot write to data directory {data_dir}: {e.strerror or e}") from None
    if not acquired:
        # Kafka's words (LogManager.lockLogDirs), so a Kafka user recognises them
        raise LogDirFailure(f"Failed to acquire lock on file {LOCK_FILE_NAME} in {data_dir}. A Kafka instance in "
                            "another process or thread is using this directory.")
    if not os.access(data_dir, os.W_OK):  # a .lock left by an earlier run in a now read-only dir
        lock.unlock()
        raise LogDirFailure(f"Cannot write to data directory {data_dir}: Permission denied")
    return lock
