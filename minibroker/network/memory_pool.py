"""The memory pool: a broker-wide bound on the bytes of requests being read or queued, and of
response bytes waiting for slow readers (Kafka: `queued.max.request.bytes`, SimpleMemoryPool).

Theory of operation. A connection asks the pool for the bytes of each read before it reads them
(minibroker.network.request_reader), so a request is charged as its bytes arrive, not when its
size prefix claims them: six bytes claiming 100 MiB hold six bytes (issue 30; Kafka's
NetworkReceive allocates the whole size from its pool at once). It gives them back once the request
has been answered. A read is granted whenever any memory is free, even one larger than what is
free (Kafka's pool in its non-strict mode). When the pool is full, one connection at a time — the
*overflow* holder — may still read, until the frame it is reading is complete: so a frame up to
`socket.request.max.bytes` is always admitted eventually, frames charged part-way can never wait
for each other forever, and the bytes held never exceed about `capacity +
socket.request.max.bytes`. A connection whose read is refused stops being read (back-pressure,
not an error) and waits here; when memory is released, or the overflow is free again, the
waiters are woken smallest request first, so a metadata request or a small produce from another
client is not stuck behind a queue of 100 MB frames (Kafka wakes muted channels in selector
order).

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
        self._waiters: list[tuple[int, int, Callable[[], None], object]] = []  # (size, seq, wake, owner)
        self._seq = itertools.count()
        # the one reader allowed past a full pool until its frame is complete (None: nobody)
        self.overflow: object | None = None

    @property
    def bounded(self) -> bool:
        return self.capacity >= 0

    @property
    def available(self) -> int:
        return self.capacity - self.in_use if self.bounded else 1 << 62

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def try_allocate(self, size: int, owner: object | None = None) -> bool:
        """Take `size` bytes if any memory is free (non-strict, as Kafka's pool for requests). A
        reader that names itself (`owner`) is also granted past a full pool when the overflow is
        free or already its own; it holds the overflow until `end_overflow(owner)`."""
        if self.bounded and self.in_use >= self.capacity:
            if owner is None or (self.overflow is not None and self.overflow is not owner):
                self.refused += 1
                return False
            self.overflow = owner
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
        self._wake()

    def end_overflow(self, owner: object) -> None:
        """`owner` finished the frame it read past a full pool (or closed): the next may."""
        if self.overflow is owner:
            self.overflow = None
            self._wake()

    def _wake(self) -> None:
        # Wake the smallest waiters first while memory is free; each allocates in its callback.
        while self._waiters and (not self.bounded or self.in_use < self.capacity):
            _size, _seq, wake, _owner = heapq.heappop(self._waiters)
            wake()
        # Full, and nobody reads past it: the smallest waiter that may take the overflow does, or
        # readers holding parts of frames would wait for each other forever.
        if self._waiters and self.overflow is None:
            owners = [w for w in self._waiters if w[3] is not None]
            if owners:
                first = min(owners)
                self._waiters.remove(first)
                heapq.heapify(self._waiters)
                first[2]()

    def wait(self, size: int, wake: Callable[[], None], owner: object | None = None) -> None:
        """Call `wake()` once memory is free, smallest `size` first (or, for a reader naming
        itself, once it may take the overflow)."""
        heapq.heappush(self._waiters, (size, next(self._seq), wake, owner))

    def cancel(self, wake: Callable[[], None]) -> None:
        """Forget a waiter (its connection closed)."""
        kept = [w for w in self._waiters if w[2] != wake]
        if len(kept) != len(self._waiters):
            self._waiters = kept
            heapq.heapify(self._waiters)
