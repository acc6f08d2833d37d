"""`minibroker.kafka_apis.KafkaApis` on its own, over a broker built without sockets
(`BrokerServer.build`) and a stub channel: the request header is decoded once per request, and on
a SASL listener the channel's SASL exchange is consulted after that decode (before
authentication only ApiVersions goes to its handler; SaslHandshake and SaslAuthenticate are the
exchange's; anything else is refused and the channel closed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import minibroker.kafka_apis as kafka_apis
from minibroker.config import BrokerConfig
from minibroker.security.sasl import SaslAuthenticator
from minibroker.security.settings import SaslSettings
from minibroker.server import BrokerServer
from minibroker_protocol.apis import api_versions, metadata, sasl_authenticate, sasl_handshake
from minibroker_protocol.codec import Output, decode, encode
from minibroker_protocol.compiled import compiled_in_use
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


class StubChannel:
    def __init__(self, authenticator: SaslAuthenticator | None) -> None:
        self.peer, self.ip, self.listener = "127.0.0.1:5555", "127.0.0.1", "SASL_PLAINTEXT"
        self.principal = "User:ANONYMOUS"
        self.authenticator = authenticator
        self.closed: str | None = None
        self.closing: str | None = None

    def close(self, reason: str | None) -> None:
        self.closed = reason or "closed"

    def close_when_sent(self, reason: str) -> None:
        self.closing = reason

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        pass

    def mute(self, ms: int) -> None:
        pass


def frame(api: Any, version: int, body: Any, correlation_id: int = 1) -> bytes:
    out = Output()
    encode_request_header(out, RequestHeader(api.API.key, version, correlation_id, "test"))
    encode(api.REQUEST, version, body, out)
    return bytes(out)


def response_body(api: Any, version: int, chunks: list[Any]) -> Any:
    raw = b"".join(bytes(c) for c in chunks)
    header_size = 4 + 4 + response_header_version(api.API.key, version)
    return decode(api.RESPONSE, version, raw[header_size:])


@pytest.fixture
def server(tmp_path: Path) -> Any:
    config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                                      "sasl.enabled.mechanisms=PLAIN",
                                      f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"],
                               host="127.0.0.1", port=0, data_dir=str(tmp_path))
    s = BrokerServer(config)
    s.build()
    yield s
    s.log_manager.shutdown()


@pytest.mark.skipif(compiled_in_use(), reason="a compiled module binds decode_request_header when it is built: the "
                    "pure modules' run (make test-pure) counts the decodes")
def test_sasl_exchange_is_consulted_after_one_header_decode(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    decodes: list[int] = []
    real = kafka_apis.decode_request_header

    def counting(buf: Any) -> Any:
        decodes.append(1)
        return real(buf)

    monkeypatch.setattr(kafka_apis, "decode_request_header", counting)
    endpoint = next(e for e in server.config.listener_endpoints if e.security_protocol == "SASL_PLAINTEXT")
    settings = SaslSettings.for_listener(server.config, endpoint)
    channel = StubChannel(SaslAuthenticator(settings, server.scram_credentials))

    def handle(f: bytes) -> Any:
        return asyncio.run(server.apis.handle(channel, f))

    # ApiVersions before the handshake goes to its handler
    chunks = handle(frame(api_versions, 3, api_versions.REQUEST(client_software_name="t",
                                                                 client_software_version="1")))
    assert response_body(api_versions, 3, chunks).error_code == 0
    # SaslHandshake and SaslAuthenticate are the exchange's
    chunks = handle(frame(sasl_handshake, 1, sasl_handshake.REQUEST(mechanism="PLAIN")))
    assert response_body(sasl_handshake, 1, chunks).mechanisms == ["PLAIN"]
    chunks = handle(frame(sasl_authenticate, 2, sasl_authenticate.REQUEST(auth_bytes=b"\0alice\0alice-secret")))
    assert response_body(sasl_authenticate, 2, chunks).error_code == 0
    assert channel.principal == "User:alice" and channel.closed is None
    # once authenticated, a request goes to its handler
    chunks = handle(frame(metadata, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False,
                                                         include_topic_authorized_operations=False)))
    assert response_body(metadata, 12, chunks).brokers
    assert len(decodes) == 4  # one header decode per request, the exchange's included


def test_a_request_before_authentication_is_refused(server: Any) -> None:
    endpoint = next(e for e in server.config.listener_endpoints if e.security_protocol == "SASL_PLAINTEXT")
    channel = StubChannel(SaslAuthenticator(SaslSettings.for_listener(server.config, endpoint),
                                            server.scram_credentials))
    answer = asyncio.run(server.apis.handle(channel, frame(metadata, 12, metadata.REQUEST(
        topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False))))
    assert answer is None and channel.closed is not None and "unexpected request" in channel.closed
