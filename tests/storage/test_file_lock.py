"""minibroker_storage.file_lock: the data directory's `.lock` (Kafka's FileLock, taken by LogManager).

Two brokers in real processes, with kill -9, are in tests/integration/test_data_dir_lock.py.
"""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from minibroker_storage.config import LogConfig
from minibroker_storage.file_lock import LOCK_FILE_NAME, FileLock, LogDirFailure, lock_log_dir
from minibroker_storage.log_manager import LogManager

from .helpers import Clock


def _another_process_gets(path) -> bool:
    code = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\ntry:\n"
            "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(1)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], timeout=30).returncode == 0


def test_a_second_lock_on_the_same_file_is_refused_until_the_first_is_released(tmp_path):
    first, second = FileLock(tmp_path / ".lock"), FileLock(tmp_path / ".lock")
    assert first.try_lock() and first.locked
    assert not second.try_lock() and not second.locked  # in one process too, as in Kafka's JVM
    assert first.locked
    assert not _another_process_gets(tmp_path / ".lock")  # the refused attempt did not drop the POSIX lock
    first.unlock()
    assert _another_process_gets(tmp_path / ".lock")
    assert second.try_lock()
    second.unlock()
    assert (tmp_path / ".lock").exists()  # the file stays, as Kafka's does


def test_a_second_log_manager_on_a_directory_is_refused_with_kafkas_words(tmp_path):
    data = tmp_path / "data"
    lm = LogManager(data, LogConfig(), now_ms=Clock())
    lm.startup()
    assert (data / LOCK_FILE_NAME).exists()
    other = LogManager(data, LogConfig(), now_ms=Clock())
    with pytest.raises(LogDirFailure) as e:
        other.startup()
    assert str(e.value) == (f"Failed to acquire lock on file .lock in {data}. A Kafka instance in another "
                            "process or thread is using this directory.")
    lm.shutdown()  # releases it
    other.startup()
    other.shutdown()


def test_a_log_manager_dropped_without_shutdown_frees_the_directory(tmp_path):
    """What the kernel does for a killed process, the garbage collector does for a dropped manager
    (a test simulating a crash in-process)."""
    data = tmp_path / "data"
    lm = LogManager(data, LogConfig(), now_ms=Clock())
    lm.startup()
    del lm
    gc.collect()
    again = LogManager(data, LogConfig(), now_ms=Clock())
    again.startup()
    again.shutdown()


def test_a_file_where_the_directory_should_be_is_named(tmp_path):
    path = tmp_path / "data"
    path.write_text("not a directory")
    with pytest.raises(LogDirFailure) as e:
        lock_log_dir(path)
    assert str(e.value) == f"Failed to create or validate data directory {path}: it exists and is not a directory"
    with pytest.raises(LogDirFailure) as e:
        lock_log_dir(path / "sub")
    assert str(e.value) == f"Failed to create or validate data directory {path / 'sub'}: Not a directory"
