"""Bad input at the connection level: oversize frames, unknown api keys, unsupported versions,
truncated and malformed bodies. Each must close (or answer) that one connection and leave the
broker serving everyone else."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
import time

import pytest

from minibroker.connection import Connection
from protocol.apis import api_versions, metadata, produce
from protocol.codec import decode
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader, encode_request_header
from tests.integration.helpers import RawClient, create_topic, module_broker, unique

MAX_REQUEST = 64 * 1024  # socket.request.max.bytes for this module's broker


@pytest.fixture(scope="module")
def mb(tmp_path_factory):
    with module_broker(tmp_path_factory, {"socket.request.max.bytes": MAX_REQUEST}) as b:
        yield b


def api_versions_works(bootstrap: str) -> bool:
    with RawClient(bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
    return body.error_code == 0 and any(k.api_key == produce.API.key for k in body.api_keys)


def header_bytes(api_key: int, version: int, correlation_id: int = 7, client_id: str = "it-raw") -> bytes:
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, correlation_id, client_id))
    return bytes(out)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frame_above_socket_request_max_bytes_closes_with_a_log_line(mb, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(mb.bootstrap) as bystander, RawClient(mb.bootstrap) as raw:
        # Only the size prefix: the broker must refuse before reading (or buffering) a body.
        raw.send_raw(struct.pack(">i", MAX_REQUEST + 1))
        assert raw.closed_by_peer()
        # The other connection, opened before, and new ones are still served.
        body = bystander.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                        client_software_version="1"))
        assert body.error_code == 0
    assert api_versions_works(mb.bootstrap)
    assert any(f"{MAX_REQUEST + 1} bytes exceeds the limit of {MAX_REQUEST}" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_frame_at_the_limit_is_read(mb):
    """The cap is on the size prefix: a request of exactly socket.request.max.bytes is handled."""
    topic = unique("at-limit")
    create_topic(mb, topic)
    with RawClient(mb.bootstrap) as raw:
        R = metadata.REQUEST
        body = R(topics=[R.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        # Trailing bytes after a body are ignored (Kafka's RequestContext.parseRequest), so padding
        # there makes a valid request of exactly the limit.
        payload = raw.request_bytes(metadata.API, 9, body, 1)[4:]
        payload += b"\0" * (MAX_REQUEST - len(payload))
        raw.send_raw(framed(payload))
        _, resp = raw.recv(metadata.API, 9)
    assert [t.name for t in resp.topics] == [topic]


def test_negative_frame_size_closes(mb):
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(struct.pack(">i", -5))
        assert raw.closed_by_peer()
    assert api_versions_works(mb.bootstrap)


@pytest.mark.parametrize("api_key", [99, 1000, -1])
def test_unknown_api_key_closes(mb, api_key, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(api_key, 0)))
        assert raw.closed_by_peer()
    assert any(f"unknown api key {api_key}" in r.getMessage() for r in caplog.records)
    assert api_versions_works(mb.bootstrap)


def test_api_versions_v99_gets_unsupported_version_in_v0_form(mb):
    with RawClient(mb.bootstrap) as raw:
        # The body of a version we do not know is unreadable to us; the broker must not try.
        raw.send_raw(framed(header_bytes(api_versions.API.key, 99, correlation_id=42) + b"\x07junk"))
        frame = raw.recv_frame()
        # Response header v0 (just the correlation id), body in ApiVersions v0.
        assert struct.unpack_from(">i", frame)[0] == 42
        body = decode(api_versions.RESPONSE, 0, frame, 4)
        assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
        listed = [(k.api_key, k.min_version, k.max_version) for k in body.api_keys]
        assert listed == advertised_ranges(mb)
        assert (api_versions.API.key, 0, 4) in listed
        # The connection stays open: the client retries at a version we listed, and gets the same list.
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
        assert body.error_code == 0
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == listed


def advertised_ranges(mb) -> list[tuple[int, int, int]]:
    """What ApiVersions must list: every handler's range, except Produce, which starts at v0."""

    def ranges(broker) -> list[tuple[int, int, int]]:
        return sorted((h.api.key, 0 if h.api.key == produce.API.key else h.versions.lo, h.versions.hi)
                      for h in broker.handlers.values())

    return mb.call(ranges)


