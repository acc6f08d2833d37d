"""`minibroker.network.processor.Connection` on its own: one side of a loopback socket pair, a stub
handler that echoes the first 4 bytes of each frame, and a blocking client thread on the other
side. Covers what a real client cannot force: stop_reading, back-pressure on buffered output,
in-order answers when handlers suspend, cancellation on close (Kafka: SocketServer's Processor
mutes a channel while a request is in flight, and unmutes it when the response is sent).

Moved here from tests/integration/test_produce_fetch_connection.py (issue 16).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
import time

from minibroker.network.processor import Connection


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# -- back-pressure -----------------------------------------------------------------------------


def _blocking_client(sock: socket.socket, script: list, results: list) -> None:
    """Run (action, arg) steps on a blocking socket: ("send", bytes), ("read", n frames), ("sleep", s)."""
    sock.settimeout(10)
    buf = bytearray()
    try:
        for action, arg in script:
            if action == "send":
                sock.sendall(arg)
            elif action == "sleep":
                time.sleep(arg)
            else:
                for _ in range(arg):
                    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                        chunk = sock.recv(1 << 20)
                        if not chunk:
                            raise EOFError("closed")
                        buf += chunk
                    size = struct.unpack_from(">i", buf)[0]
                    results.append(bytes(buf[4:8]))  # the "correlation id" the handler echoed
                    del buf[:4 + size]
    except (OSError, EOFError) as e:
        results.append(e)


def _tcp_pair(small_buffers: bool = False) -> tuple[socket.socket, socket.socket]:
    """(server side, client side) of a loopback TCP connection."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client_sock = socket.socket()
        if small_buffers:
            client_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        client_sock.connect(listener.getsockname())
        server_sock, _ = listener.accept()
        if small_buffers:
            server_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
    return server_sock, client_sock


async def test_stop_reading_answers_what_was_read_and_reads_nothing_more():
    """BrokerServer.stop: requests already read are answered; later ones are not read at all."""

    async def handle(conn, frame):
        await asyncio.sleep(0.3)  # still in flight when the stop comes
        return [struct.pack(">i", 4) + frame[:4]]

    loop = asyncio.get_running_loop()
    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    results: list = []
    script = [("send", framed(struct.pack(">i", 0))), ("sleep", 0.1), ("send", framed(struct.pack(">i", 1))),
              ("read", 2)]
    client = threading.Thread(target=_blocking_client, args=(client_sock, script, results), daemon=True)
    client.start()
    await asyncio.sleep(0.05)
    conn.stop_reading()
    await asyncio.sleep(1.5)
    conn.close(None)
    await asyncio.wait_for(loop.run_in_executor(None, client.join, 15), 20)
    client_sock.close()
    assert results[0] == struct.pack(">i", 0)
    assert isinstance(results[1], (EOFError, ConnectionResetError)), results  # request 1 was never read


async def test_reading_resumes_when_the_output_drains():
    """A connection that stopped reading because too many response bytes were waiting must start
    reading again once the client has taken them, even if no request is left in its queue."""
    big = 4 << 20

    async def handle(conn, frame):
        # Echo the first 4 bytes, padded to a large response.
        return [struct.pack(">i", big) + frame[:4] + bytes(big - 4)]

    loop = asyncio.get_running_loop()
    # Small kernel buffers, so most of a response waits in the connection's own queue.
    server_sock, client_sock = _tcp_pair(small_buffers=True)
    conn = Connection(server_sock, loop, handle, max_frame_size=1024, max_buffered=1 << 20)
    req = [framed(struct.pack(">i", i)) for i in range(4)]
    results: list = []
    script = [("send", req[0]), ("sleep", 0.3), ("send", req[1]), ("sleep", 0.3),
              ("read", 2), ("sleep", 0.3), ("send", req[2]), ("read", 1), ("send", req[3]), ("read", 1)]
    client = threading.Thread(target=_blocking_client, args=(client_sock, script, results), daemon=True)
    client.start()
    try:
        await asyncio.wait_for(loop.run_in_executor(None, client.join, 15), 20)
    finally:
        conn.close(None)
        client_sock.close()
    assert results == [struct.pack(">i", i) for i in range(4)], results


