"""The data directory (`log.dirs`): every partition's log and the files at its root
(Kafka: LogManager).

Layout, in Kafka's formats (a directory Kafka's tools can read):

    <data_dir>/meta.properties                    version=1, cluster.id, node.id, directory.id
    <data_dir>/recovery-point-offset-checkpoint   "topic partition offset" per log
    <data_dir>/log-start-offset-checkpoint        only logs whose start is above their first segment
    <data_dir>/replication-offset-checkpoint      high watermarks
    <data_dir>/cleaner-offset-checkpoint          compaction progress: first dirty offset per log
    <data_dir>/.kafka_cleanshutdown               only between a clean shutdown and the next start
    <data_dir>/<topic>-<partition>/               one Log each (segments, partition.metadata,
                                                  leader-epoch-checkpoint)
    <data_dir>/topic-config-overrides.json        ours, see below

Topic config overrides: Kafka keeps them in the KRaft metadata log. We keep them in
`topic-config-overrides.json` at the root — `{"version": 0, "topics": {name: {key: value}}}`,
written atomically — a *file* because Kafka's LogManager treats every directory at the root as
a partition and would refuse an unknown one. The partition count of a topic comes from its
directories, its id from their `partition.metadata`.

Startup: read meta.properties (or write it), note and remove the clean-shutdown marker (so a
crash during startup counts as unclean, KAFKA-10471), read the recovery points and log start
offsets, open every partition directory (recovering from its recovery point unless the shutdown
was clean), and finish deleting `*-delete` directories. Shutdown: flush every log, close it,
write the checkpoints, then the marker.

Deletion: a deleted topic's directories are renamed `<topic>-<p>.<uuid>-delete` and removed
by `cleanup_deleted` after `file.delete.delay.ms`, as are retention's `.deleted` segments.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minibroker_storage.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CleanShutdownFile,
    CorruptCheckpoint,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    random_kafka_uuid,
    uuid_to_kafka,
)
from minibroker_storage.config import LogConfig
from minibroker_storage.file_lock import FileLock, lock_log_dir
from minibroker_storage.log_files import (
    DELETE_DIR_SUFFIX,
    atomic_write,
    fsync_dir,
    log_delete_dir_name,
    log_dir_name,
    parse_topic_partition_name,
)
from minibroker_storage.meta_properties import ensure_meta_properties

if TYPE_CHECKING:
    # minibroker_storage.log (the append path: validator, record formats, producer state) is imported by the
    # first log opened or created, not by a broker starting on an empty data dir (issue 22)
    from minibroker_storage.log import Log

logger = logging.getLogger("minibroker_storage.log_manager")

TOPIC_CONFIG_FILE = "topic-config-overrides.json"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"  # Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogManager:
    def __init__(self, data_dir: Path, default_config: LogConfig, *, now_ms: Callable[[], int] = _wall_clock_ms,
                 node_id: int | None = None, cluster_id: str | None = None,
                 topic_config: Callable[[Mapping[str, Any]], LogConfig] | None = None,
                 dir_lock: FileLock | None = None):
        """`dir_lock`: the directory's `.lock`, when the caller took it already (`lock_log_dir`: a
        broker does, before reading its dynamic config from the directory); the manager holds it
        from then on and releases it at shutdown. `topic_config` turns a topic's stored overrides (Kafka keys) into its LogConfig. Storage
        keeps the overrides as opaque data and never parses them; the broker's config model does
        (minibroker.config.to_log_config). Without it every topic gets `default_config`."""
        self.data_dir = Path(data_dir)
        self.default_config = default_config
        self._topic_config = topic_config
        self._now_ms = now_ms
        self._wanted_node_id = node_id
        self._wanted_cluster_id = cluster_id
        self.cluster_id: str = ""
        self.node_id: int = -1
        self.directory_id: str = ""
        self._logs: dict[tuple[str, int], Log] = {}
        self._topic_overrides: dict[str, dict[str, Any]] = {}
        self._deleted_logs: list[tuple[int, Log | _DirOnly]] = []
        self._checkpoint_lock = threading.Lock()
        self.had_clean_shutdown = False
        self._loaded = False
        self._recovery_points = OffsetCheckpointFile(self.data_dir / RECOVERY_POINT_CHECKPOINT_FILE)
        self._log_start_offsets = OffsetCheckpointFile(self.data_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
        self._high_watermarks = OffsetCheckpointFile(self.data_dir / REPLICATION_OFFSET_CHECKPOINT_FILE)
        self._cleaner_offsets = OffsetCheckpointFile(self.data_dir / CLEANER_OFFSET_CHECKPOINT_FILE)
        # the log cleaner's progress: the first dirty offset of each compacted log (minibroker_storage.cleaner)
        self.cleaner_checkpoints: dict[tuple[str, int], int] = {}
        self._dir_lock = dir_lock
        self._checkpointed_high_watermarks: dict[tuple[str, int], int] = {}

    def lock_log_dir(self) -> None:
        """Create the data directory if missing and take its `.lock` (Kafka: the LogManager
        constructor's createAndValidateLogDirs and lockLogDirs), before anything in it is read or
        written; minibroker_storage.file_lock.LogDirFailure if another broker holds it."""
        if self._dir_lock is None:
            self._dir_lock = lock_log_dir(self.data_dir)

    # -- startup -------------------------------------------------------------------------------
    def startup(self) -> None:
        started = time.monotonic()
        self.lock_log_dir()
        self._load_meta_properties()
        marker = CleanShutdownFile(self.data_dir)
        self.had_clean_shutdown = marker.exists()
        if self.had_clean_shutdown:
            marker.delete()  # a crash from here on is an unclean shutdown again
        recovery_points = self._read_checkpoint(self._recovery_points, "resetting the recovery checkpoint to 0")
        log_starts = self._read_checkpoint(self._log_start_offsets,
                                           "resetting to the base offset of the first segment")
        self._topic_overrides = self._read_topic_overrides()
        self.cleaner_checkpoints = self._read_checkpoint(self._cleaner_offsets, "cleaning logs from their start")
        # the high watermarks a replicated partition starts from (Kafka: Partition.createLog reads
        # highWatermarkCheckpoints); a log opens with HW = LEO, and a partition whose ISR is this
        # broker alone keeps it there
        self._checkpointed_high_watermarks = self._read_checkpoint(self._high_watermarks,
                                                                   "starting from the log end offsets")
        dirs = sorted(p for p in self.data_dir.iterdir() if p.is_dir())
        logger.info("%s %d logs from %s", "Loading" if self.had_clean_shutdown else "Recovering",
                    len(dirs), self.data_dir)
        for d in dirs:
            if d.name.endswith(DELETE_DIR_SUFFIX):
                logger.info("Deleting %s, a partition directory marked for deletion", d.name)
                self._deleted_logs.append((0, _DirOnly(d)))
                continue
            tp = parse_topic_partition_name(d.name)
            if tp is None:
                logger.warning("Ignoring %s: not in the form topic-partition", d)
                continue
            if tp[0] == CLUSTER_METADATA_TOPIC:
                continue  # KRaft's metadata log belongs to the raft layer, not to the partitions (Kafka: LogManager)
            config = self._config_for(tp[0])
            from minibroker_storage.log import Log

            lg = Log.open(d, config, recovery_point=recovery_points.get(tp, 0),
                          log_start_offset=log_starts.get(tp, 0), clean_shutdown=self.had_clean_shutdown,
                          now_ms=self._now_ms)
            self._logs[tp] = lg
        self._fix_topic_ids()
        self._loaded = True
        self.cleanup_deleted(self._now_ms())
        logger.info("Loaded %d logs in %dms", len(self._logs), int((time.monotonic() - started) * 1000))

    def _load_meta_properties(self) -> None:
        meta = ensure_meta_properties(self.data_dir, node_id=self._wanted_node_id, cluster_id=self._wanted_cluster_id)
        self.cluster_id, self.node_id, self.directory_id = meta.cluster_id, meta.node_id, meta.directory_id

    def _read_checkpoint(self, ckpt: OffsetCheckpointFile, fallback: str) -> dict[tuple[str, int], int]:
        try:
            return ckpt.read()
        except (CorruptCheckpoint, OSError, ValueError) as e:
            logger.warning("Error occurred while reading %s, %s: %s", ckpt.path.name, fallback, e)
            return {}

    def _fix_topic_ids(self) -> None:
        """Every partition of a topic shares one id; a directory without partition.metadata gets
        its siblings' id, or a new one."""
        by_topic: dict[str, list[Log]] = {}
        for (topic, _), lg in sorted(self._logs.items()):
            by_topic.setdefault(topic, []).append(lg)
        for logs in by_topic.values():
            known = next((lg.topic_id for lg in logs if lg.topic_id.int != 0), None)
            topic_id = known or random_kafka_uuid()
            for lg in logs:
                if lg.topic_id.int == 0:
                    logger.warning("No topic id for %s; assigning %s", lg.dir.name, uuid_to_kafka(topic_id))
                    PartitionMetadataFile(lg.dir / PARTITION_METADATA_FILE).write(topic_id)
                    lg.topic_id = topic_id

    # -- topic config overrides ------------------------------------------------------------------
    def _read_topic_overrides(self) -> dict[str, dict[str, Any]]:
        path = self.data_dir / TOPIC_CONFIG_FILE
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text("utf-8"))
            return {str(t): dict(cfg) for t, cfg in data.get("topics", {}).items()}
        except (ValueError, AttributeError, TypeError) as e:
            logger.error("Unreadable %s, topics use the default config: %s", path, e)
            return {}

    def _write_topic_overrides(self) -> None:
        data = {"version": 0, "topics": self._topic_overrides}
        atomic_write(self.data_dir / TOPIC_CONFIG_FILE,
                     json.dumps(data, indent=1, sort_keys=True, default=str).encode("utf-8"))

    def _config_for(self, topic: str) -> LogConfig:
        return self._log_config(self._topic_overrides.get(topic, {}))

    def _log_config(self, overrides: Mapping[str, Any]) -> LogConfig:
        return self.default_config if self._topic_config is None else self._topic_config(overrides)

    def topic_overrides(self, topic: str) -> dict[str, Any]:
        """The topic's config overrides (Kafka keys) as last stored."""
        return dict(self._topic_overrides.get(topic, {}))

    def set_topic_overrides(self, topic: str, overrides: dict[str, Any], *, new_topic: bool = False) -> None:
        """Store the topic's overrides (replacing the previous ones) and apply them to its logs.

        `new_topic`: the topic has no logs yet, so there is nothing to apply, and without overrides
        nothing to store. Writing the file (two fsyncs, every topic's overrides) and walking every
        log for each CreateTopics made creating N topics cost O(N^2) (bench/growth.py, issue 22)."""
        config = self._log_config(overrides)  # refuse bad values before storing
        if new_topic:
            if overrides or self._topic_overrides.pop(topic, None) is not None:
                if overrides:
                    self._topic_overrides[topic] = dict(overrides)
                self._write_topic_overrides()
            return
        if overrides:
            self._topic_overrides[topic] = dict(overrides)
        else:
            self._topic_overrides.pop(topic, None)
        self._write_topic_overrides()
        for (t, _), lg in self._logs.items():
            if t == topic:
                lg.config = config

    # -- logs ----------------------------------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def checkpointed_high_watermark(self, topic: str, partition: int) -> int | None:
        """The HW `replication-offset-checkpoint` held for the partition at startup (Kafka:
        Partition.createLog's `highWatermarkCheckpoints.fetch`), None if it held none."""
        return self._checkpointed_high_watermarks.get((topic, partition))

    def logs(self) -> dict[tuple[str, int], Log]:
        return dict(self._logs)

    def topic_ids(self) -> dict[str, uuid.UUID]:
        return {topic: lg.topic_id for (topic, _), lg in sorted(self._logs.items())}

    def create_log(self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig | None = None,
                   *, leader_epoch: int = 0) -> Log:
        """Create `<topic>-<partition>/` with partition.metadata and leader-epoch-checkpoint
        (the epoch this broker leads with starts at offset 0), or return the existing log."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            return existing
        d = self.data_dir / log_dir_name(topic, partition)
        from minibroker_storage.log import Log

        lg = Log.open(d, config or self._config_for(topic), now_ms=self._now_ms, topic_id=topic_id)
        lg.maybe_assign_epoch_start_offset(leader_epoch, lg.log_end_offset)
        fsync_dir(self.data_dir)
        self._logs[(topic, partition)] = lg
        logger.info("Created log for partition %s-%d in %s", topic, partition, d)
        return lg

    def abandon_logs(self, topic: str, partitions: range) -> None:
        """Remove partitions whose creation failed half way (a directory may exist without its log
        registered), so that the next start finds nothing of them."""
        for p in partitions:
            lg = self._logs.pop((topic, p), None)
            if lg is not None:
                lg.close_handlers()
            d = self.data_dir / log_dir_name(topic, p)
            if not d.exists():
                continue
            # renamed first (no descriptor needed): a start finishes deleting `-delete` directories
            # if removing them here fails for want of descriptors
            gone = self.data_dir / log_delete_dir_name(topic, p)
            try:
                d.rename(gone)
            except OSError as e:
                logger.error("could not rename %s away after its creation failed: %s", d, e)
                continue
            shutil.rmtree(gone, ignore_errors=True)
        try:
            fsync_dir(self.data_dir)
        except OSError as e:  # out of descriptors still: the removals stand, unsynced
            logger.warning("could not sync %s after removing partitions of %s: %s", self.data_dir, topic, e)

    def delete_topic(self, topic: str) -> None:
        """Rename the topic's partition directories `<topic>-<p>.<uuid>-delete`, forget its
        config; `cleanup_deleted` removes them after file.delete.delay.ms."""
        now = self._now_ms()
        for (t, p), lg in sorted(self._logs.items()):
            if t != topic:
                continue
            del self._logs[(t, p)]
            lg.rename_dir(self.data_dir / log_delete_dir_name(t, p))
            self._deleted_logs.append((now + lg.config.file_delete_delay_ms, lg))
            logger.info("Log for partition %s-%d is renamed to %s and is scheduled for deletion", t, p, lg.dir)
        fsync_dir(self.data_dir)
        if self._topic_overrides.pop(topic, None) is not None:
            self._write_topic_overrides()
        self.checkpoint()

    def delete_log(self, topic: str, partition: int) -> Path | None:
        """Rename one partition's directory `<topic>-<p>.<uuid>-delete` for `cleanup_deleted` to
        remove after file.delete.delay.ms (Kafka: LogManager.asyncDelete, for a replica this broker
        no longer hosts); its open files stay readable meanwhile. The new path, or None if the
        partition had no log here."""
        lg = self._logs.pop((topic, partition), None)
        if lg is None:
            return None
        lg.rename_dir(self.data_dir / log_delete_dir_name(topic, partition))
        self._deleted_logs.append((self._now_ms() + lg.config.file_delete_delay_ms, lg))
        fsync_dir(self.data_dir)
        logger.info("Log for partition %s-%d is renamed to %s and is scheduled for deletion", topic, partition, lg.dir)
        self.checkpoint()
        return lg.dir

    def cleanup_deleted(self, now: int | None = None) -> int:
        """Remove what deletions left for later: `.deleted` segments and `-delete` directories
        whose delay has passed. Returns how many segments and directories went."""
        now = self._now_ms() if now is None else now
        n = 0
        for lg in list(self._logs.values()):
            n += lg.cleanup_deleted(now)
        ready = [lg for due, lg in self._deleted_logs if due <= now]
        self._deleted_logs = [(due, lg) for due, lg in self._deleted_logs if due > now]
        for gone in ready:
            gone.delete()
            logger.info("Deleted log directory %s", gone.dir)
            n += 1
        return n

    # -- durability ----------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write the four offset checkpoints (each atomically). May run on an executor thread."""
        logs = dict(self._logs)
        with self._checkpoint_lock:
            self._recovery_points.write({tp: lg.recovery_point for tp, lg in logs.items()})
            self._log_start_offsets.write({
                tp: lg.log_start_offset for tp, lg in logs.items()
                if lg.segments.first is not None and lg.log_start_offset > lg.segments.first.base_offset})
            self._high_watermarks.write({tp: lg.high_watermark for tp, lg in logs.items()})
            self._cleaner_offsets.write({tp: off for tp, off in dict(self.cleaner_checkpoints).items() if tp in logs})

    def flush_all(self) -> None:
        for lg in list(self._logs.values()):
            lg.flush()

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker."""
        logger.info("Shutting down.")
        ok = True
        for lg in list(self._logs.values()):
            try:
                lg.flush()
                lg.close()
            except OSError:
                ok = False
                logger.exception("Error while flushing and closing %s", lg.dir)
        for _, gone in self._deleted_logs:
            gone.close_handlers()
        self.checkpoint()
        if ok and self._loaded:
            CleanShutdownFile(self.data_dir).write()
        if self._dir_lock is not None:  # last: the directory is consistent for the next broker
            self._dir_lock.unlock()
            self._dir_lock = None
        logger.info("Shutdown complete.")


class _DirOnly:
    """A `-delete` directory found at startup: nothing open, only the directory to remove."""

    def __init__(self, dir: Path):
        self.dir = dir

    def delete(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def close_handlers(self) -> None:
        pass
