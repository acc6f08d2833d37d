"""The trace never prints a secret (issue 30, finding 8): SCRAM salts and salted passwords
(AlterUserScramCredentials), SASL auth bytes, password-type config values (AlterConfigs,
IncrementalAlterConfigs, CreateTopics), accepted or refused, are `[hidden]` in --trace's text and
JSON lines (with --trace-bytes, whose hex of such a request is withheld) and in the console's live
stream; and with an authorizer the live stream needs an operator's credentials, as a write does.

The requests are raw frames with known secret bytes (a client library would salt at random), sent
on the PLAINTEXT listener as the super user ANONYMOUS (accepted) and on the SASL listener as alice,
who may alter nothing (refused)."""

from __future__ import annotations

import base64
import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import SCRAM_JAAS, BrokerThread
from minibroker.tools.trace import Tracer
from minibroker_protocol.apis import (
    alter_configs,
    alter_user_scram_credentials,
    create_topics,
    incremental_alter_configs,
    metadata,
    sasl_authenticate,
    sasl_handshake,
)
from tests.console.helpers import CONSOLE_OVERRIDES, console_url
from tests.integration.helpers import RawClient, module_broker

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SALT = bytes.fromhex("5a17") * 12  # 24 bytes: short enough that the trace would print them as hex
SALTED = bytes.fromhex("c0ffee11") * 8  # 32 bytes, SCRAM-SHA-256's size
PLAIN_AUTH = b"\0alice\0alice-secret"
KEYSTORE_PW = "hunter2-keystore"
JAAS_PW = "jaas-password-in-clear"
TOPIC_SECRET = "topic-secret-value"
# what must appear nowhere: each secret as text, and as the trace shows bytes (hex)
SECRETS = [SALT.hex(), SALTED.hex(), PLAIN_AUTH.hex(), "alice-secret", KEYSTORE_PW, JAAS_PW, TOPIC_SECRET]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    overrides = {**CONSOLE_OVERRIDES, "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                 "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:admin;User:ANONYMOUS"}
    with module_broker(tmp_path_factory, overrides) as b:
        yield b


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _status(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def _secret_requests(c: RawClient) -> None:
    """Every request that carries a secret, on one connection (accepted or refused alike)."""
    AU = alter_user_scram_credentials.REQUEST
    c.call(alter_user_scram_credentials.API, 0, AU(deletions=[], upsertions=[AU.ScramCredentialUpsertion(
        name="carol", mechanism=1, iterations=8192, salt=SALT, salted_password=SALTED)]))
    IA = incremental_alter_configs.REQUEST
    c.call(incremental_alter_configs.API, 1, IA(resources=[IA.AlterConfigsResource(
        resource_type=4, resource_name="", configs=[IA.AlterableConfig(
            name="listener.name.sasl_plaintext.ssl.keystore.password", config_operation=0, value=KEYSTORE_PW)])],
        validate_only=True))
    AC = alter_configs.REQUEST
    c.call(alter_configs.API, 2, AC(resources=[AC.AlterConfigsResource(
        resource_type=4, resource_name="", configs=[AC.AlterableConfig(
            name="listener.name.sasl_plaintext.plain.sasl.jaas.config", value=JAAS_PW)])], validate_only=True))
    CT = create_topics.REQUEST
    c.call(create_topics.API, 7, CT(topics=[CT.CreatableTopic(
        name="secret-configs", num_partitions=1, replication_factor=1, assignments=[],
        configs=[CT.CreatableTopicConfig(name="my.secret", value=TOPIC_SECRET)])], timeout_ms=5000))


def _as_alice(bootstrap: str) -> RawClient:
    c = RawClient(bootstrap, client_id="trace-secrets")
    assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN")).error_code == 0
    assert c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=PLAIN_AUTH)).error_code == 0
    return c


def test_trace_and_live_stream_mask_every_secret(broker: BrokerThread) -> None:
    url = console_url(broker)
    outs = {"text": io.StringIO(), "json": io.StringIO()}
    tracers = [Tracer(outs["text"], fmt="text", with_bytes=True), Tracer(outs["json"], fmt="json", with_bytes=True)]
    for t in tracers:
        broker._on_loop(lambda s, t=t: s.trace_listeners.add(t))
    events: list[str] = []
    subscribed = threading.Event()

    def watch() -> None:
        req = urllib.request.Request(f"{url}/trace/stream", headers=_basic("admin", "admin-secret"))
        with urllib.request.urlopen(req, timeout=30) as r:
            for raw in r:
                line = raw.decode()
                subscribed.set()
                if line.startswith("data: "):
                    events.append(line[6:])
                    if '"trace-secrets-end"' in line:
                        return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert subscribed.wait(15)
    try:
        with RawClient(broker.bootstrap_for("PLAINTEXT"), client_id="trace-secrets") as c:
            _secret_requests(c)  # as ANONYMOUS, a super user: accepted (validate_only aside)
            # SaslAuthenticate after no handshake on a PLAINTEXT listener: answered by the handler
            c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=PLAIN_AUTH))
        with _as_alice(broker.bootstrap_for("SASL_PLAINTEXT")) as c:
            _secret_requests(c)  # alice may alter nothing: refused
        with RawClient(broker.bootstrap_for("PLAINTEXT"), client_id="trace-secrets-end") as c:
            c.call(metadata.API, 12, metadata.REQUEST(topics=[], allow_auto_topic_creation=False))
        watcher.join(30)
    finally:
        for t in tracers:
            broker._on_loop(lambda s, t=t: s.trace_listeners.remove(t))
    assert not watcher.is_alive(), "the live stream never showed the last request"
    stream = "\n".join(events)
    for name, text in [("text", outs["text"].getvalue()), ("json", outs["json"].getvalue()), ("stream", stream)]:
        assert "AlterUserScramCredentials" in text and "SaslAuthenticate" in text, name
        leaked = [s for s in SECRETS if s in text or s.encode().hex() in text]
        assert leaked == [], f"the {name} trace prints {leaked}"
        assert "[hidden]" in text
    scram = [json.loads(e) for e in events if '"AlterUserScramCredentials"' in e]
    assert len(scram) == 2
    for e in scram:
        assert e["request"]["upsertions"][0]["salt"] == "[hidden]" and "request_hex" not in e
    assert "bytes withheld" in outs["text"].getvalue()


def test_live_trace_needs_an_operator_when_an_authorizer_is_on(broker: BrokerThread) -> None:
    url = console_url(broker)
    for path in ("/trace", "/trace/stream"):
        assert _status(f"{url}{path}", {}) == 401
        assert _status(f"{url}{path}", _basic("alice", "wrong")) == 401
        assert _status(f"{url}{path}", _basic("alice", "alice-secret")) == 403  # no ALTER on the cluster
    assert _status(f"{url}/trace", _basic("admin", "admin-secret")) == 200
