"""The one wall clock of the broker (Kafka: org.apache.kafka.common.utils.Time).

Everything that needs "now" is handed a `Clock`, a function returning epoch milliseconds, so a
test can pass a fake one. It lives in the lowest layer that needs it (storage stamps segments and
retention with it) so that minibroker/ and storage/ share one definition.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    """Milliseconds since the epoch, as Kafka's Time.SYSTEM.milliseconds()."""
    return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (Kafka's MockTime): for tests that wait on timers."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.ms = start_ms

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms
