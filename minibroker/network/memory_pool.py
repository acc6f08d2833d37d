"""The memory pool: a broker-wide bound on the bytes of requests being read or queued, and of
response bytes waiting for slow readers (Kafka: `queued.max.request.bytes`, SimpleMemoryPool).

Theory of operation. A connection asks the pool for a frame's whole size as soon as it has read
the 4-byte size prefix (and for a small read-ahead slice before that), and gives it back once the
request has been handled. Like Kafka's pool in its non-strict mode, a request is granted whenever
any memory is free, even one larger than what is free: so a frame up to
`socket.request.max.bytes` is always admitted eventually, and the bytes held never exceed
`capacity + socket.request.max.bytes`. A connection whose next frame is refused stops being read
(back-pressure, not an error) and waits here; when memory is released the waiters are woken
smallest request first, so a metadata request or a small produce from another client is not
stuck behind a queue of 100 MB frames (Kafka wakes muted channels in selector order).

Response bytes (not file regions: those are sent from the page cache) are charged with `force`:
they are already built, so they always count, and while they hold the pool no connection reads
a new request.

The counters (`in_use`, `waiting`, `granted`, `refused`, `peak`) are plain attributes for
/metrics.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

UNBOUNDED = -1


class MemoryPool:
    def __init__(self, capacity: int):
        self.capacity = capacity  # bytes; UNBOUNDED (negative) never refuses
        self.in_use = 0
        self.peak = 0
        self.granted = 0  # allocations granted
        self.refused = 0  # allocations refused (a connection paused for memory)
        self._waiters: list[tuple[int, int, Callable[[], None]]] = []  # (size, seq, wake)
        self._seq = itertools.count()

    @property
    def bounded(self) -> bool:
        return self.capacity >= 0

    @property
    def available(self) -> int:
        return self.capacity - self.in_use if self.bounded else 1 << 62

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def try_allocate(self, size: int) -> bool:
        """Take `size` bytes if any memory is free (non-strict, as Kafka's pool for requests)."""
        if self.bounded and self.in_use >= self.capacity:
            self.refused += 1
            return False
        self._take(size)
        return True

    def force(self, size: int) -> None:
        """Count `size` bytes that already exist (a built response), free or not."""
        self._take(size)

    def _take(self, size: int) -> None:
        self.in_use += size
        self.granted += 1
        if self.in_use > self.peak:
            self.peak = self.in_use

    def release(self, size: int) -> None:
        if size <= 0:
            return
        self.in_use -= size
        # Wake the smallest waiters first while memory is free; each allocates in its callback.
        while self._waiters and (not self.bounded or self.in_use < self.capacity):
            _size, _seq, wake = heapq.heappop(self._waiters)
            wake()

    def wait(self, size: int, wake: Callable[[], None]) -> None:
        """Call `wake()` once memory is free, smallest `size` first."""
        heapq.heappush(self._waiters, (size, next(self._seq), wake))

    def cancel(self, wake: Callable[[], None]) -> None:
        """Forget a waiter (its connection closed)."""
        kept = [w for w in self._waiters if w[2] != wake]
        if len(kept) != len(self._waiters):
            self._waiters = kept
            heapq.heapify(self._waiters)
