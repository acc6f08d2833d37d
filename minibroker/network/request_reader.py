"""`RequestReader`: size-prefixed request frames out of a connection's bytes, each charged to the
memory pool (Kafka: NetworkReceive, and the Selector's use of `queued.max.request.bytes`).

Theory of operation: bytes go into a sans-IO `FrameReader` (minibroker_protocol.framing), which rejects a
size prefix above `max_frame_size` (`socket.request.max.bytes`, or `sasl.server.max.receive.size`
before authentication) before buffering the body. Before each read the connection asks
`reserve()` how many bytes it may read, and those bytes are charged to the pool: a frame is
charged as it arrives, never for what its size prefix merely claims (issue 30: six bytes claiming
100 MiB held the whole pool for 30 s), and what a read did not fill is given back at once. When
the pool refuses, `reserve()` returns 0 and the connection stops reading until the pool calls back
(`on_memory`): back-pressure, not an error. Past a full pool one reader at a time may go on until
its frame is complete (MemoryPool's overflow), so partly read frames cannot wait for each other
forever. A frame stays charged until its request has been answered (`frame_done`); `release_all`
gives everything back when the connection closes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from minibroker.network.memory_pool import MemoryPool
from minibroker_protocol.framing import FrameReader

log = logging.getLogger("minibroker.network.request_reader")

RECV_SIZE = 256 * 1024  # the most one read takes
# Bytes read beyond the frame in progress (the next size prefixes, pipelined small requests),
# charged to the memory pool like the frames themselves.
_READ_AHEAD = 64 * 1024


class RequestReader:
    """Frames of one connection and the pool memory they hold. `feed` raises FrameError."""

    def __init__(self, max_frame_size: int, pool: MemoryPool | None, peer: str, on_memory: Callable[[], None]):
        self._frames = FrameReader(max_frame_size)
        self._pool = pool
        self._peer = peer
        self._on_memory = on_memory  # the pool freed what the next read needs: read again
        # this connection holds `charged` bytes of the pool, at least the bytes it has buffered;
        # `queued_bytes` of them are whole frames (with their size prefix) read and not yet answered
        self.charged = 0
        self.queued_bytes = 0
        self.waiting_memory = False
        self._memory_pauses = 0

    @property
    def partial_bytes(self) -> int:
        """Bytes of a frame not yet complete (the slow-request sweep reports them)."""
        return self._frames.buffered

    @property
    def in_frame(self) -> bool:
        """Part of a frame has been read (a close now cuts a request in the middle)."""
        return bool(self._frames.buffered) or self._frames.pending_size() is not None

    @property
    def max_frame_size(self) -> int:
        return self._frames.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        """The largest size prefix accepted from now on (lowered until a SASL login completes)."""
        self._frames.max_frame_size = size

    def reserve(self) -> int:
        """Charge the pool for the next read; how many bytes may be read now (0: reading waits
        until `on_memory` is called): the rest of the frame in progress and a read-ahead slice
        (the next size prefixes, pipelined small requests), at most RECV_SIZE."""
        if self._pool is None:
            return RECV_SIZE
        held = self.queued_bytes + self._frame_bytes()
        need = self._frames.pending_size()
        rest = need - self._frames.buffered if need is not None else 0
        want = held + min(rest + _READ_AHEAD, RECV_SIZE)
        if self.charged < want:
            if not self._pool.try_allocate(want - self.charged, self):
                if need is None and self._frames.buffered < 4:
                    # Kafka's NetworkReceive reads the size prefix outside the pool: learn what the
                    # next request needs, then wait by it, so a small request from a client is not
                    # queued behind 100 MB frames that merely arrived first
                    return 4 - self._frames.buffered
                self._wait_for_memory(want - self.charged, rest)
                return 0
            self.charged = want
        return min(self.charged - held, RECV_SIZE)

    def feed(self, data: bytes) -> list[bytes | bytearray]:
        """The frames `data` completes, each counted as queued until `frame_done`."""
        self._frames.feed(data)
        frames: list[bytes | bytearray] = []
        while (frame := self._frames.next_frame()) is not None:
            frames.append(frame)
            self.queued_bytes += len(frame) + 4
        self._trim_charge()
        if self._pool is not None and (frames or not self.in_frame):
            self._pool.end_overflow(self)  # a frame read past a full pool is complete
        return frames

    def frame_done(self, size: int) -> None:
        """A request (`size` bytes with its prefix) has been answered: its memory is free."""
        self.queued_bytes -= size
        if self._pool is not None:
            self.charged -= size
            self._pool.release(size)

    def release_all(self) -> None:
        """The connection closed: stop waiting and give back every byte held."""
        if self._pool is not None:
            if self.waiting_memory:
                self._pool.cancel(self._memory_freed)
                self.waiting_memory = False
            held, self.charged, self.queued_bytes = self.charged, 0, 0
            self._pool.release(held)
            self._pool.end_overflow(self)
        self._frames.clear()

    def _frame_bytes(self) -> int:
        """Bytes of the frame in progress (and read-ahead) in the frame reader, prefix included."""
        return self._frames.buffered + (4 if self._frames.pending_size() is not None else 0)

    def _wait_for_memory(self, size: int, rest: int) -> None:
        assert self._pool is not None
        self.waiting_memory = True
        self._memory_pauses += 1
        need = self._frames.pending_size()
        (log.info if self._memory_pauses == 1 else log.debug)(
            "pausing reads from %s: %d bytes of %s wait for memory (queued.max.request.bytes=%d, %d in use)",
            self._peer, size, f"a {need}-byte request" if need is not None else "read-ahead",
            self._pool.capacity, self._pool.in_use)
        self._pool.wait(rest, self._memory_freed, self)  # the request nearest completion first

    def _memory_freed(self) -> None:
        self.waiting_memory = False
        self._on_memory()

    def _trim_charge(self) -> None:
        """Charge exactly the bytes held: the queued frames and what has arrived of the next one."""
        if self._pool is None:
            return
        keep = self.queued_bytes + self._frame_bytes()
        if self.charged < keep:  # a size prefix read past a full pool (reserve): count it now
            self._pool.force(keep - self.charged)
            self.charged = keep
        elif self.charged > keep:
            self._pool.release(self.charged - keep)
            self.charged = keep
