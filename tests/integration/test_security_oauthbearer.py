"""OAUTHBEARER beyond what tests/reference/test_security_reference.py compares with Kafka: a
real validator plugged in with `sasl.server.callback.handler.python` (HS256-signed JWTs, a KIP-342
extension checked) with confluent-kafka; the test fixture's SASL_SSL listener with librdkafka's
unsecured token over TLS; a Kafka handler class minibroker cannot run stops the
start rather than fall back to the unsecured validator; a connection whose token expires is closed
on its next request unless it re-authenticated (KIP-368)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from minibroker.config import ConfigError
from minibroker.security.oauthbearer import unsecured_jwt
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import metadata, sasl_authenticate, sasl_handshake
from tests.integration.helpers import RawClient
from tests.integration.oauth_helpers import hs256_jwt

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
BASE = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER"}


def produce(bootstrap: str, token: str, extensions: dict[str, str] | None = None) -> tuple[bool, str]:
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "OAUTHBEARER", "error_cb": errors.append, "message.timeout.ms": 5000,
                  "oauth_cb": lambda _c: (token, time.time() + 3600, "", extensions or {})})
    p.produce("hooked", b"x")
    deadline = time.monotonic() + 10
    while p.flush(0.1) and not errors and time.monotonic() < deadline:
        pass
    p.purge()  # a refused login leaves the record queued: do not wait for it on the way out
    return (not errors and len(p) == 0), (errors[0].str().split(" (after")[0].split(": ", 1)[-1] if errors else "")


def test_a_python_validator_named_by_the_hook(tmp_path: Path) -> None:
    with BrokerThread(tmp_path / "data", overrides={
            **BASE,
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                f'{MODULE} required secret="s3cret" tenants="blue,green";',
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.python":
                "tests.integration.oauth_helpers:HS256Validator"}) as b:
        bs = b.bootstrap_for("SASL_PLAINTEXT")
        b.create_topic("hooked")
        assert produce(bs, hs256_jwt("s3cret", "carol"), {"tenant": "blue"}) == (True, "")
        assert produce(bs, hs256_jwt("s3cret", "carol"), {"tenant": "red"}) == (
            False, "SASL authentication error: Authentication failed: 1 extensions are invalid! They are: "
                   "tenant: unknown tenant")
        # a bad signature, and the unsecured tokens the default validator takes: the error challenge
        for token in (hs256_jwt("wrong", "carol"), unsecured_jwt("carol")):
            with RawClient(bs) as c:
                resp = authenticate(c, token)
                assert (resp.error_code, bytes(resp.auth_bytes)) == (0, b'{"status":"invalid_token"}')
                resp = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=b"\x01"))
                assert (resp.error_code, resp.error_message) == (58, '{"status":"invalid_token"}')


def test_a_coroutine_validator(tmp_path: Path) -> None:
    with BrokerThread(tmp_path / "data", overrides={
            **BASE, "sasl.server.callback.handler.python": "tests.integration.oauth_helpers:slow_unsecured"}) as b:
        bs = b.bootstrap_for("SASL_PLAINTEXT")
        with RawClient(bs) as c, RawClient(b.bootstrap) as other:
            assert authenticate(c, unsecured_jwt("dave")).error_code == 0
            assert c.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False)).brokers
            assert other.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False)).brokers
        with RawClient(bs) as c:
            resp = authenticate(c, unsecured_jwt("dave", now=time.time() - 7200))
            assert (resp.error_code, bytes(resp.auth_bytes)) == (0, b'{"status":"invalid_token"}')


def test_the_fixtures_sasl_ssl_listener_takes_oauthbearer(tmp_path: Path) -> None:
    """`BrokerThread(security="SASL_SSL").client_config("OAUTHBEARER")`: docs/testing.md."""
    with BrokerThread(tmp_path / "data", security="SASL_SSL") as b:
        p = Producer(b.client_config("OAUTHBEARER"))
        p.produce("fixture-oauth", b"x")
        assert p.flush(10) == 0
        assert b.values("fixture-oauth") == [b"x"]


def test_a_kafka_handler_class_without_a_python_validator_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KIP-768"):
        BrokerThread(tmp_path / "data", overrides={
            **BASE, "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}).start()


def authenticate(c: RawClient, token: str) -> Any:
    assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="OAUTHBEARER")).error_code == 0
    return c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(
        auth_bytes=f"n,,\x01auth=Bearer {token}\x01\x01".encode()))


def test_the_session_ends_when_the_token_expires(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="minibroker.security")
    # Kafka reads connections.max.reauth.ms per mechanism too: the OAUTHBEARER form wins here
    with BrokerThread(tmp_path / "data", overrides={
            **BASE, "connections.max.reauth.ms": 1000,
            "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": 600000}) as b:
        bs = b.bootstrap_for("SASL_PLAINTEXT")
        md = metadata.REQUEST(topics=None, allow_auto_topic_creation=False)
        with RawClient(bs) as stale, RawClient(bs) as renewed:
            now = time.time()
            token = unsecured_jwt("alice", lifetime_s=2, now=now)
            lifetime = authenticate(stale, token).session_lifetime_ms
            # the sooner of the token's expiry and connections.max.reauth.ms
            assert 0 < lifetime <= 2000
            assert authenticate(renewed, token).session_lifetime_ms <= 2000
            assert stale.call(metadata.API, 12, md).brokers
            time.sleep(max(0.0, int(now + 2) - time.time()) + 0.2)
            # KIP-368: re-authenticating with a fresh token on the same connection keeps it
            resp = authenticate(renewed, unsecured_jwt("alice", lifetime_s=300))
            assert resp.error_code == 0 and 290000 < resp.session_lifetime_ms <= 300000
            assert renewed.call(metadata.API, 12, md).brokers
            stale.send(metadata.API, 12, md)
            assert stale.closed_by_peer()
    assert any("SASL session ended" in r.getMessage() for r in caplog.records)
