"""One client connection: frames in, responses out, record bytes sent with sendfile.

Theory of operation: the connection owns a non-blocking socket and drives it with the event
loop's `add_reader` / `add_writer` rather than through an asyncio transport. That is what lets the
fetch path hand segment ranges to `os.sendfile` on any loop: uvloop implements neither
`loop.sendfile` nor `loop.sock_sendfile`, and neither loop lets us `add_writer` on a socket that a
transport owns (measured; see README "Why the connection owns its socket").

Reading: bytes go into a sans-IO `FrameReader`, which rejects a size prefix above
`socket.request.max.bytes` before buffering the body. Whole frames go on a queue that one task
drains, so requests on a connection are handled one at a time and answered in order, as Kafka's
processor does (clients pipeline; the order of responses is the order of requests).

Writing: a response is a list of chunks — bytes, and `FileRegion`s for record data. Bytes go out
with `send`, regions with `os.sendfile`; whatever the socket does not take now waits for
writability. While more than `max_buffered` bytes wait, or too many requests are queued, the
connection stops reading (back-pressure instead of unbounded buffers).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from protocol.framing import FrameError, FrameReader

log = logging.getLogger("minibroker.connection")

_BYTES_LIKE = (bytes, bytearray, memoryview)
_RECV_SIZE = 256 * 1024
_SENDFILE_CHUNK = 8 * 1024 * 1024


class Connection:
    """A client connection. `handle(conn, frame)` returns the response chunks, or None for none."""

    def __init__(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        handle: Callable[[Connection, bytes], Awaitable[list[Any] | None]],
        *,
        max_frame_size: int,
        max_queued_requests: int = 500,
        max_buffered: int = 64 * 1024 * 1024,
        on_close: Callable[[Connection], None] | None = None,
    ):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.fd = sock.fileno()
        self.loop = loop
        self.peer = _peer(sock)
        self._handle = handle
        self._frames = FrameReader(max_frame_size)
        self._queue: collections.deque[bytes] = collections.deque()
        self._queue_event = asyncio.Event()
        self._max_queued = max_queued_requests
        self._max_buffered = max_buffered
        self._out: collections.deque[Any] = collections.deque()  # bytes-like or regions, with progress
        self._out_offset = 0  # progress into the first chunk
        self._out_bytes = 0
        self._writing = False
        self._reading = False
        self._read_stopped = False
        self._closed = False
        self._on_close = on_close
        self._drained = asyncio.Event()
        self._drained.set()
        self.task = loop.create_task(self._serve(), name=f"conn-{self.peer}")
        self._resume_reading()

    # -- reading ---------------------------------------------------------------------------
    def stop_reading(self) -> None:
        """Read no more requests (graceful shutdown); what is queued is still answered."""
        self._read_stopped = True
        self._pause_reading()

    def _resume_reading(self) -> None:
        if not self._reading and not self._closed and not self._read_stopped:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _maybe_resume_reading(self) -> None:
        """Read again once both the request queue and the output are back under their limits.
        Called after each request and whenever output drains: a connection paused by a full
        output with an empty queue is woken only by the drain."""
        if not self._reading and len(self._queue) < self._max_queued // 2 \
                and self._out_bytes <= self._max_buffered:
            self._resume_reading()

    def _on_readable(self) -> None:
        try:
            data = self.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"read failed: {e}")
            return
        if not data:
            self.close(None)
            return
        self._frames.feed(data)
        try:
            while (frame := self._frames.next_frame()) is not None:
                self._queue.append(frame)
        except FrameError as e:
            log.warning("closing connection from %s: %s", self.peer, e)
            self.close("bad frame")
            return
        if self._queue:
            self._queue_event.set()
        if len(self._queue) >= self._max_queued or self._out_bytes > self._max_buffered:
            self._pause_reading()

    async def _serve(self) -> None:
        try:
            while not self._closed:
                if not self._queue:
                    self._queue_event.clear()
                    await self._queue_event.wait()
                    continue
                frame = self._queue.popleft()
                chunks = await self._handle(self, frame)
                if self._closed:
                    return
                if chunks:
                    self.write(chunks)
                self._maybe_resume_reading()
                # Most handlers never suspend: without this a client that pipelines hundreds of
                # requests holds the loop until its whole queue is answered, and every other
                # connection waits (a 0.7 s p99 produce latency next to one flooding client).
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection from %s failed", self.peer)
            self.close("internal error")

    # -- writing ---------------------------------------------------------------------------
    def write(self, chunks: list[Any]) -> None:
        for c in chunks:
            n = len(c) if isinstance(c, _BYTES_LIKE) else c.size
            if n:
                self._out.append(c)
                self._out_bytes += n
        if self._out:
            self._drained.clear()
        if not self._writing:
            self._on_writable()

    def _on_writable(self) -> None:
        out = self._out
        try:
            while out:
                chunk = out[0]
                if isinstance(chunk, _BYTES_LIKE):
                    view = memoryview(chunk)[self._out_offset:]
                    # Coalesce small trailing chunks into one send (headers + small bodies).
                    sent = self.sock.send(view)
                    remaining = len(view) - sent
                else:
                    count = min(chunk.size - self._out_offset, _SENDFILE_CHUNK)
                    sent = os.sendfile(self.fd, chunk.fd, chunk.position + self._out_offset, count)
                    if sent == 0:
                        raise OSError("segment file shorter than the region being sent")
                    remaining = chunk.size - self._out_offset - sent
                self._out_bytes -= sent
                if remaining:
                    self._out_offset += sent
                    continue
                out.popleft()
                self._out_offset = 0
        except (BlockingIOError, InterruptedError):
            if not self._writing:
                self.loop.add_writer(self.fd, self._on_writable)
                self._writing = True
            return
        except OSError as e:
            self.close(f"write failed: {e}")
            return
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        self._drained.set()
        self._maybe_resume_reading()

    async def drain(self) -> None:
        await self._drained.wait()

    # -- closing ---------------------------------------------------------------------------
    def close(self, reason: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        if reason:
            log.info("closed connection from %s: %s", self.peer, reason)
        self._pause_reading()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        self._out.clear()
        self._drained.set()
        self._queue_event.set()
        try:
            self.sock.close()
        except OSError:
            pass
        if not self.task.done() and asyncio.current_task() is not self.task:
            self.task.cancel()
        if self._on_close:
            self._on_close(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def idle(self) -> bool:
        return not self._queue and not self._out


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "?"
