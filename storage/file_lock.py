"""One process per data directory: the `.lock` file (Kafka: `org.apache.kafka.common.utils.FileLock`,
taken by `LogManager.lockLogDirs` on every log dir before anything in it is read or written).

Theory of operation: an exclusive POSIX record lock (`fcntl(F_SETLK)`, Python's `fcntl.lockf`) on
`<dir>/.lock`, held open for the broker's life. It is the lock Kafka's FileLock takes: Java's
`FileChannel.tryLock` is `fcntl(F_SETLK)` on Linux, so a Kafka broker and minibroker on one
directory refuse each other too (an `flock` would not: the two kinds do not see each other).
The kernel drops it when the process ends in any way, a `kill -9` included: there is no stale lock
to clean up, and the `.lock` file itself stays (as Kafka's does).

POSIX locks belong to a process, not to an open file: a second lock from the same process would
succeed, and closing *any* descriptor of the file drops the lock. So a process-wide registry of
held lock files refuses a second `LogManager` in the same process before it opens the file (the
JVM does the same: OverlappingFileLockException, "in another process or thread").
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

LOCK_FILE_NAME = ".lock"  # Kafka: LogManager.LockFileName


class LogDirFailure(Exception):
    """The data directory cannot be used: a file where the directory should be, no permission,
    or another broker holding its lock (Kafka raises KafkaException / KafkaStorageException).
    The message names the directory, never a file inside it other than `.lock`."""


class FileLock:
    """An exclusive lock on one file, for this process's life or until `unlock` (Kafka's FileLock:
    tryLock / unlock)."""

    _held: set[str] = set()  # real paths of the lock files this process holds (see the module doc)
    _registry_lock = threading.RLock()  # re-entrant: a __del__ run by the GC inside try_lock takes it too

    def __init__(self, path: Path):
        self.path = path
        self._key = os.path.realpath(path)
        self._fd: int | None = None

    def try_lock(self) -> bool:
        """Take the lock if no one holds it; False if another process, or another FileLock of this
        process, does."""
        if self._fd is not None:
            return True
        with FileLock._registry_lock:
            if self._key in FileLock._held:
                return False  # never open it: closing our descriptor would drop the holder's lock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EACCES, errno.EAGAIN):
                    return False
                raise
            FileLock._held.add(self._key)
            self._fd = fd
        return True

    @property
    def locked(self) -> bool:
        return self._fd is not None

    def unlock(self) -> None:
        """Release the lock (closing the file releases it; the file stays, as Kafka's does)."""
        with FileLock._registry_lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)  # the only descriptor of the file in this process: the lock goes with it
                FileLock._held.discard(self._key)

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
