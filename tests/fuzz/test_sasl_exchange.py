"""Bad input in the SASL exchange, against a live broker with a SASL_PLAINTEXT listener serving
PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Hypothesis drives sequences of frames before authentication: ApiVersions, SaslHandshake with random
mechanisms and versions, SaslAuthenticate with random, truncated or mutated payloads for each
mechanism (and raw tokens, for the v0 handshake), requests of other APIs, unframed garbage. Each
sequence ends with a Metadata request, which nothing before authentication may send. The broker
must refuse: Kafka's error and a closed connection, or a closed connection, with a log line naming
the client, never a handler crash; and an authenticated connection opened before the fuzzing, and
a fresh one, are served throughout. Then a client that authenticates and sends garbage (a bad
size, an unknown api key, a truncated body) is closed with a log line and the others are served.

Bounded: SASL_FUZZ_EXAMPLES sequences (default 150), about 2 s on a quiet machine.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.security.oauthbearer import unsecured_jwt
from minibroker.testing import SCRAM_JAAS, BrokerThread
from minibroker_protocol.apis import api_versions, metadata, sasl_authenticate, sasl_handshake
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.headers import RequestHeader, encode_request_header
from tests.fuzz.targets import mutate
from tests.integration.helpers import RawClient, module_broker

EXAMPLES = int(os.environ.get("SASL_FUZZ_EXAMPLES", "150"))
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
# a well-formed first message per mechanism: the seeds that are cut and mutated
FIRST = {"PLAIN": b"\0alice\0alice-secret", "SCRAM-SHA-256": b"n,,n=alice,r=fuzznonce1",
         "SCRAM-SHA-512": b"n,,n=alice,r=fuzznonce2",
         "OAUTHBEARER": b"n,,\x01auth=Bearer " + unsecured_jwt("alice", 36000).encode() + b"\x01ext=v\x01\x01"}


class Records(logging.Handler):
    """Everything the broker logs (INFO and up), for the log-line and the no-crash checks."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def crashes(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.exc_info and r.levelno >= logging.ERROR]

    def mentions(self, port: int) -> list[str]:
        return [m for r in self.records if f":{port}" in (m := r.getMessage())]


@pytest.fixture(scope="module")
def broker_log() -> Iterator[Records]:
    h = Records()
    logger = logging.getLogger("minibroker")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(h)
    yield h
    logger.removeHandler(h)
    logger.setLevel(level)


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any, broker_log: Records) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": SCRAM_JAAS for m in MECHANISMS
           if m.startswith("SCRAM")},
        "connection.failed.authentication.delay.ms": 5,
        "socket.request.max.bytes": 65536,
    }) as b:
        yield b


def request(api_key: int, version: int, body: bytes, correlation_id: int = 7) -> bytes:
    head = bytearray()
    encode_request_header(head, RequestHeader(api_key, version, correlation_id, "sasl-fuzz"))
    return framed(bytes(head) + body)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def encoded(api: Any, version: int, body: Any) -> bytes:
    return bytes(encode(api.request, version, body))


def login(bootstrap: str) -> RawClient:
    """A connection authenticated with PLAIN through SaslHandshake v1 and SaslAuthenticate v2."""
    c = RawClient(bootstrap)
    assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN")).error_code == 0
    resp = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=FIRST["PLAIN"]))
    assert resp.error_code == 0, resp
    return c


def served(c: RawClient) -> bool:
    return bool(c.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False)).brokers)


@st.composite
def steps(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["versions", "handshake", "handshake", "authenticate", "authenticate",
                                 "authenticate", "raw-token", "other-api", "garbage", "truncated-body", "login"]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if kind == "login":  # a whole successful login, so that what follows meets an authenticated connection
        mechanism = draw(st.sampled_from(["PLAIN", "OAUTHBEARER"]))
        return (request(sasl_handshake.API.key, 1, encoded(sasl_handshake.API, 1, sasl_handshake.REQUEST(
            mechanism=mechanism)), correlation_id=1) + request(sasl_authenticate.API.key, 2, encoded(
                sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=FIRST[mechanism])), correlation_id=2))
    if kind == "versions":
        v = draw(st.integers(0, 4))
        return request(api_versions.API.key, v, encoded(api_versions.API, min(v, 3), api_versions.REQUEST(
            client_software_name="fuzz", client_software_version="1")) if v >= 3 else b"")
    if kind == "handshake":
        mechanism = draw(st.one_of(st.sampled_from([*MECHANISMS, "GSSAPI", ""]), st.text(max_size=30)))
        v = draw(st.sampled_from([0, 1, 1, 2, -1]))
        return request(sasl_handshake.API.key, v, encoded(sasl_handshake.API, min(max(v, 0), 1),
                                                          sasl_handshake.REQUEST(mechanism=mechanism)))
    if kind in ("authenticate", "raw-token"):
        seed = FIRST[draw(st.sampled_from(MECHANISMS))]
        how = draw(st.sampled_from(["cut", "mutated", "random", "as is", "ack"]))
        payload = {"cut": seed[:rng.randrange(len(seed) + 1)], "mutated": mutate(rng, seed, 512),
                   "random": draw(st.binary(max_size=200)), "as is": seed, "ack": b"\x01"}[how]
        if kind == "raw-token":  # what follows a v0 handshake: the token alone, size-prefixed
            return framed(payload)
        v = draw(st.sampled_from([0, 1, 2, 2, 3]))
        return request(sasl_authenticate.API.key, v, encoded(sasl_authenticate.API, min(v, 2),
                                                             sasl_authenticate.REQUEST(auth_bytes=payload)))
    if kind == "other-api":
        return request(draw(st.integers(-1, 90)), draw(st.integers(-1, 20)), draw(st.binary(max_size=60)))
    if kind == "truncated-body":
        body = encoded(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="SCRAM-SHA-512"))
        return request(sasl_handshake.API.key, 1, body[:rng.randrange(len(body))])
    return draw(st.binary(min_size=1, max_size=100))


