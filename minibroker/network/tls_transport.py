"""`TlsTransport`: a connection's bytes through TLS, on SSL and SASL_SSL listeners (Kafka:
SslTransportLayer).

Theory of operation: the transport is handed a `TlsSession` (minibroker.security.tls, an
`ssl.SSLObject` over memory BIOs). Bytes read go through it before the request reader; the
handshake is driven by those reads. On the way out chunks are encrypted a slice at a time (file
regions read into memory: the kernel cannot encrypt for us, so there is no sendfile on this path)
while less than `_TLS_AHEAD` bytes of TLS records wait for the socket. Imported only when a TLS
listener is configured (a PLAINTEXT broker never loads the security modules).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker.network.memory_pool import MemoryPool
from minibroker.network.transport import BYTES_LIKE, Transport
from minibroker.security.tls import TlsError, TlsSession

if TYPE_CHECKING:
    from minibroker_protocol.codec import Chunk

log = logging.getLogger("minibroker.network.tls_transport")

_TLS_SLICE = 64 * 1024  # plaintext encrypted per step (four 16 KiB TLS records)
_TLS_AHEAD = 1024 * 1024  # encrypted bytes allowed to wait for the socket before encrypting more


class TlsTransport(Transport):
    """TLS over the socket: decrypts what is read, encrypts what is written."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, pool: MemoryPool | None,
                 on_drained: Callable[[], None], close: Callable[[str | None], None], session: TlsSession,
                 *, peer: str, listener: str | None, on_principal: Callable[[str], None]):
        super().__init__(sock, loop, pool, on_drained, close)
        self.session = session
        self._peer = peer
        self._listener = listener
        self._on_principal = on_principal  # the client certificate's principal, once established
        self._tls_out = bytearray()  # TLS records not yet taken by the socket

    @property
    def handshake_incomplete(self) -> bool:
        return not self.session.established

    @property
    def idle(self) -> bool:
        return not self.out and not self._tls_out

    def receive(self, data: bytes) -> bytes | None:
        """Decrypt what was read (driving the handshake); None when the session failed or the
        peer closed it (the connection is then closed)."""
        tls = self.session
        was_established = tls.established
        try:
            plain = tls.receive(data)
        except TlsError as e:
            self._tls_out += tls.outgoing()
            try:  # the alert, best effort: the peer learns why
                self.sock.send(self._tls_out)
            except OSError:
                pass
            log.warning("closing connection from %s on listener %s: %s", self._peer, self._listener, e)
            self._close(str(e))
            return None
        if tls.established and not was_established:
            if tls.principal is not None:
                self._on_principal(tls.principal)
            log.debug("TLS session with %s on listener %s: %s %s, principal %s", self._peer, self._listener,
                      tls.version, tls.cipher, tls.principal)
        pending = tls.outgoing()
        if tls.closed_by_peer:
            try:  # our close_notify, best effort
                self.sock.send(pending)
            except OSError:
                pass
            self._close(None)
            return None
        if pending:
            self._tls_out += pending
            if not self.writing:
                self.on_writable()
        return plain

    def write(self, chunks: list[Chunk]) -> None:
        self.enqueue(chunks)  # no TCP_CORK: TLS records are built in memory anyway

    def on_writable(self) -> None:
        """Encrypt a slice at a time while little waits for the socket, and send the records."""
        tls, out, buf = self.session, self.out, self._tls_out
        try:
            while True:
                while out and len(buf) < _TLS_AHEAD:
                    chunk = out[0]
                    if isinstance(chunk, BYTES_LIKE):
                        piece: bytes | memoryview = memoryview(chunk)[self.out_offset:self.out_offset + _TLS_SLICE]
                        taken = len(piece)
                        self.uncharge(taken)
                        left = len(chunk) - self.out_offset - taken
                    else:
                        want = min(chunk.size - self.out_offset, _TLS_SLICE)
                        piece = os.pread(chunk.fd, want, chunk.position + self.out_offset)
                        taken = len(piece)
                        if taken == 0:
                            raise OSError("segment file shorter than the region being sent")
                        left = chunk.size - self.out_offset - taken
                    if taken:
                        tls.encrypt(piece)
                        buf += tls.outgoing()
                    self.out_bytes -= taken
                    if left:
                        self.out_offset += taken
                    else:
                        out.popleft()
                        self.out_offset = 0
                if not buf:
                    break
                sent = self.sock.send(buf)
                del buf[:sent]
                if sent:
                    self.last_progress = time.monotonic()  # a client reading its answers
        except (BlockingIOError, InterruptedError):
            self.wait_writable()
            return
        except OSError as e:
            self._close(f"write failed: {e}")
            return
        self.sent_all()

    def close(self) -> None:
        self._tls_out.clear()
        super().close()
