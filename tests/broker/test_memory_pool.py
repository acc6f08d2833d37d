"""MemoryPool alone (queued.max.request.bytes, issue 24), driven by hypothesis with clients that
behave as minibroker.network.processor.Connection does: ask for a frame's bytes, wait when refused and
take the bytes in the wake-up callback, give them back when answered, and on close give back what
they hold and cancel their wait.

Properties: a grant never takes the pool past its capacity by more than that one request (Kafka's
non-strict pool); the waiter woken is always the smallest one waiting (first come among equals);
everything is back when every client has closed."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.network.memory_pool import MemoryPool
from minibroker.network.request_reader import RequestReader

CLIENTS = 6


@dataclass
class Client:
    held: list[int] = field(default_factory=list)
    waiting: int | None = None  # the size it waits for
    seq: int = 0  # order it started waiting in


class Model:
    def __init__(self, capacity: int):
        self.pool = MemoryPool(capacity)
        self.clients = [Client() for _ in range(CLIENTS)]
        self.wakes = [self._waker(i) for i in range(CLIENTS)]
        self.max_request = 0
        self._seq = 0
        self.woken: list[int] = []

    def _waker(self, i: int):
        def wake() -> None:
            c = self.clients[i]
            assert c.waiting is not None, "woken without waiting"
            # the smallest waiter, first come among equals
            others = [(o.waiting, o.seq) for o in self.clients if o.waiting is not None]
            assert (c.waiting, c.seq) == min(others), (c.waiting, others)
            size, c.waiting = c.waiting, None
            self.woken.append(size)
            self._grant(i, size)

        return wake

    def _grant(self, i: int, size: int) -> None:
        before = self.pool.in_use
        assert self.pool.try_allocate(size), "woken while the pool is full"
        # granted only while under capacity: over it by at most this one request
        assert before < self.pool.capacity
        assert self.pool.in_use <= self.pool.capacity + self.max_request
        self.clients[i].held.append(size)

    def ask(self, i: int, size: int) -> None:
        c = self.clients[i]
        if c.waiting is not None:
            return  # a paused connection reads nothing, so asks for nothing
        self.max_request = max(self.max_request, size)
        before = self.pool.in_use
        if self.pool.try_allocate(size):
            assert before < self.pool.capacity
            c.held.append(size)
        else:
            assert before >= self.pool.capacity
            c.waiting, c.seq = size, self._seq
            self._seq += 1
            self.pool.wait(size, self.wakes[i])

    def answer(self, i: int) -> None:
        c = self.clients[i]
        if c.held:
            self.pool.release(c.held.pop(0))

    def close(self, i: int) -> None:
        c = self.clients[i]
        if c.waiting is not None:
            self.pool.cancel(self.wakes[i])
            c.waiting = None
        held, c.held = sum(c.held), []
        self.pool.release(held)


ops = st.lists(st.tuples(st.sampled_from(["ask", "ask", "answer", "close"]), st.integers(0, CLIENTS - 1),
                         st.integers(1, 400)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(capacity=st.integers(1, 1000), ops=ops)
def test_pool_bound_smallest_first_and_no_leak(capacity: int, ops: list[tuple[str, int, int]]) -> None:
    m = Model(capacity)
    for op, i, size in ops:
        if op == "ask":
            m.ask(i, size)
        elif op == "answer":
            m.answer(i)
        else:
            m.close(i)
        assert m.pool.in_use == sum(sum(c.held) for c in m.clients)
        assert m.pool.waiting == sum(c.waiting is not None for c in m.clients)
        assert m.pool.in_use < m.pool.capacity + max(m.max_request, 1)
        # nobody waits while memory is free (a release woke them)
        assert m.pool.waiting == 0 or m.pool.in_use >= m.pool.capacity
    for i in range(CLIENTS):
        m.close(i)
    assert (m.pool.in_use, m.pool.waiting) == (0, 0)
    assert m.pool.peak <= capacity + max(m.max_request, 1)


def test_wakes_smallest_first_across_one_release() -> None:
    m = Model(100)
    m.ask(0, 100)  # fills the pool
    for i, size in ((1, 50), (2, 10), (3, 30), (4, 10)):
        m.ask(i, size)
    assert m.pool.waiting == 4
    m.answer(0)  # 100 free: 10, 10 (first come first), 30, 50 — each granted while under capacity
    assert m.woken == [10, 10, 30, 50]
    assert m.pool.in_use == 100 and m.pool.waiting == 0


def test_unbounded_pool_never_refuses() -> None:
    pool = MemoryPool(-1)
    assert all(pool.try_allocate(1 << 30) for _ in range(8))
    assert pool.refused == 0


def test_one_reader_at_a_time_past_a_full_pool() -> None:
    """Issue 30: readers that name themselves may go past a full pool one at a time (the overflow),
    until the frame they are reading is complete; then the smallest waiting reader takes it."""
    pool = MemoryPool(100)
    a, b, c = object(), object(), object()
    assert pool.try_allocate(100, a)  # free memory: an ordinary grant
    assert pool.overflow is None
    assert pool.try_allocate(50, a) and pool.overflow is a  # full: a takes the overflow
    assert pool.try_allocate(50, a)  # and keeps reading
    assert not pool.try_allocate(10, b) and not pool.try_allocate(10)  # nobody else
    woken: list[str] = []
    pool.wait(30, lambda: woken.append("b") or pool.try_allocate(30, b), b)
    pool.wait(20, lambda: woken.append("c") or pool.try_allocate(20, c), c)
    pool.end_overflow(a)  # a's frame is complete: the smallest waiter (c) may go past the full pool
    assert woken == ["c"] and pool.overflow is c
    pool.end_overflow(c)
    assert woken == ["c", "b"] and pool.overflow is b


def test_a_size_prefix_is_not_charged_for_what_it_claims() -> None:
    """Issue 30, finding 1: the bytes read are charged, not the 100 MiB a size prefix claims."""
    pool = MemoryPool(1024 * 1024)
    reader = RequestReader(200 * 1024 * 1024, pool, "test", lambda: None)
    assert reader.reserve() > 0
    reader.feed((100 * 1024 * 1024).to_bytes(4, "big") + b"\0\0")
    assert pool.in_use == 6
    assert 0 < reader.reserve() <= 256 * 1024  # the next read: a slice, not the frame's claim
    reader.release_all()
    assert pool.in_use == 0


def test_a_close_drops_the_partly_read_frame_at_once() -> None:
    """A connection is a reference cycle, collected only by a gc pass: its partly read frame must
    not wait for one (300 closed attackers held 3 MiB each, RSS 1.4 GB, test_limits)."""
    pool = MemoryPool(8 * 1024 * 1024)
    reader = RequestReader(200 * 1024 * 1024, pool, "test", lambda: None)
    reader.reserve()
    reader.feed((100 * 1024 * 1024).to_bytes(4, "big") + bytes(200_000))
    assert reader.partial_bytes == 200_000 and reader.in_frame
    reader.release_all()
    assert reader.partial_bytes == 0 and not reader.in_frame and pool.in_use == 0
