"""Keyed one-shot timers on the event loop (Kafka: the coordinator runtime's timer).

Scheduling a key that is already scheduled replaces the earlier timer, which is how heartbeat
deadlines are pushed back. Callbacks run on the loop, one at a time, so they see and change the
coordinator's state without locks; there is no thread or task per group or member.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

log = logging.getLogger("minibroker.coordinator.timer")


class KeyedTimer:
    """One-shot timers by key, on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self._loop = loop
        self._handles: dict[Hashable, asyncio.TimerHandle] = {}

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def schedule(self, key: Hashable, delay_ms: int, fn: Callable[[], None]) -> None:
        self.cancel(key)

        def fire() -> None:
            self._handles.pop(key, None)
            try:
                fn()
            except Exception:
                log.exception("timer %r failed", key)

        self._handles[key] = self._get_loop().call_later(max(0, delay_ms) / 1000.0, fire)

    def cancel(self, key: Hashable) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._handles

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __len__(self) -> int:
        return len(self._handles)

    def cancel_where(self, matches: Callable[[Hashable], bool]) -> None:
        """Cancel the timers whose key `matches` (the timers of the groups of a partition that is
        unloaded: Kafka's CoordinatorRuntime cancels a shard's timers when it unloads it)."""
        for key in [k for k in self._handles if matches(k)]:
            self.cancel(key)
