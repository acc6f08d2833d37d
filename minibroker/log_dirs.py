"""Several log directories (`log.dirs`): what DescribeLogDirs reports of each, AlterReplicaLogDirs
moving a partition between them, and a directory taken offline after an I/O error.

Moves mirror Kafka's ReplicaManager.alterReplicaLogDirs and ReplicaAlterLogDirsThread: the
partition gets a *future* log (`<topic>-<p>.<uuid>-future/`) in the destination directory; a task
copies the current log's batches into it as a follower would append them (producer state and
leader epochs rebuilt from the batches, no record decoded), following the current log's start
offset and truncations, while clients keep producing to and consuming from the current log. Once
the future log has reached the current log's end, the swap runs without yielding to the event
loop, so no append can slip between the last copy and the swap (Kafka takes the partition's
leaderIsrUpdateLock for this: Partition.maybeReplaceCurrentWithFutureReplica): the future
directory is renamed `<topic>-<p>`, the old one `-delete`, and the partition answers from the new
log from the next request on.

A failed directory (Kafka: LogDirFailureChannel, ReplicaManager.handleLogDirFailure): the
directory is marked offline, its partitions' logs are closed and their partitions answer
KAFKA_STORAGE_ERROR; the other directories keep serving; DescribeLogDirs reports the directory
with KAFKA_STORAGE_ERROR. Kafka stops the broker only when every directory has failed; so do we
(`on_all_offline`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.partition import Partition
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_protocol.apis import alter_replica_log_dirs, describe_log_dirs
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.log_dir import LogDir
from minibroker_storage.log_manager import CLUSTER_METADATA_TOPIC, LogManager

if TYPE_CHECKING:
    from minibroker_storage.log import Log

log = logging.getLogger("minibroker.log_dirs")

DLD = describe_log_dirs.RESPONSE
ARLD = alter_replica_log_dirs.RESPONSE
TopicPartition = tuple[str, int]

# how much one copy step reads (Kafka: replica.fetch.max.bytes for the ReplicaAlterLogDirsThread)
COPY_MAX_BYTES = 1024 * 1024
# the pause between copy steps once the future log has caught up and waits for the swap
IDLE_S = 0.05


@dataclass(slots=True)
class _Move:
    partition: Partition
    target: LogDir
    task: asyncio.Task[None] | None = None


class LogDirsManager:
    """The broker's log dirs as the admin APIs see them (Kafka: the log-dir parts of
    ReplicaManager, and ReplicaAlterLogDirsManager with its threads)."""

    def __init__(self, log_manager: LogManager, replica_manager: ReplicaManager, *,
                 cleaning: Callable[[], set[TopicPartition]] = set, topics: TopicRegistry | None = None):
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self._cleaning = cleaning
        self.topics = topics
        self._moves: dict[TopicPartition, _Move] = {}
        # KIP-858: called with a partition whose replica moved to another directory (a KRaft broker
        # tells the controller: BrokerMetadataPublisher.replica_moved)
        self.replica_moved: Callable[[str, int], None] | None = None
        # partitions whose log dir failed: offline until a restart (Kafka: HostedPartition.Offline)
        self.offline_partitions: set[TopicPartition] = set()
        log_manager.log_dir_failure_listeners.append(self._on_log_dir_failure)

    def _on_log_dir_failure(self, ld: LogDir, partitions: list[TopicPartition]) -> None:
        """Kafka: ReplicaManager.handleLogDirFailure. The moves into or out of the directory stop;
        its partitions keep their closed logs, which answer KAFKA_STORAGE_ERROR."""
        self.offline_partitions.update(partitions)
        for tp, move in list(self._moves.items()):
            if move.target is ld or tp in self.offline_partitions:
                self._cancel(tp)
        fetchers = self.replica_manager.fetcher_manager
        if fetchers is not None:
            # the followers stop fetching into the closed logs: a leader would count them caught up
            # and bring them back into the ISR (Kafka: handleLogDirFailure's removeFetcherForPartitions)
            fetchers.remove_fetcher_for_partitions(list(partitions))
        for tp in partitions:
            self.replica_manager.wake(*tp)  # parked fetches answer now
        if all(d.offline for d in self.log_manager.log_dirs):
            # Kafka halts the broker here ("all log dirs have failed"); we keep answering errors
            log.critical("Every log dir of this broker has failed: %s",
                         ",".join(str(d.path) for d in self.log_manager.log_dirs))

    # -- DescribeLogDirs -------------------------------------------------------------------------
    def describe(self, wanted: dict[str, set[int]] | None, with_space: bool) -> list[describe_log_dirs.DescribeLogDirsResponse.DescribeLogDirsResult]:
        """One result per configured directory (Kafka: ReplicaManager.describeLogDirs): the current
        and future logs it holds, their sizes and lags; KAFKA_STORAGE_ERROR for an offline one."""
        results = []
        currents = self.log_manager.logs()
        futures = {(lg.topic, lg.partition): lg for lg in self.log_manager.future_logs()}
        for ld in self.log_manager.log_dirs:
            path = str(ld.path.absolute())
            if ld.offline:
                results.append(DLD.DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path,
                                                         topics=[], total_bytes=-1, usable_bytes=-1))
                continue
            by_topic: dict[str, list[describe_log_dirs.DescribeLogDirsResponse.DescribeLogDirsPartition]] = {}
            for is_future, logs in ((False, currents), (True, futures)):
                for (topic, p), lg in sorted(logs.items()):
                    if not ld.holds(lg.dir) or (wanted is not None and p not in wanted.get(topic, ())):
                        continue
                    if is_future:
                        current = currents.get((topic, p))
                        lag = max((current.log_end_offset if current else 0) - lg.log_end_offset, 0)
                    else:
                        lag = max(lg.high_watermark - lg.log_end_offset, 0)
                    by_topic.setdefault(topic, []).append(DLD.DescribeLogDirsPartition(
                        partition_index=p, partition_size=lg.size_in_bytes(), offset_lag=lag,
                        is_future_key=is_future))
            total = usable = -1
            if with_space:
                usage = shutil.disk_usage(ld.path)
                total, usable = usage.total, usage.free
            results.append(DLD.DescribeLogDirsResult(
                error_code=0, log_dir=path,
                topics=[DLD.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in by_topic.items()],
                total_bytes=total, usable_bytes=usable, is_cordoned=False))
        return results

    # -- AlterReplicaLogDirs ---------------------------------------------------------------------
    def alter(self, dirs: Iterable[alter_replica_log_dirs.AlterReplicaLogDirsRequest.AlterReplicaLogDir]
              ) -> dict[TopicPartition, int]:
        """The error of each partition (Kafka: ReplicaManager.alterReplicaLogDirs)."""
        out: dict[TopicPartition, int] = {}
        for d in dirs:
            for t in d.topics:
                for p in t.partitions:
                    out[(t.name, p)] = self._alter_one(t.name, p, d.path)
        return out

    def _alter_one(self, topic: str, partition: int, path: str) -> int:
        target = self.log_manager.log_dir_by_path(path)
        if target is None:
            return ErrorCode.LOG_DIR_NOT_FOUND  # "Log dir ... is not found in the config."
        if target.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if topic == CLUSTER_METADATA_TOPIC:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        part = self.replica_manager.get_partition(topic, partition)
        if part is None:
            # Kafka keeps NotLeaderOrFollower as REPLICA_NOT_AVAILABLE here, for compatibility
            return ErrorCode.REPLICA_NOT_AVAILABLE
        current_dir = self.log_manager.log_dir_of(part.log)
        if current_dir.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        tp = (topic, partition)
        move = self._moves.get(tp)
        if move is not None:
            if move.target is target:
                return ErrorCode.NONE
            self._cancel(tp)  # a new destination: the old future log goes (Kafka: futureReplicaDirChanged)
        if current_dir is target:
            return ErrorCode.NONE  # already there (Kafka: maybeCreateFutureReplica creates nothing)
        if any(ld.offline for ld in self.log_manager.log_dirs):
            # Kafka creates no future log while a directory is offline: the partition could end
            # up with future logs in two directories
            return ErrorCode.KAFKA_STORAGE_ERROR
        try:
            self.log_manager.create_future_log(topic, partition, target)
        except OSError as e:
            log.error("Could not create the future log of %s-%d in %s: %s", topic, partition, target.path, e)
            return ErrorCode.KAFKA_STORAGE_ERROR
        move = self._moves[tp] = _Move(part, target)
        move.task = asyncio.get_running_loop().create_task(self._copy(tp, move), name=f"alter-log-dirs-{topic}-{partition}")
        log.info("Moving %s-%d from %s to %s", topic, partition, current_dir.path, target.path)
        return ErrorCode.NONE

    def moving(self) -> set[TopicPartition]:
        return set(self._moves)

    def _cancel(self, tp: TopicPartition) -> None:
        move = self._moves.pop(tp, None)
        if move is not None and move.task is not None:
            move.task.cancel()
        self.log_manager.abort_future_log(*tp)

    async def _copy(self, tp: TopicPartition, move: _Move) -> None:
        """Fill the future log from the current one until the swap (Kafka:
        ReplicaAlterLogDirsThread.processPartitionData, then maybeReplaceCurrentWithFutureReplica)."""
        try:
            while True:
                part = self.replica_manager.get_partition(*tp)
                future = self.log_manager.get_future_log(*tp)
                if part is not None and part is not move.partition:
                    move.partition = part  # the partition was remade (e.g. leader to follower)
                if part is None or future is None:
                    self._cancel(tp)
                    return
                if self._copy_step(part, future) or tp in self._cleaning():
                    await asyncio.sleep(0)
                    continue
                # caught up: swap now, with no await between the last check and the swap
                current = part.log
                if future.log_end_offset == current.log_end_offset:
                    future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
                    part.log = self.log_manager.replace_current_with_future(*tp)
                    if self.topics is not None:  # the coordinators find logs through the registry
                        self.topics.replace_log(part.log)
                    self._moves.pop(tp, None)
                    if self.replica_moved is not None:
                        self.replica_moved(*tp)
                    return
                await asyncio.sleep(IDLE_S)
        except asyncio.CancelledError:
            raise
        except (OSError, KafkaError) as e:
            log.error("Moving %s-%d to %s failed; the future log is dropped: %s", tp[0], tp[1],
                      move.target.path, e)
            self._moves.pop(tp, None)
            with contextlib.suppress(OSError):
                self.log_manager.abort_future_log(*tp)

    @staticmethod
    def _copy_step(part: Partition, future: Log) -> bool:
        """Append the next batches of the current log to the future one; True if any were."""
        current = part.log
        # the current log moved its start past the copy (retention, DeleteRecords) or was
        # truncated below it (a follower's divergence): start the copy again from its start
        if future.log_end_offset > current.log_end_offset or future.log_end_offset < current.log_start_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
        elif future.log_start_offset < current.log_start_offset <= future.log_end_offset:
            future.increment_log_start_offset(current.log_start_offset, "the current log's start moved")
        if future.log_end_offset == 0 and current.log_start_offset > 0:
            future.truncate_fully_and_start_at(current.log_start_offset)
        if future.log_end_offset >= current.log_end_offset:
            return False
        info = current.read(future.log_end_offset, COPY_MAX_BYTES, max_offset=current.log_end_offset)
        if info.region is None or not len(info.region):
            return False
        future.append_as_follower(info.region.read_all())
        return True

    async def stop(self) -> None:
        """Cancel the copies; their future logs stay on disk and the next start removes them."""
        tasks = [m.task for m in self._moves.values() if m.task is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._moves.clear()


def alter_response(errors: dict[TopicPartition, int]) -> alter_replica_log_dirs.AlterReplicaLogDirsResponse:
    by_topic: dict[str, list[alter_replica_log_dirs.AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult]] = {}
    for (topic, p), code in errors.items():
        by_topic.setdefault(topic, []).append(ARLD.AlterReplicaLogDirPartitionResult(partition_index=p,
                                                                                      error_code=code))
    return ARLD(throttle_time_ms=0, results=[ARLD.AlterReplicaLogDirTopicResult(topic_name=t, partitions=ps)
                                             for t, ps in by_topic.items()])