async def test_pipelined_requests_are_answered_in_order_when_some_handlers_suspend():
    """Handlers run eagerly in the reader callback; one that suspends is finished by a task, and
    the requests behind it wait for it: the order of answers is the order of requests."""
    finished: list[int] = []

    async def handle(conn, frame):
        n = struct.unpack_from(">i", frame)[0]
        if n % 3 == 1:
            await asyncio.sleep(0.02)  # suspends: finished by a task
        elif n % 3 == 2:
            await asyncio.sleep(0)  # a bare yield
        finished.append(n)
        return [struct.pack(">i", 4) + frame[:4]]

    loop = asyncio.get_running_loop()
    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    n = 40  # more than one eager batch per callback
    results: list = []
    # Some frames arrive while a handler is suspended: they must queue behind it.
    script = [step for i in range(0, n, 10)
              for step in (("send", b"".join(framed(struct.pack(">i", j)) for j in range(i, i + 10))),
                           ("sleep", 0.005))] + [("read", n)]
    client = threading.Thread(target=_blocking_client, args=(client_sock, script, results), daemon=True)
    client.start()
    try:
        await asyncio.wait_for(loop.run_in_executor(None, client.join, 15), 20)
    finally:
        conn.close(None)
        client_sock.close()
    assert results == [struct.pack(">i", i) for i in range(n)], results
    assert finished == list(range(n))


async def test_closing_cancels_a_suspended_handler_and_a_failing_one_closes(caplog):
    """close() while a handler waits: the handler sees CancelledError (its cleanup runs). A handler
    that raises closes its connection with a log line."""
    cleaned = asyncio.Event()

    async def handle(conn, frame):
        if frame[:4] == struct.pack(">i", 9):
            raise RuntimeError("boom")
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()
        return None

    loop = asyncio.get_running_loop()
    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    client_sock.sendall(framed(struct.pack(">i", 0)))
    deadline = time.monotonic() + 5
    while conn.task is None and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert conn.task is not None and not conn.idle
    conn.close(None)
    await asyncio.wait_for(cleaned.wait(), 5)
    client_sock.close()

    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    with caplog.at_level(logging.ERROR, logger="minibroker.network"):
        client_sock.sendall(framed(struct.pack(">i", 9)))
        while not conn.closed and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    client_sock.close()
    assert conn.closed
    assert any("failed" in r.getMessage() for r in caplog.records)


async def test_close_callbacks_run_once_when_the_peer_goes_and_at_once_after():
    """add_close_callback (what a handler ties to its connection: share sessions): each callback
    runs once when the client's side closes; one added to a closed connection runs at once; one
    that raises is logged and does not stop the others."""

    async def handle(conn, frame):
        return None

    loop = asyncio.get_running_loop()
    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    calls: list[str] = []

    def failing() -> None:
        calls.append("failing")
        raise RuntimeError("boom")

    conn.add_close_callback(failing)
    conn.add_close_callback(lambda: calls.append("second"))
    client_sock.close()
    deadline = time.monotonic() + 5
    while not conn.closed and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert calls == ["failing", "second"]
    conn.close("again")
    conn.add_close_callback(lambda: calls.append("late"))
    assert calls == ["failing", "second", "late"]

    # BrokerServer.stop drops them first: the broker going is not the client going
    server_sock, client_sock = _tcp_pair()
    conn = Connection(server_sock, loop, handle, max_frame_size=1024)
    conn.add_close_callback(lambda: calls.append("dropped"))
    conn.drop_close_callbacks()
    conn.close(None)
    client_sock.close()
    assert "dropped" not in calls