def served_range(mb, api) -> tuple[int, int]:
    return mb.call(lambda broker: (broker.handlers[api.key].versions.lo, broker.handlers[api.key].versions.hi))


def test_produce_is_advertised_from_v0(mb, caplog):
    """KAFKA-18659: librdkafka < 2.10 compresses with gzip/snappy/lz4 only if Produce v0 is listed
    (see test_kcat.test_compressed_produce). Kafka 4.0 lists it and closes on v0-2 requests; a
    broker that serves the legacy formats lists it because it serves it."""
    with RawClient(mb.bootstrap) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
    [entry] = [k for k in body.api_keys if k.api_key == produce.API.key]
    assert (entry.min_version, entry.max_version) == (0, 13)
    lo, _ = served_range(mb, produce.API)
    caplog.set_level(logging.INFO, logger="minibroker")
    for version in range(0, lo):  # advertised but not served: the connection is closed
        with RawClient(mb.bootstrap) as raw:
            raw.send_raw(framed(header_bytes(produce.API.key, version) + b"\x00\x01\x00\x00\x13\x88"))
            assert raw.closed_by_peer(), version
        assert any(f"Produce v{version} is not supported" in r.getMessage() for r in caplog.records)
    assert api_versions_works(mb.bootstrap)


def test_version_above_the_served_range_closes(mb, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    _, hi = served_range(mb, metadata.API)
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(metadata.API.key, hi + 1) + b"\x00" * 8))
        assert raw.closed_by_peer()
    assert any(f"Metadata v{hi + 1} is not supported" in r.getMessage() for r in caplog.records)
    assert api_versions_works(mb.bootstrap)


def test_truncated_body_closes(mb, caplog):
    caplog.set_level(logging.INFO, logger="minibroker")
    with RawClient(mb.bootstrap) as raw:
        R = metadata.REQUEST
        body = R(topics=[R.MetadataRequestTopic(name="some-topic")], allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)
        whole = raw.request_bytes(metadata.API, 12, body, 1)[4:]
        raw.send_raw(framed(whole[:-6]))  # cut inside the topic name
        assert raw.closed_by_peer()
    assert any("malformed Metadata v12" in r.getMessage() for r in caplog.records)
    assert api_versions_works(mb.bootstrap)


@pytest.mark.parametrize("version, garbage", [
    # v4: topics is an int32-counted array, then allow_auto_topic_creation.
    pytest.param(4, struct.pack(">i", 0x7FFFFFF0), id="huge-array-length"),
    pytest.param(4, b"", id="empty-body"),
    pytest.param(4, struct.pack(">ih", 1, 50) + b"short", id="string-past-the-end"),
    # v12 (flexible): topics is a compact array, its length an unsigned varint.
    pytest.param(12, b"\xff" * 6, id="unterminated-varint"),
    pytest.param(12, b"\x02\x00" * 2, id="body-cut-short"),
])
def test_malformed_body_closes(mb, version, garbage):
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(framed(header_bytes(metadata.API.key, version) + garbage))
        assert raw.closed_by_peer()
    assert api_versions_works(mb.bootstrap)


def test_truncated_header_closes(mb):
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(framed(b"\x00\x12\x00"))  # three bytes of a header
        assert raw.closed_by_peer()
    assert api_versions_works(mb.bootstrap)


def test_client_closing_mid_frame_leaves_the_broker_serving(mb):
    with RawClient(mb.bootstrap) as raw:
        raw.send_raw(struct.pack(">i", 1000) + b"\x00" * 10)
    assert api_versions_works(mb.bootstrap)


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
    with caplog.at_level(logging.ERROR, logger="minibroker.connection"):
        client_sock.sendall(framed(struct.pack(">i", 9)))
        while not conn.closed and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    client_sock.close()
    assert conn.closed
    assert any("failed" in r.getMessage() for r in caplog.records)
