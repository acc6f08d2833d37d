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

import errno
import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minibroker_storage.checkpoint import (
    PARTITION_METADATA_FILE,
    CleanShutdownFile,
    CorruptCheckpoint,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    random_kafka_uuid,
    uuid_to_kafka,
)
from minibroker_storage.config import LogConfig
from minibroker_storage.file_lock import FileLock, lock_log_dir
from minibroker_storage.log_dir import LogDir
from minibroker_storage.log_files import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    atomic_write,
    fsync_dir,
    log_delete_dir_name,
    log_dir_name,
    log_future_dir_name,
    parse_topic_partition_name,
)
from minibroker_storage.meta_properties import ensure_meta_properties

if TYPE_CHECKING:
    # minibroker_storage.log (the append path: validator, record formats, producer state) is imported by the
    # first log opened or created, not by a broker starting on an empty data dir (issue 22)
    from minibroker_storage.log import Log

logger = logging.getLogger("minibroker_storage.log_manager")

TOPIC_CONFIG_FILE = "topic-config-overrides.json"
# errors that mean a log dir itself failed, which takes it offline (Kafka takes a directory offline
# on any IOException; a full disk (ENOSPC) or a process out of descriptors (EMFILE) answers the
# failed append only here, and heals: tests/integration/test_disk_errors.py)
DIR_FAILURE_ERRNOS = frozenset({errno.EIO, errno.ENOENT, errno.ENOTDIR, errno.EROFS, errno.EACCES, errno.EPERM,
                                errno.ENXIO, errno.ENODEV})
