"""LogManager with several log dirs: each directory's identity, lock and checkpoints, placement,
a future log swapped in, a directory taken offline, and a restart that finds all of it."""

from __future__ import annotations

import errno
import uuid

import pytest

from minibroker_storage.checkpoint import read_properties
from minibroker_storage.config import LogConfig
from minibroker_storage.file_lock import LogDirFailure
from minibroker_storage.log_manager import LogManager

from .helpers import Clock, batch

TID = uuid.UUID(int=7)


def started(tmp_path, clock=None) -> LogManager:
    lm = LogManager(tmp_path / "a", LogConfig(file_delete_delay_ms=0), now_ms=clock or Clock(), node_id=2,
                    extra_dirs=[tmp_path / "b"])
    lm.startup()
    return lm


def test_each_dir_has_its_identity_lock_and_checkpoints(tmp_path):
    lm = started(tmp_path)
    a, b = (read_properties(tmp_path / d / "meta.properties") for d in "ab")
    assert a["cluster.id"] == b["cluster.id"] and a["node.id"] == b["node.id"] == "2"
    assert a["directory.id"] != b["directory.id"]
    assert [ld.directory_id for ld in lm.log_dirs] == [a["directory.id"], b["directory.id"]]
    with pytest.raises(LogDirFailure, match="Failed to acquire lock"):
        LogManager(tmp_path / "c", LogConfig(), extra_dirs=[tmp_path / "b"]).lock_log_dir()
    # placement: the directory with the fewest partitions, the first on a tie
    for p in range(4):
        lm.create_log("t", p, TID).append_as_leader(batch(2))
    assert sorted(d.name for d in (tmp_path / "a").iterdir() if d.is_dir()) == ["t-0", "t-2"]
    assert sorted(d.name for d in (tmp_path / "b").iterdir() if d.is_dir()) == ["t-1", "t-3"]
    lm.checkpoint()
    assert "t 1 " in (tmp_path / "b" / "recovery-point-offset-checkpoint").read_text()
    assert "t 1 " not in (tmp_path / "a" / "recovery-point-offset-checkpoint").read_text()
    lm.shutdown()
    assert (tmp_path / "a" / ".kafka_cleanshutdown").exists() and (tmp_path / "b" / ".kafka_cleanshutdown").exists()
    again = started(tmp_path)
    assert again.had_clean_shutdown
    assert {tp: lg.log_end_offset for tp, lg in again.logs().items()} == {("t", p): 2 for p in range(4)}
    again.shutdown()


def test_a_future_log_swapped_in_and_a_leftover_one_removed_at_start(tmp_path):
    lm = started(tmp_path)
    current = lm.create_log("t", 0, TID)
    current.append_as_leader(batch(3))
    target = lm.log_dirs[1]
    future = lm.create_future_log("t", 0, target)
    assert future.dir.parent == target.path and future.dir.name.endswith("-future") and lm.next_log_dir() is lm.log_dirs[0]
    future.append_as_follower(current.read(0, 1 << 20, max_offset=current.log_end_offset).region.read_all())
    moved = lm.replace_current_with_future("t", 0)
    assert moved.dir == target.path / "t-0" and lm.get_log("t", 0) is moved and moved.log_end_offset == 3
    assert not (tmp_path / "a" / "t-0").exists()
    lm.cleanup_deleted()  # the old directory, renamed -delete, goes after file.delete.delay.ms
    assert [d.name for d in (tmp_path / "a").iterdir() if d.is_dir()] == []
    lm.create_future_log("t", 0, lm.log_dirs[0])  # a move the broker stops in
    lm.shutdown()
    again = started(tmp_path)
    assert [d.name for d in (tmp_path / "a").iterdir() if d.is_dir()] == []
    assert again.get_log("t", 0).dir == tmp_path / "b" / "t-0" and again.get_log("t", 0).log_end_offset == 3
    again.shutdown()


def test_a_partition_in_two_dirs_is_refused(tmp_path):
    lm = started(tmp_path)
    lm.create_log("t", 0, TID)
    lm.shutdown()
    (tmp_path / "b" / "t-0").mkdir()
    with pytest.raises(RuntimeError, match="Duplicate log directories for t-0"):
        started(tmp_path)


def test_a_failed_dir_goes_offline_and_the_other_keeps_its_logs(tmp_path):
    lm = started(tmp_path)
    for p in range(2):
        lm.create_log("t", p, TID).append_as_leader(batch(1))
    failed: list[tuple[str, list[tuple[str, int]]]] = []
    lm.log_dir_failure_listeners.append(lambda ld, tps: failed.append((ld.path.name, tps)))
    in_b = lm.get_log("t", 1)
    assert lm.log_dir_failure(in_b, OSError(errno.ENOSPC, "full")) is None  # a full disk heals: not offline
    (tmp_path / "b").rename(tmp_path / "b.gone")
    (tmp_path / "b").write_text("a file now")
    lm.checkpoint()  # fails on b: taken offline by the loop's next take_failed_offline
    lm.take_failed_offline()
    assert failed == [("b", [("t", 1)])] and lm.log_dirs[1].offline
    assert list(lm.logs()) == [("t", 0)] and lm.next_log_dir() is lm.log_dirs[0]
    with pytest.raises(Exception, match="closed"):
        in_b.append_as_leader(batch(1))
    lm.get_log("t", 0).append_as_leader(batch(1))
    lm.checkpoint()
    lm.shutdown()
