"""`Transport`: a connection's bytes on a plain TCP socket (Kafka: PlaintextTransportLayer).

Theory of operation: the connection owns a non-blocking socket and drives it with the event
loop's `add_reader` / `add_writer` rather than through an asyncio transport. That is what lets the
fetch path hand segment ranges to `os.sendfile` on any loop: uvloop implements neither
`loop.sendfile` nor `loop.sock_sendfile`, and neither loop lets us `add_writer` on a socket that a
transport owns (measured; see README "Why the connection owns its socket").

Writing: a response is a list of chunks — bytes, and `FileRegion`s for record data. Bytes go out
with `send`, regions with `os.sendfile`; whatever the socket does not take now waits for
writability. Response bytes (not file regions: those are sent from the page cache) are charged to
the memory pool until the socket has taken them. `on_drained` is called each time the queue
empties; `close` is called with the reason when the socket fails.

TLS listeners use minibroker.network.tls_transport.TlsTransport, which encrypts instead of
calling sendfile.
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from minibroker.network.memory_pool import MemoryPool

if TYPE_CHECKING:
    from minibroker_protocol.codec import Chunk

BYTES_LIKE = (bytes, bytearray, memoryview)
_SENDFILE_CHUNK = 8 * 1024 * 1024
# With TCP_NODELAY every send is its own segment: a fetch response's header, its sendfile'd
# records and its trailing fields cost a one-record fetch three segments and the client three
# wake-ups (issue 22, end-to-end latency). TCP_CORK holds partial segments while a response with
# file regions is written and sends them together when the queue drains; the records stay
# zero-copy (Linux only; elsewhere the three sends go out as before).
_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)


# TlsTransport (interpreted: loaded for TLS listeners only) extends it
@mypyc_attr(allow_interpreted_subclasses=True)
class Transport:
    """Plain TCP: reads as they come, writes with send and sendfile."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, pool: MemoryPool | None,
                 on_drained: Callable[[], None], close: Callable[[str | None], None]):
        self.sock = sock
        self.fd = sock.fileno()
        self.loop = loop
        self._pool = pool
        self._on_drained = on_drained
        self._close = close
        self.out: collections.deque[Chunk] = collections.deque()  # bytes-like or regions, with progress
        self.out_offset = 0  # progress into the first chunk
        self.out_bytes = 0  # bytes queued and not yet taken by the socket
        self.out_mem = 0  # response bytes (not file regions) charged to the pool
        self.writing = False  # waiting for writability
        self._corked = False  # TCP_CORK set while a response with file regions is written
        # time.monotonic() the socket last took part of a queue it could not take whole (the
        # idle sweep closes a client that stopped reading its answers)
        self.last_progress = 0.0

    # -- reading ------------------------------------------------------------------------------
    def receive(self, data: bytes) -> bytes | None:
        """The request bytes in what was read (None: the connection was closed meanwhile)."""
        return data

    @property
    def handshake_incomplete(self) -> bool:
        """A close now interrupts a security handshake (never, on plain TCP)."""
        return False

    # -- writing ------------------------------------------------------------------------------
    def write(self, chunks: list[Chunk]) -> None:
        if (_TCP_CORK is not None and not self._corked and len(chunks) > 1
                and not all(isinstance(c, BYTES_LIKE) for c in chunks)):
            self._cork(True)
        self.enqueue(chunks)

    def enqueue(self, chunks: list[Chunk]) -> None:
        pool = self._pool
        for c in chunks:
            if isinstance(c, BYTES_LIKE):
                n = len(c)
                if n and pool is not None:
                    pool.force(n)
                    self.out_mem += n
            else:
                n = c.size
            if n:
                self.out.append(c)
                self.out_bytes += n
        if not self.writing:
            self.on_writable()

    @property
    def idle(self) -> bool:
        """Nothing waits for the socket."""
        return not self.out

    def uncharge(self, n: int) -> None:
        """`n` response bytes have been taken from the queue: the pool has them back."""
        if self._pool is not None and n:
            self.out_mem -= n
            self._pool.release(n)

    def on_writable(self) -> None:
        out = self.out
        pending = self.out_bytes
        try:
            while out:
                chunk = out[0]
                if isinstance(chunk, BYTES_LIKE):
                    view = memoryview(chunk)[self.out_offset:]
                    sent = self.sock.send(view)
                    remaining = len(view) - sent
                    self.uncharge(sent)
                else:
                    count = min(chunk.size - self.out_offset, _SENDFILE_CHUNK)
                    sent = os.sendfile(self.fd, chunk.fd, chunk.position + self.out_offset, count)
                    if sent == 0:
                        raise OSError("segment file shorter than the region being sent")
                    remaining = chunk.size - self.out_offset - sent
                self.out_bytes -= sent
                if remaining:
                    self.out_offset += sent
                    continue
                out.popleft()
                self.out_offset = 0
        except (BlockingIOError, InterruptedError):
            if self.out_bytes != pending:
                self.last_progress = time.monotonic()
            self.wait_writable()
            return
        except OSError as e:
            self._close(f"write failed: {e}")
            return
        self.sent_all()

    def wait_writable(self) -> None:
        if not self.writing:
            self.loop.add_writer(self.fd, self.on_writable)
            self.writing = True

    def sent_all(self) -> None:
        if self._corked:
            self._cork(False)  # the queue drained: the held partial segment goes out now
        if self.writing:
            self.loop.remove_writer(self.fd)
            self.writing = False
        self._on_drained()

    def _cork(self, on: bool) -> None:
        assert _TCP_CORK is not None
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, 1 if on else 0)
        except OSError:
            return  # a closed socket: nothing left to hold back
        self._corked = on

    # -- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop what waits for the socket, give its memory back, close the socket."""
        if self.writing:
            self.loop.remove_writer(self.fd)
            self.writing = False
        self.out.clear()
        if self._pool is not None:
            held, self.out_mem = self.out_mem, 0
            self._pool.release(held)
        try:
            self.sock.close()
        except OSError:
            pass
