"""A rate over sampled windows, as Kafka's metrics measure one (SampledStat, Rate, QuotaUtils).

Each sample covers `window_ms`; `samples` of them are kept and older ones purged. The rate is the
sum of the samples over the time they span, but never over less than `samples - 1` whole windows
(Kafka's Rate.windowSize): a client starting from nothing may therefore send up to about
`(samples - 1) * window` seconds' worth of its quota at once, and is throttled after that, exactly
as against Kafka.
"""

from __future__ import annotations


class SampledRate:
    __slots__ = ("samples", "window_ms", "_starts", "_values", "_current")

    def __init__(self, samples: int, window_ms: int, now_ms: float):
        self.samples = max(samples, 2)  # Kafka's metrics need at least two samples
        self.window_ms = window_ms
        self._starts = [now_ms] + [0.0] * (self.samples - 1)
        self._values = [0.0] * self.samples
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        if now_ms >= self._starts[self._current] + self.window_ms:
            self._current = (self._current + 1) % self.samples
            self._starts[self._current] = now_ms
            self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: float) -> None:
        expire_age = self.samples * self.window_ms
        for i in range(self.samples):
            if now_ms - self._starts[i] >= expire_age:
                self._starts[i] = now_ms
                self._values[i] = 0.0

    def window_size_ms(self, now_ms: float) -> float:
        """The time the rate is measured over (Kafka: Rate.windowSize)."""
        self._purge(now_ms)
        oldest = min(self._starts)
        elapsed = now_ms - oldest
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def rate(self, now_ms: float) -> float:
        """Per second."""
        window = self.window_size_ms(now_ms)
        return sum(self._values) / (window / 1000) if window > 0 else 0.0

    def throttle_ms(self, bound: float, now_ms: float) -> int:
        """How long the client must wait for its rate to be back at `bound` (Kafka:
        QuotaUtils.throttleTime): (rate - bound) / bound of the measured window; 0 if not above."""
        window = self.window_size_ms(now_ms)
        if window <= 0 or bound <= 0:
            return 0
        observed = sum(self._values) / (window / 1000)
        if observed <= bound:
            return 0
        return int(round((observed - bound) / bound * window))

    def unrecord(self, value: float, now_ms: float) -> None:
        """Take back a recorded value (Kafka does for a fetch answered empty because throttled)."""
        self.record(-value, now_ms)
