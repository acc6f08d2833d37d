"""The broker's periodic log work (Kafka: the tasks LogManager.startup schedules —
kafka-log-flusher, kafka-recovery-point-checkpoint, kafka-log-retention, kafka-delete-logs).

One task on the loop ticks at most once a second: flushes whose `flush.ms` / `flush.messages`
came due (and rolled segments), recovery-point checkpoints every
`log.flush.offset.checkpoint.interval.ms`, and retention every `log.retention.check.interval.ms`.
Blocking file work (fsync, close, unlink) runs off the loop; decisions that change a log's
segment list run on it, because appends and fetches read that list there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker_storage.clock import Clock
from minibroker_storage.log_manager import LogManager

log = logging.getLogger("minibroker.log_scheduler")

TopicPartition = tuple[str, int]


class LogScheduler:
    def __init__(self, log_manager: LogManager, config: DynamicBrokerConfig, clock: Clock,
                 file_deletion_lock: asyncio.Lock, busy: Callable[[], set[TopicPartition]]) -> None:
        self.log_manager = log_manager
        self.config = config
        self.clock = clock
        # held while retired segment files are removed off the loop, so that the cleaner does not
        # retire more segments of a log at the same moment (its swap waits for the lock)
        self.file_deletion_lock = file_deletion_lock
        self.busy = busy  # partitions the cleaner is reading: retention waits for its next round

    async def run(self) -> None:
        cfg = self.config.current
        flush_every = cfg.get("log.flush.scheduler.interval.ms")
        checkpoint_every = cfg.get("log.flush.offset.checkpoint.interval.ms")
        retention_every = cfg.get("log.retention.check.interval.ms")
        # log.flush.scheduler.interval.ms defaults to Long.MAX_VALUE ("never"); tick at least once a
        # second anyway, for checkpoints, retention and flush.ms.
        tick = max(0.05, min(1.0, flush_every / 1000 if 0 < flush_every < 1 << 40 else 1.0, retention_every / 1000))
        last_ckpt = last_ret = self.clock()
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(tick)
            for lg in list(self.log_manager.logs().values()):
                if lg.needs_flush():  # flush.ms / flush.messages, or a rolled segment: fsync off the loop
                    await loop.run_in_executor(None, lg.maybe_flush)
            now = self.clock()
            if now - last_ckpt >= checkpoint_every:
                last_ckpt = now
                await loop.run_in_executor(None, self.log_manager.checkpoint)
                self.log_manager.take_failed_offline()  # a failed log dir's checkpoint (minibroker.log_dirs)
            if now - last_ret >= retention_every:
                last_ret = now
                self.run_retention()
                # closing and unlinking retired files is blocking work: off the loop, one log at a time
                async with self.file_deletion_lock:
                    for lg in list(self.log_manager.logs().values()):
                        await loop.run_in_executor(None, lg.cleanup_deleted, self.clock())
                self.log_manager.cleanup_deleted(self.clock())  # `-delete` directories of deleted topics

    def run_retention(self) -> None:
        """Retire segments past retention (renames only; Kafka: UnifiedLog.deleteOldSegments). Runs
        on the loop because it changes the segment list that appends and fetches use."""
        busy = self.busy()
        for tp, lg in list(self.log_manager.logs().items()):
            if tp in busy:
                continue
            try:
                lg.delete_old_segments()
            except Exception:
                log.exception("retention failed for %s-%d", lg.topic, lg.partition)
