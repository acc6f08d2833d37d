"""The broker's log cleaner task (Kafka: LogCleaner's CleanerThread, one of them).

On the event loop it picks the filthiest compacted log (cheap: segment sizes and headers), hands
the cleaning to an executor thread (reading and decoding records, writing the cleaned segments),
then swaps the result in on the loop, where appends and fetches run, and moves the log's
checkpoint (`cleaner-offset-checkpoint`, written with the other checkpoints). When no log needs
cleaning it sleeps `log.cleaner.backoff.ms`. `log.cleaner.enable=false` turns it off.

A log being cleaned is marked in `in_progress` so that retention of a `compact,delete` log does
not retire the segments being read; a cleaning whose segments were retired anyway (DeleteRecords,
topic deletion) is dropped by `swap_in`.

The cleaning itself (minibroker_storage.cleaner, which reads the record formats) is imported when a compacted
log first exists: a broker without one starts without it (issue 22, tests/test_startup_imports.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker_storage.clock import Clock
from minibroker_storage.log_manager import LogManager

if TYPE_CHECKING:
    from minibroker_storage.cleaner import CleanResult, LogToClean
    from minibroker_storage.log import Log

log = logging.getLogger("minibroker.cleaner")


class LogCleanerTask:
    def __init__(self, log_manager: LogManager, config: DynamicBrokerConfig, clock: Clock,
                 file_deletion_lock: asyncio.Lock) -> None:
        self.log_manager = log_manager
        self.config = config
        self.clock = clock
        self.file_deletion_lock = file_deletion_lock  # shared with retention's file removal
        self.in_progress: set[tuple[str, int]] = set()
        self.horizons: dict[tuple[str, int], int] = {}  # earliest pending tombstone/marker delete horizon
        self.cleanings = 0
        self._scanned: set[tuple[str, int]] = set()
        self.uncleanable: set[tuple[str, int]] = set()  # Kafka: LogCleanerManager.uncleanablePartitions
        self._job: asyncio.Future[CleanResult] | None = None

    async def _learn_horizons(self) -> None:
        """Once per log: the delete horizons already on disk (a restart forgets the in-memory ones)."""
        from minibroker_storage.cleaner import (
            pending_delete_horizon,  # lazy: imports minibroker_storage.log (not at start-up)
        )

        loop = asyncio.get_running_loop()
        for tp, lg in self.log_manager.logs().items():
            if tp in self._scanned or not lg.config.compact:
                continue
            self._scanned.add(tp)
            try:
                horizon = await loop.run_in_executor(None, pending_delete_horizon, lg)
            except (OSError, ValueError) as e:
                log.warning("cannot read the delete horizons of %s: %s", lg.dir.name, e)
                continue
            if horizon is not None and tp not in self.horizons:
                self.horizons[tp] = horizon

    def _candidates(self, now: int) -> list[LogToClean]:
        from minibroker_storage.cleaner import (
            log_to_clean,  # lazy: imports minibroker_storage.log (not at start-up)
        )

        lm = self.log_manager
        out = []
        for tp, lg in lm.logs().items():
            if not lg.config.compact or tp in self.in_progress or tp in self.uncleanable:
                continue
            try:
                out.append(log_to_clean(lg, lm.cleaner_checkpoints.get(tp), now, self.horizons.get(tp)))
            except Exception:
                log.exception("cannot inspect %s for cleaning", lg.dir.name)
        return out

    async def clean_once(self) -> bool:
        """Clean the filthiest log if one needs it; True if a cleaning was swapped in."""
        if not any(lg.config.compact for lg in self.log_manager.logs().values()):
            return False  # nothing to compact (and minibroker_storage.cleaner not imported yet)
        from minibroker_storage.cleaner import (  # lazy: imports minibroker_storage.log (not at start-up)
            CleanerAborted,
            UncleanableLog,
            clean,
            grab_filthiest,
        )

        await self._learn_horizons()
        now = self.clock()
        ltc = grab_filthiest(self._candidates(now))
        if ltc is None:
            return False
        lg: Log = ltc.log
        tp = (lg.topic, lg.partition)
        self.in_progress.add(tp)
        try:
            loop = asyncio.get_running_loop()
            self._job = loop.run_in_executor(None, clean, lg, ltc, now, self.clock)
            try:
                result = await self._job
            except UncleanableLog as e:
                self._job = None
                self.uncleanable.add(tp)
                log.warning("%s is uncleanable and will not be compacted: %s", lg.dir.name, e)
                return False
            except CleanerAborted as e:
                self._job = None
                log.info("cleaning of %s aborted: %s", lg.dir.name, e)
                return False
            self._job = None  # kept only while the task is cancelled mid-cleaning (see stop)
            async with self.file_deletion_lock:
                return self._finish(result)
        finally:
            self.in_progress.discard(tp)

    def _finish(self, result: CleanResult) -> bool:
        from minibroker_storage.cleaner import (
            swap_in,  # lazy: imports minibroker_storage.log (not at start-up)
        )

        lg = result.log
        tp = (lg.topic, lg.partition)
        if not swap_in(result):
            log.info("cleaning of %s dropped: the log changed meanwhile", lg.dir.name)
            return False
        self.log_manager.cleaner_checkpoints[tp] = result.end_offset
        if result.earliest_horizon is not None:
            self.horizons[tp] = result.earliest_horizon
        else:
            self.horizons.pop(tp, None)
        self.cleanings += 1
        return True

    async def stop(self) -> None:
        """After the task was cancelled: let a cleaning running on its thread end (the thread
        cannot be interrupted) and swap its result in while the logs are still open."""
        job, self._job = self._job, None
        if job is None or job.done() and job.cancelled():
            return
        try:
            result = await asyncio.shield(job)
        except Exception:
            return
        self._finish(result)

    async def run(self) -> None:
        while True:
            backoff = self.config.get("log.cleaner.backoff.ms") / 1000
            try:
                cleaned = await self.clean_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("log cleaner failed")
                cleaned = False
            await asyncio.sleep(0 if cleaned else backoff)