def outcome(sock: socket.socket, timeout: float) -> str:
    """"closed" (by the broker, after Kafka's ILLEGAL_SASL_STATE answer to the final Metadata or
    without an answer), "answered" (the final Metadata was served: the sequence happened to log
    in), or "open"."""
    end = time.monotonic() + timeout
    seen = b""
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            data = sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            return "closed"
        except TimeoutError:
            break
        if not data:
            return "closed"
        seen += data
        pos = 0
        while len(seen) >= pos + 8:  # the responses so far, one frame at a time
            size = struct.unpack_from(">i", seen, pos)[0]
            if seen[pos + 4:pos + 8] == struct.pack(">i", 999) and len(seen) >= pos + 4 + size:
                # Metadata v12: correlation id, tagged fields, then the body
                body = decode(metadata.API.response, 12, seen[pos + 4:pos + 4 + size], 5)
                if body.brokers:
                    return "answered"
                assert [t.error_code for t in body.topics] == [], body  # the probe names no topic
            pos += 4 + size
    return "open"


PROBE = request(metadata.API.key, 12, encoded(metadata.API, 12, metadata.REQUEST(
    topics=None, allow_auto_topic_creation=False)), correlation_id=999)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(batch=st.lists(steps(), min_size=1, max_size=5))
def test_fuzzed_sasl_exchange_is_refused_and_others_are_served(kafka_broker_module: BrokerThread,
                                                               broker_log: Records, batch: list[bytes]) -> None:
    b = kafka_broker_module
    other = getattr(kafka_broker_module, "_fuzz_other", None)
    if other is None:
        other = b._fuzz_other = login(b.bootstrap_for("SASL_PLAINTEXT"))  # type: ignore[attr-defined]
    host, port = b.bootstrap_for("SASL_PLAINTEXT").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        local_port = s.getsockname()[1]
        try:
            for data in batch:
                s.sendall(data)
            s.sendall(PROBE)
        except OSError:
            pass  # closed already: an answer
        result = outcome(s, 2.0)
        if result == "open":
            # an unfinished frame (garbage with a small size prefix) waits for its rest: end it
            s.shutdown(socket.SHUT_WR)
            assert outcome(s, 5.0) == "closed", f"still open 5 s after the client's EOF: {batch!r:.300}"
    if result == "closed":
        deadline = time.monotonic() + 2
        while not broker_log.mentions(local_port) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert broker_log.mentions(local_port), f"closed without a log line: {batch!r:.300}"
    assert not broker_log.crashes(), broker_log.crashes()
    assert served(other), "the authenticated connection is no longer served"


def test_fresh_connections_are_served_after_the_fuzzing(kafka_broker_module: BrokerThread) -> None:
    with login(kafka_broker_module.bootstrap_for("SASL_PLAINTEXT")) as c:
        assert served(c)
    with RawClient(kafka_broker_module.bootstrap) as c:
        assert served(c)


GARBAGE = {
    "negative size": struct.pack(">i", -5) + b"xxxx",
    "size over socket.request.max.bytes": struct.pack(">i", 10_000_000) + b"x" * 100,
    "unknown api key": request(999, 0, b"\0\0\0\0"),
    "truncated body": request(metadata.API.key, 12, encoded(metadata.API, 12, metadata.REQUEST(
        topics=[metadata.REQUEST.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="some-topic")],
        allow_auto_topic_creation=False))[:9]),
}


@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_authenticated_client_sending_garbage_is_closed(kafka_broker_module: BrokerThread, broker_log: Records,
                                                        garbage: str) -> None:
    bootstrap = kafka_broker_module.bootstrap_for("SASL_PLAINTEXT")
    with login(bootstrap) as bystander, login(bootstrap) as c:
        local_port = c.sock.getsockname()[1]
        c.send_raw(GARBAGE[garbage])
        assert c.closed_by_peer(5.0), garbage
        deadline = time.monotonic() + 2
        while not broker_log.mentions(local_port) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert broker_log.mentions(local_port), f"{garbage}: closed without a log line"
        assert served(bystander)
    assert not broker_log.crashes(), broker_log.crashes()