CLUSTER_METADATA_TOPIC = "__cluster_metadata"  # Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogManager:
    def __init__(self, data_dir: Path, default_config: LogConfig, *, now_ms: Callable[[], int] = _wall_clock_ms,
                 node_id: int | None = None, cluster_id: str | None = None,
                 topic_config: Callable[[Mapping[str, Any]], LogConfig] | None = None,
                 dir_lock: FileLock | None = None, extra_dirs: Sequence[Path] = ()):
        """`dir_lock`: the directory's `.lock`, when the caller took it already (`lock_log_dir`: a
        broker does, before reading its dynamic config from the directory); the manager holds it
        from then on and releases it at shutdown. `topic_config` turns a topic's stored overrides (Kafka keys) into its LogConfig. Storage
        keeps the overrides as opaque data and never parses them; the broker's config model does
        (minibroker.config.to_log_config). Without it every topic gets `default_config`."""
        self.data_dir = Path(data_dir)
        # `log.dirs`: the first holds the broker's own files too (Kafka: metadata.log.dir defaults
        # to it); every one has its .lock, meta.properties, checkpoints and marker (storage.log_dir)
        self.log_dirs: list[LogDir] = [LogDir(self.data_dir, dir_lock)] + [LogDir(Path(d)) for d in extra_dirs]
        self.default_config = default_config
        self._topic_config = topic_config
        self._now_ms = now_ms
        self._wanted_node_id = node_id
        self._wanted_cluster_id = cluster_id
        self.cluster_id: str = ""
        self.node_id: int = -1
        self.directory_id: str = ""
        self._logs: dict[tuple[str, int], Log] = {}
        self._future_logs: dict[tuple[str, int], Log] = {}
        # told (directory, its partitions) when a directory goes offline (the broker's ReplicaManager part)
        self.log_dir_failure_listeners: list[Callable[[LogDir, list[tuple[str, int]]], None]] = []
        # the partitions whose directory failed: offline until a restart, never created again in
        # another directory meanwhile (Kafka: HostedPartition.Offline)
        self.offline_partitions: set[tuple[str, int]] = set()
        self._topic_overrides: dict[str, dict[str, Any]] = {}
        self._deleted_logs: list[tuple[int, Log | _DirOnly]] = []
        self._checkpoint_lock = threading.Lock()
        self.had_clean_shutdown = False
        # each directory's `.kafka_cleanshutdown` broker epoch, read before the file is deleted
        self._clean_shutdown_epochs: dict[Path, int | None] = {}
        self._loaded = False
        # the log cleaner's progress: the first dirty offset of each compacted log (minibroker_storage.cleaner)
        self.cleaner_checkpoints: dict[tuple[str, int], int] = {}
        self._checkpointed_high_watermarks: dict[tuple[str, int], int] = {}
        # directories a checkpoint (on an executor thread) found failed; the loop takes them offline
        self.failed_dirs: list[tuple[LogDir, OSError]] = []

    def lock_log_dir(self) -> None:
        """Create the data directory if missing and take its `.lock` (Kafka: the LogManager
        constructor's createAndValidateLogDirs and lockLogDirs), before anything in it is read or
        written; minibroker_storage.file_lock.LogDirFailure if another broker holds it."""
        taken = []
        try:
            for ld in self.log_dirs:
                if ld.lock is None:
                    ld.lock = lock_log_dir(ld.path)
                    taken.append(ld)
        except BaseException:
            for ld in taken:  # a start that failed leaves every directory to the next one
                assert ld.lock is not None
                ld.lock.unlock()
                ld.lock = None
            raise

    # -- startup -------------------------------------------------------------------------------
    def startup(self) -> None:
        started = time.monotonic()
        self.lock_log_dir()
        self._load_meta_properties()
        self._topic_overrides = self._read_topic_overrides()
        self.had_clean_shutdown = True
        for ld in self.log_dirs:
            self._load_log_dir(ld)
        self._fix_topic_ids()
        self._loaded = True
        self.cleanup_deleted(self._now_ms())
        logger.info("Loaded %d logs in %dms", len(self._logs), int((time.monotonic() - started) * 1000))

    def _load_log_dir(self, ld: LogDir) -> None:
        """Open the partitions of one log dir (Kafka: LogManager.loadLogs, one directory each)."""
        marker = CleanShutdownFile(ld.path)
        clean = marker.exists()
        self.had_clean_shutdown = self.had_clean_shutdown and clean
        self._clean_shutdown_epochs[ld.path] = marker.read_broker_epoch() if clean else None
        if clean:
            marker.delete()  # a crash from here on is an unclean shutdown again
        recovery_points = self._read_checkpoint(ld.recovery_points, "resetting the recovery checkpoint to 0")
        log_starts = self._read_checkpoint(ld.log_start_offsets,
                                           "resetting to the base offset of the first segment")
        self.cleaner_checkpoints.update(self._read_checkpoint(ld.cleaner_offsets, "cleaning logs from their start"))
        # the high watermarks a replicated partition starts from (Kafka: Partition.createLog reads
        # highWatermarkCheckpoints); a log opens with HW = LEO, and a partition whose ISR is this
        # broker alone keeps it there
        self._checkpointed_high_watermarks.update(self._read_checkpoint(ld.high_watermarks,
                                                                        "starting from the log end offsets"))
        dirs = sorted(p for p in ld.path.iterdir() if p.is_dir())
        logger.info("%s %d logs from %s", "Loading" if clean else "Recovering", len(dirs), ld.path)
        for d in dirs:
            if d.name.endswith(FUTURE_DIR_SUFFIX):
                # a move between log dirs the broker stopped in (Kafka resumes it from the
                # controller's AlterReplicaLogDirs state; we drop the copy, the current log stays)
                logger.info("Deleting %s, the copy of an unfinished log dir move", d.name)
                self._deleted_logs.append((0, _DirOnly(d)))
                continue
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

            if tp in self._logs:
                # Kafka: "Duplicate log directories for <tp> are found" stops the broker
                raise RuntimeError(f"Duplicate log directories for {tp[0]}-{tp[1]} are found in both "
                                   f"{self._logs[tp].dir} and {d}")
            lg = Log.open(d, config, recovery_point=recovery_points.get(tp, 0),
                          log_start_offset=log_starts.get(tp, 0), clean_shutdown=clean,
                          now_ms=self._now_ms)
            self._logs[tp] = lg

    def _load_meta_properties(self) -> None:
        meta = ensure_meta_properties(self.data_dir, node_id=self._wanted_node_id, cluster_id=self._wanted_cluster_id)
        self.cluster_id, self.node_id, self.directory_id = meta.cluster_id, meta.node_id, meta.directory_id
        self.log_dirs[0].directory_id = meta.directory_id
        # every other directory carries the same cluster and node, its own directory id (Kafka:
        # MetaPropertiesEnsemble.verify; a second directory with the same id is refused)
        for ld in self.log_dirs[1:]:
            other = ensure_meta_properties(ld.path, node_id=meta.node_id, cluster_id=meta.cluster_id)
            if other.directory_id in {d.directory_id for d in self.log_dirs}:
                raise RuntimeError(f"Duplicate directory ID {other.directory_id} found in {ld.path}")
            ld.directory_id = other.directory_id

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
                   *, leader_epoch: int = 0, target: LogDir | None = None) -> Log:
        """Create `<topic>-<partition>/` with partition.metadata and leader-epoch-checkpoint
        (the epoch this broker leads with starts at offset 0), or return the existing log. `target`:
        the directory the metadata assigned it (KIP-858; Kafka: Partition.createLogIfNotExists
        with targetLogDirectoryId), if online; else the least full one."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            return existing
        parent = (target if target is not None and not target.offline else self.next_log_dir()).path
        d = parent / log_dir_name(topic, partition)
        from minibroker_storage.log import Log

        lg = Log.open(d, config or self._config_for(topic), now_ms=self._now_ms, topic_id=topic_id)
        lg.maybe_assign_epoch_start_offset(leader_epoch, lg.log_end_offset)
        fsync_dir(parent)
        self._logs[(topic, partition)] = lg
        logger.info("Created log for partition %s-%d in %s", topic, partition, d)
        return lg

    def next_log_dir(self) -> LogDir:
        """Where a new partition goes (Kafka: LogManager.nextLogDirs): the online directory holding
        the fewest partitions, the first of `log.dirs` on a tie."""
        online = [ld for ld in self.log_dirs if not ld.offline]
        if not online:
            raise OSError("all log dirs are offline")
        counts = {id(ld): 0 for ld in online}
        for lg in list(self._logs.values()) + self.future_logs():
            for ld in online:
                if ld.holds(lg.dir):
                    counts[id(ld)] += 1
        return min(online, key=lambda ld: counts[id(ld)])

    def log_dir_of(self, log: Log) -> LogDir:
        for ld in self.log_dirs:
            if ld.holds(log.dir):
                return ld
        raise KeyError(str(log.dir))

    def log_dir_by_path(self, path: str | Path) -> LogDir | None:
        """The configured log dir `path` names (absolute or as configured), None if none."""
        wanted = Path(path).resolve()
        return next((ld for ld in self.log_dirs if ld.path.resolve() == wanted), None)

    def future_logs(self) -> list[Log]:
        """Logs being filled for a move between log dirs (Kafka: LogManager.futureLogs)."""
        return list(self._future_logs.values())

    # -- failed directories (Kafka: LogDirFailureChannel, LogManager.handleLogDirFailure) -----------
    def log_dir_failure(self, lg: Log, error: OSError) -> LogDir | None:
        """`error` hit `lg`'s directory: take the directory offline if the error says the directory
        itself failed (`DIR_FAILURE_ERRNOS`). Returns the directory taken offline, None otherwise."""
        if error.errno not in DIR_FAILURE_ERRNOS or len(self.log_dirs) == 1:
            return None  # one directory: each failed request answers for itself (issue 10)
        ld = next((d for d in self.log_dirs if d.holds(lg.dir)), None)
        if ld is None or ld.offline:
            return None
        self.take_offline(ld, error)
        return ld

    def take_failed_offline(self) -> None:
        """Take offline the directories a checkpoint found failed (on the loop: the log maps change)."""
        while self.failed_dirs:
            ld, e = self.failed_dirs.pop(0)
            if not ld.offline:
                self.take_offline(ld, e)

    def take_offline(self, ld: LogDir, error: BaseException) -> list[tuple[str, int]]:
        """Mark `ld` offline, forget and close its logs (current and future): their partitions answer
        KAFKA_STORAGE_ERROR from then on (a closed Log does), checkpoints skip the directory, and
        the other directories go on. Kafka keeps a directory offline until the broker restarts."""
        ld.offline = True
        logger.error("Error while writing to %s; it is offline from now on: %s", ld.path, error)
        gone = [tp for tp, lg in self._logs.items() if ld.holds(lg.dir)]
        self.offline_partitions.update(gone)
        for tp in gone:
            self._logs.pop(tp).close_handlers()
        for tp in [tp for tp, lg in self._future_logs.items() if ld.holds(lg.dir)]:
            self._future_logs.pop(tp).close_handlers()
        self._deleted_logs = [(due, lg) for due, lg in self._deleted_logs if not ld.holds(lg.dir)]
        logger.error("Logs for partitions %s are offline and logs for future partitions are offline due to "
                     "failure on log directory %s", ",".join(f"{t}-{p}" for t, p in gone), ld.path)
        for listener in self.log_dir_failure_listeners:
            listener(ld, gone)
        return gone

    # -- moves between log dirs (Kafka: LogManager.getOrCreateLog(isFuture), replaceCurrentWithFutureLog) --
    def get_future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    def create_future_log(self, topic: str, partition: int, target: LogDir) -> Log:
        """`<topic>-<p>.<uuid>-future/` in `target`: the copy a move fills before the swap."""
        current = self._logs[(topic, partition)]
        existing = self._future_logs.get((topic, partition))
        if existing is not None:
            return existing
        from minibroker_storage.log import Log

        d = target.path / log_future_dir_name(topic, partition)
        lg = Log.open(d, current.config, now_ms=self._now_ms, topic_id=current.topic_id)
        fsync_dir(target.path)
        self._future_logs[(topic, partition)] = lg
        logger.info("Created log for partition %s-%d in %s (future)", topic, partition, d)
        return lg

    def abort_future_log(self, topic: str, partition: int) -> None:
        future = self._future_logs.pop((topic, partition), None)
        if future is not None:
            future.rename_dir(future.dir.parent / log_delete_dir_name(topic, partition))
            self._deleted_logs.append((self._now_ms(), future))

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """The future log becomes the partition's log, the current one is renamed `-delete` and
        removed after file.delete.delay.ms (Kafka: LogManager.replaceCurrentWithFutureLog). The
        caller holds off appends to the current log while this runs."""
        tp = (topic, partition)
        current, future = self._logs[tp], self._future_logs.pop(tp)
        future.flush()
        future.rename_dir(future.dir.parent / log_dir_name(topic, partition))
        fsync_dir(future.dir.parent)
        self._logs[tp] = future
        current.flush()
        current.rename_dir(current.dir.parent / log_delete_dir_name(topic, partition))
        fsync_dir(current.dir.parent)
        self._deleted_logs.append((self._now_ms() + current.config.file_delete_delay_ms, current))
        logger.info("The current replica is successfully replaced with the future replica for %s-%d in %s",
                    topic, partition, future.dir.parent)
        return future

    def abandon_logs(self, topic: str, partitions: range) -> None:
        """Remove partitions whose creation failed half way (a directory may exist without its log
        registered), so that the next start finds nothing of them."""
        for p in partitions:
            lg = self._logs.pop((topic, p), None)
            if lg is not None:
                lg.close_handlers()
            d = next((ld.path / log_dir_name(topic, p) for ld in self.log_dirs
                      if (ld.path / log_dir_name(topic, p)).exists()), None)
            if d is None:
                continue
            # renamed first (no descriptor needed): a start finishes deleting `-delete` directories
            # if removing them here fails for want of descriptors
            gone = d.parent / log_delete_dir_name(topic, p)
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
            lg.rename_dir(lg.dir.parent / log_delete_dir_name(t, p))
            self._deleted_logs.append((now + lg.config.file_delete_delay_ms, lg))
            logger.info("Log for partition %s-%d is renamed to %s and is scheduled for deletion", t, p, lg.dir)
        for tp in [tp for tp in self._future_logs if tp[0] == topic]:
            future = self._future_logs.pop(tp)
            future.rename_dir(future.dir.parent / log_delete_dir_name(*tp))
            self._deleted_logs.append((now, future))
        for ld in self.log_dirs:
            if not ld.offline:
                fsync_dir(ld.path)
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
        every = dict(self._logs)
        with self._checkpoint_lock:
            for ld in self.log_dirs:
                if ld.offline:
                    continue  # Kafka: checkpoints skip offline directories
                logs = {tp: lg for tp, lg in every.items() if ld.holds(lg.dir)}
                try:
                    ld.recovery_points.write({tp: lg.recovery_point for tp, lg in logs.items()})
                    ld.log_start_offsets.write({
                        tp: lg.log_start_offset for tp, lg in logs.items()
                        if lg.segments.first is not None and lg.log_start_offset > lg.segments.first.base_offset})
                    ld.high_watermarks.write({tp: lg.high_watermark for tp, lg in logs.items()})
                    ld.cleaner_offsets.write({tp: off for tp, off in dict(self.cleaner_checkpoints).items()
                                              if tp in logs})
                except OSError as e:
                    # Kafka: a checkpoint that cannot be written takes its directory offline
                    # (LogManager.checkpointRecoveryOffsetsInDir -> LogDirFailureChannel)
                    if e.errno not in DIR_FAILURE_ERRNOS or len(self.log_dirs) == 1:
                        raise
                    self.failed_dirs.append((ld, e))

    def flush_all(self) -> None:
        for lg in list(self._logs.values()):
            lg.flush()

    def broker_epoch_from_clean_shutdown_files(self) -> int:
        """The broker epoch every directory's clean-shutdown file held at startup, or -1 when a
        directory is offline, had none, or they disagree (Kafka: LogManager.
        readBrokerEpochFromCleanShutdownFiles). The controller keeps a broker that registers with
        its last epoch in the ELR: it stopped cleanly (KIP-966)."""
        epoch = -1
        for ld in self.log_dirs:
            current = None if ld.offline else self._clean_shutdown_epochs.get(ld.path)
            if current is None:
                logger.info("Unable to read the broker epoch in %s.", ld.path)
                return -1
            if epoch != -1 and current != epoch:
                logger.info("Found different broker epochs in %s: %d and %d.", ld.path, epoch, current)
                return -1
            epoch = current
        return epoch

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker with
        the broker epoch of a KRaft broker (-1 otherwise; Kafka: LogManager.shutdown(brokerEpoch))."""
        logger.info("Shutting down.")
        ok = True
        for lg in list(self._logs.values()) + self.future_logs():
            try:
                lg.flush()
                lg.close()
            except OSError:
                ok = False
                logger.exception("Error while flushing and closing %s", lg.dir)
        for _, gone in self._deleted_logs:
            gone.close_handlers()
        self.checkpoint()
        self.take_failed_offline()
        for ld in self.log_dirs:
            if ok and self._loaded and not ld.offline:
                CleanShutdownFile(ld.path).write(broker_epoch)
            if ld.lock is not None:  # last: the directory is consistent for the next broker
                ld.lock.unlock()
                ld.lock = None
        logger.info("Shutdown complete.")


class _DirOnly:
    """A `-delete` directory found at startup: nothing open, only the directory to remove."""

    def __init__(self, dir: Path):
        self.dir = dir

    def delete(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def close_handlers(self) -> None:
        pass
