"""SASL on a SASL_PLAINTEXT listener next to a PLAINTEXT one: PLAIN (users from the listener's JAAS
config) and SCRAM-SHA-256/512 (credentials set with AlterUserScramCredentials through the
confluent-kafka admin client), with confluent-kafka, kafka-python, aiokafka and kcat; a wrong
password fails fast with Kafka's error; nothing but ApiVersions and SASL before authentication;
credentials salted, persisted and surviving a restart; KIP-368 re-authentication."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from minibroker.testing import SCRAM_JAAS, BrokerThread
from minibroker_protocol.apis import metadata
from tests.integration.helpers import RawClient, module_broker, unique

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SASL = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
}
# mechanism -> (user, password); the SCRAM users are created by the module fixture
USERS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("bob", "bob-secret"),
         "SCRAM-SHA-512": ("carol", "carol-secret")}


def set_scram(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"bob-secret"),
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                     b"carol-secret")])
    for f in futures.values():
        assert f.result() is None


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any) -> Any:
    with module_broker(tmp_path_factory, SASL) as b:
        set_scram(b.bootstrap)
        yield b


def sasl_conf(b: BrokerThread, mechanism: str, password: str | None = None) -> dict[str, Any]:
    user, pw = USERS[mechanism]
    return {"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password or pw}


@pytest.mark.parametrize("mechanism", list(USERS))
def test_confluent_produce_and_consume(kafka_broker_module: BrokerThread, mechanism: str) -> None:
    b, topic = kafka_broker_module, unique("sasl-ck")
    p = Producer(sasl_conf(b, mechanism))
    for i in range(3):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(10) == 0
    c = Consumer({**sasl_conf(b, mechanism), "group.id": unique("g"), "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(got) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("mechanism", list(USERS))
def test_wrong_password_fails_fast_with_kafkas_error(kafka_broker_module: BrokerThread, mechanism: str) -> None:
    errors: list[KafkaError] = []
    p = Producer({**sasl_conf(kafka_broker_module, mechanism, "wrong"), "error_cb": errors.append})
    t0 = time.monotonic()
    while not errors and time.monotonic() - t0 < 5:
        p.poll(0.05)
    assert errors, "no authentication error within 5 s"
    assert time.monotonic() - t0 < 2  # connection.failed.authentication.delay.ms=100, not a timeout
    assert errors[0].code() == KafkaError._AUTHENTICATION
    expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN" else
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}")
    assert expected in errors[0].str()


@pytest.mark.parametrize("mechanism", list(USERS))
def test_kafka_python(kafka_broker_module: BrokerThread, mechanism: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    b, topic = kafka_broker_module, unique("sasl-kp")
    user, pw = USERS[mechanism]
    conf = {"bootstrap_servers": b.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": pw}
    p = KafkaProducer(**conf)
    p.send(topic, b"hello").get(timeout=10)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **conf)
    assert next(iter(c)).value == b"hello"
    c.close()


@pytest.mark.parametrize("mechanism", list(USERS))
def test_aiokafka(kafka_broker_module: BrokerThread, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    b, topic = kafka_broker_module, unique("sasl-aio")
    user, pw = USERS[mechanism]
    conf = {"bootstrap_servers": b.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": pw}

    async def run() -> list[bytes | None]:
        p = AIOKafkaProducer(**conf)
        await p.start()
        try:
            await p.send_and_wait(topic, b"hi")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
        await c.start()
        try:
            m = await asyncio.wait_for(c.getone(), 10)
            return [m.value]
        finally:
            await c.stop()

    assert asyncio.run(run()) == [b"hi"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize("mechanism", ["PLAIN"])
def test_kcat(kafka_broker_module: BrokerThread, mechanism: str) -> None:
    """PLAIN only: kcat 1.7's librdkafka (before 2.6.1) repeats the client nonce in its SCRAM
    client-final message, which Kafka 4 refuses (RFC 5802's strict nonce check), and so do we."""
    b, topic = kafka_broker_module, unique("sasl-kcat")
    user, pw = USERS[mechanism]
    args = ["kcat", "-b", b.bootstrap_for("SASL_PLAINTEXT"), "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={user}", "-X", f"sasl.password={pw}"]
    subprocess.run([*args, "-P", "-t", topic], input=b"a\nb\n", check=True, timeout=30)
    out = subprocess.run([*args, "-C", "-t", topic, "-e", "-J"], capture_output=True, check=True, timeout=30)
    assert [json.loads(line)["payload"] for line in out.stdout.decode().splitlines()] == ["a", "b"]


def test_nothing_but_api_versions_and_sasl_before_authentication(kafka_broker_module: BrokerThread) -> None:
    """Kafka's authenticator closes a connection whose first request is not ApiVersions or
    SaslHandshake; the PLAINTEXT listener next to it still serves everyone."""
    b = kafka_broker_module
    with RawClient(b.bootstrap_for("SASL_PLAINTEXT")) as c:
        c.send(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False))
        assert c.closed_by_peer()
    with RawClient(b.bootstrap) as c:
        assert c.call(metadata.API, 12, metadata.REQUEST(topics=None, allow_auto_topic_creation=False)).brokers


def test_scram_credentials_are_salted_persisted_and_managed(tmp_path: Any) -> None:
    data = tmp_path / "data"
    with BrokerThread(data, overrides=SASL) as b:
        set_scram(b.bootstrap)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        described = admin.describe_user_scram_credentials(["bob", "nobody"])
        infos = described["bob"].result().scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 4096)]
        with pytest.raises(Exception, match="does not exist"):
            described["nobody"].result()
    stored = (data / "scram-credentials.json").read_text()
    assert "bob-secret" not in stored and "carol-secret" not in stored and "stored_key" in stored
    assert (data / "scram-credentials.json").stat().st_mode & 0o077 == 0
    with BrokerThread(data, overrides=SASL) as b:  # a restart keeps them
        p = Producer(sasl_conf(b, "SCRAM-SHA-256"))
        p.produce("after-restart", b"x")
        assert p.flush(10) == 0
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob",
                                                                                 ScramMechanism.SCRAM_SHA_256)]).values():
            assert f.result() is None
        errors: list[KafkaError] = []
        p = Producer({**sasl_conf(b, "SCRAM-SHA-256"), "error_cb": errors.append})
        deadline = time.monotonic() + 5
        while not errors and time.monotonic() < deadline:
            p.poll(0.05)
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION


def test_reauthentication_kip_368(tmp_path: Any, caplog: Any) -> None:
    """With connections.max.reauth.ms the client is told its session lifetime and re-authenticates
    on the same connection; it keeps producing across several sessions."""
    caplog.set_level(logging.INFO, logger="minibroker.security")
    with BrokerThread(tmp_path / "data", overrides={**SASL, "connections.max.reauth.ms": 1000}) as b:
        topic = unique("reauth")
        p = Producer(sasl_conf(b, "PLAIN"))
        for i in range(6):
            p.produce(topic, f"{i}".encode())
            assert p.flush(10) == 0
            time.sleep(0.5)
        assert len(b.values(topic)) == 6
    reauths = [r for r in caplog.records if r.getMessage().startswith("re-authenticated User:alice")]
    assert len(reauths) >= 2
