"""Fuzzing a live broker over loopback: random and mutated frames on a connection, then the client
closes its side. The broker must close that connection (no hang), log no handler crash, and keep
answering ApiVersions on a fresh connection.

Bounded: FUZZ_LIVE_EXAMPLES connections (default 300), 10 s per connection at most.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.apis import api_versions
from tests.fuzz.targets import mutate, seed_requests
from tests.integration.helpers import RawClient, module_broker

EXAMPLES = int(os.environ.get("FUZZ_LIVE_EXAMPLES", "300"))
MAX_REQUEST = 64 * 1024
SEEDS = seed_requests()


@pytest.fixture(scope="module")
def mb(tmp_path_factory):
    with module_broker(tmp_path_factory, {"socket.request.max.bytes": MAX_REQUEST,
                                          "auto.create.topics.enable": False}) as b:
        yield b


class CrashLog(logging.Handler):
    """Collects what the dispatcher and connections log with a traceback: a handler or connection
    that raised on input it should have answered or refused."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture(scope="module")
def crash_log():
    h = CrashLog()
    logging.getLogger("minibroker").addHandler(h)
    yield h
    logging.getLogger("minibroker").removeHandler(h)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@st.composite
def frames(draw) -> bytes:
    kind = draw(st.sampled_from(["mutated", "mutated-unframed", "random-body", "random"]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if kind == "mutated":
        return framed(mutate(rng, rng.choice(SEEDS)))
    if kind == "mutated-unframed":
        return mutate(rng, framed(rng.choice(SEEDS)))
    if kind == "random-body":
        # a readable header for a random api key/version, then noise
        head = struct.pack(">hhih", draw(st.integers(-1, 80)), draw(st.integers(-1, 20)), 1, 4) + b"fuzz"
        return framed(head + draw(st.binary(max_size=200)))
    return draw(st.binary(min_size=1, max_size=300))


def closes_within(sock: socket.socket, timeout: float) -> bool:
    """Read until the broker closes; False if it is still open after `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            if not sock.recv(1 << 16):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def api_versions_answers(bootstrap: str) -> bool:
    with RawClient(bootstrap, timeout=10) as raw:
        body = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="fuzz",
                                                                  client_software_version="1"))
    return body.error_code == 0


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])
@given(batch=st.lists(frames(), min_size=1, max_size=4))
def test_random_frames_on_a_live_connection(mb, crash_log, batch: list[bytes]):
    host, port = mb.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        try:
            for data in batch:
                s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the broker closed already (EPIPE, ECONNRESET, ENOTCONN): that is an answer
        assert closes_within(s, 10.0), f"connection still open 10 s after the client's EOF: {batch!r:.200}"
    assert api_versions_answers(mb.bootstrap)
    assert not crash_log.records, [r.getMessage() for r in crash_log.records]
