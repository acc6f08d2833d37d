"""TLS listeners with real clients: SSL with server verification (host name checked against the
certificate's subject alternative names), mTLS with the principal mapped from the client
certificate's DN by `ssl.principal.mapping.rules`, SASL_SSL with SCRAM over a PKCS12 keystore, and
the refusals: an untrusted server certificate, a required client certificate not sent, a truncated
handshake, plaintext spoken to a TLS port — each closed with a log line while other connections
are served. Clients: confluent-kafka, kafka-python, aiokafka, kcat.

One broker for the module, four listeners: PLAINTEXT; SSL (PEM keystore file, client certificates
requested, DN mapped); MTLS (an SSL listener with a custom name, client certificates required,
inline PEM keystore); SASL_SSL (PKCS12 keystore, SCRAM and PLAIN).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from minibroker.security.certs import CertFiles, write_certs
from minibroker.testing import SCRAM_JAAS, BrokerThread
from tests.integration.helpers import module_broker, unique

RULES = "RULE:^CN=(.*?),OU=clients,O=minibroker$/$1/L,DEFAULT"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def certs(tmp_path_factory: Any) -> CertFiles:
    return write_certs(tmp_path_factory.mktemp("certs"), ["localhost", "127.0.0.1"], ["Alice", "bob"], password="p12-Secret-9")


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any, certs: CertFiles) -> Iterator[BrokerThread]:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
        # broker-wide: a PEM keystore file, client certificates requested and checked against the CA
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
        "ssl.client.auth": "requested", "ssl.principal.mapping.rules": RULES,
        # MTLS: inline PEM, certificates required
        "listener.name.mtls.ssl.keystore.key": certs.server_key.read_text(),
        "listener.name.mtls.ssl.keystore.certificate.chain": certs.server_chain.read_text(),
        "listener.name.mtls.ssl.client.auth": "required",
        # SASL_SSL: PKCS12, no client certificates
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": str(certs.server_p12),
        "listener.name.sasl_ssl.ssl.keystore.password": certs.password,
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
    }
    with module_broker(tmp_path_factory, props) as b:
        from minibroker.security.scram import credential_from_password

        b.call(lambda broker: broker.scram_credentials.apply(
            [("carol", m, credential_from_password(m, "carol-secret")) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")],
            []))
        _BROKER[:] = [b]
        yield b


def principals(b: BrokerThread, listener: str) -> set[str]:
    return b.call(lambda _: {c.principal for c in b._inner.server.socket_server.connections  # type: ignore[union-attr]
                             if c.listener == listener and not c.closed})


def ssl_conf(b: BrokerThread, certs: CertFiles, listener: str = "SSL", client: str | None = None,
             host: str = "127.0.0.1") -> dict[str, Any]:
    port = b.bootstrap_for(listener).rsplit(":", 1)[1]
    conf = {"bootstrap.servers": f"{host}:{port}", "security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
            "ssl.endpoint.identification.algorithm": "https"}
    if client is not None:
        cert, key = certs.client(client)
        conf.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    return conf


def roundtrip(conf: dict[str, Any], topic: str, n: int = 3, size: int = 10,
              seen: set[str] | None = None, listener: str = "") -> list[bytes]:
    """Produce n records and consume them in a group; `seen` gets the principals of the broker's
    connections on `listener` while the consumer is still open."""
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, f"{i}".encode().ljust(size, b"."))
    assert p.flush(15) == 0
    c = Consumer({**conf, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    if seen is not None:
        seen.update(_principals_now(listener))
    c.close()
    return got


_BROKER: list[BrokerThread] = []


def _principals_now(listener: str) -> set[str]:
    return principals(_BROKER[0], listener)


def test_confluent_ssl_with_server_verification(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    """Host name checked against the SANs, by name and by address; 200 KiB of 10 KiB records come
    back through the encrypted fetch path (no sendfile on TLS)."""
    topic = unique("tls-ck")
    got = roundtrip(ssl_conf(kafka_broker_module, certs, host="localhost"), topic, n=20, size=10240)
    assert [v[:2].rstrip(b".") for v in got] == [str(i).encode() for i in range(20)]
    assert all(len(v) == 10240 for v in got)
    assert roundtrip(ssl_conf(kafka_broker_module, certs), unique("tls-ck-ip"))


def test_mtls_principal_mapped_from_the_certificate_dn(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    """CN=Alice,OU=clients,O=minibroker -> User:alice (the rule lower-cases); no certificate on a
    `requested` listener -> User:ANONYMOUS."""
    p = Producer(ssl_conf(kafka_broker_module, certs, "MTLS", client="Alice"))
    p.produce(unique("mtls"), b"x")
    assert p.flush(15) == 0
    assert "User:alice" in principals(kafka_broker_module, "MTLS")
    p2 = Producer(ssl_conf(kafka_broker_module, certs, "SSL"))
    p2.produce(unique("anon"), b"x")
    assert p2.flush(15) == 0
    assert "User:ANONYMOUS" in principals(kafka_broker_module, "SSL")


def _first_error(conf: dict[str, Any], timeout: float = 10.0) -> KafkaError | None:
    errors: list[KafkaError] = []
    p = Producer({**conf, "error_cb": errors.append, "message.timeout.ms": 4000})
    p.produce(unique("refused"), b"x")
    deadline = time.monotonic() + timeout
    while not errors and p.flush(0.1) and time.monotonic() < deadline:
        pass
    return errors[0] if errors else None


def test_required_client_certificate_missing_is_refused(kafka_broker_module: BrokerThread, certs: CertFiles,
                                                        caplog: Any) -> None:
    caplog.set_level(logging.WARNING, "minibroker.network")
    err = _first_error(ssl_conf(kafka_broker_module, certs, "MTLS"))
    assert err is not None and err.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)


def test_untrusted_server_certificate_is_refused(kafka_broker_module: BrokerThread, tmp_path: Path) -> None:
    other = write_certs(tmp_path / "other", ["127.0.0.1"])
    conf = {"bootstrap.servers": kafka_broker_module.bootstrap_for("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": str(other.ca), "ssl.endpoint.identification.algorithm": "https"}
    err = _first_error(conf)
    assert err is not None and "certificate verify failed" in err.str()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_ssl_scram(kafka_broker_module: BrokerThread, certs: CertFiles, mechanism: str) -> None:
    conf = {"bootstrap.servers": kafka_broker_module.bootstrap_for("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs.ca), "ssl.endpoint.identification.algorithm": "https",
            "sasl.mechanism": mechanism, "sasl.username": "carol", "sasl.password": "carol-secret"}
    seen: set[str] = set()
    assert len(roundtrip(conf, unique("sasl-ssl"), seen=seen, listener="SASL_SSL")) == 3
    assert "User:carol" in seen
    bad = _first_error({**conf, "sasl.password": "wrong"})
    assert bad is not None and bad.code() == KafkaError._AUTHENTICATION


def test_kafka_python_ssl_and_sasl_ssl(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    for listener, principal, extra in (("MTLS", "User:bob", {"bootstrap_servers": kafka_broker_module.bootstrap_for("MTLS"), "security_protocol": "SSL",
                   "ssl_certfile": str(certs.client("bob")[0]), "ssl_keyfile": str(certs.client("bob")[1])}),
                  ("SASL_SSL", "User:carol", {"bootstrap_servers": kafka_broker_module.bootstrap_for("SASL_SSL"), "security_protocol": "SASL_SSL",
                   "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "carol",
                   "sasl_plain_password": "carol-secret"})):
        conf = {**extra, "ssl_cafile": str(certs.ca), "ssl_check_hostname": True}
        topic = unique("tls-kp")
        p = KafkaProducer(**conf)
        p.send(topic, b"hello").get(timeout=15)
        assert principal in principals(kafka_broker_module, listener)
        p.close()
        c = KafkaConsumer(topic, **conf, auto_offset_reset="earliest", consumer_timeout_ms=10000)
        assert next(iter(c)).value == b"hello"
        c.close()


def test_aiokafka_ssl(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    topic = unique("tls-aio")

    async def run() -> list[bytes]:
        ctx = create_ssl_context(cafile=str(certs.ca), certfile=str(certs.client("bob")[0]),
                                 keyfile=str(certs.client("bob")[1]))
        conf = {"bootstrap_servers": kafka_broker_module.bootstrap_for("MTLS"), "security_protocol": "SSL",
                "ssl_context": ctx}
        p = AIOKafkaProducer(**conf)
        await p.start()
        try:
            await p.send_and_wait(topic, b"hi")
            seen = principals(kafka_broker_module, "MTLS")
        finally:
            await p.stop()
        assert "User:bob" in seen
        c = AIOKafkaConsumer(topic, **conf, auto_offset_reset="earliest")
        await c.start()
        try:
            m = await asyncio.wait_for(c.getone(), 15)
        finally:
            await c.stop()
        return [m.value]

    assert asyncio.run(run()) == [b"hi"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_ssl(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    topic = unique("tls-kcat")
    cert, key = certs.client("Alice")
    args = ["kcat", "-b", kafka_broker_module.bootstrap_for("MTLS"), "-X", "security.protocol=SSL",
            "-X", f"ssl.ca.location={certs.ca}", "-X", "ssl.endpoint.identification.algorithm=https",
            "-X", f"ssl.certificate.location={cert}", "-X", f"ssl.key.location={key}"]
    subprocess.run([*args, "-P", "-t", topic], input=b"a\nb\n", check=True, timeout=30)
    out = subprocess.run([*args, "-C", "-t", topic, "-e", "-J"], capture_output=True, check=True, timeout=30)
    assert [json.loads(line)["payload"] for line in out.stdout.decode().splitlines()] == ["a", "b"]


def _served(b: BrokerThread, certs: CertFiles) -> None:
    """A fresh client still gets through on the SSL listener."""
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    host, port = b.bootstrap_for("SSL").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")


def test_truncated_handshake_and_plaintext_on_a_tls_port(kafka_broker_module: BrokerThread, certs: CertFiles,
                                                         caplog: Any) -> None:
    caplog.set_level(logging.INFO, "minibroker.network")
    host, port = kafka_broker_module.bootstrap_for("SSL").rsplit(":", 1)
    # a ClientHello cut short, then the client goes away
    hello = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ssl.create_default_context().wrap_bio(*hello, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    client_hello = hello[1].read()
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(client_hello[: len(client_hello) // 2])
        time.sleep(0.2)
    # a Kafka request in plaintext sent to the TLS port: the broker answers with a TLS alert and closes
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"\x00\x00\x00\x0e\x00\x12\x00\x03\x00\x00\x00\x01\x00\x04test")
        s.settimeout(5)
        data = s.recv(100)
        assert data == b"" or data[:1] == b"\x15"  # nothing, or an alert record
        assert s.recv(100) == b""  # closed
    _served(kafka_broker_module, certs)
    messages = [r.getMessage() for r in caplog.records]
    deadline = time.monotonic() + 5
    while not any("closed by the client during the TLS handshake" in m for m in messages) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
        messages = [r.getMessage() for r in caplog.records]
    assert any("closed by the client during the TLS handshake" in m for m in messages)
    assert any("TLS handshake failed" in m for m in messages)


def test_keystore_passwords_are_never_shown(kafka_broker_module: BrokerThread, certs: CertFiles) -> None:
    shown = kafka_broker_module.call(lambda broker: repr(broker.config))
    assert certs.password not in shown and "BEGIN" not in shown
    admin = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([res])[res].result(timeout=15)
    for key in ("ssl.keystore.password", "ssl.key.password", "ssl.keystore.key", "ssl.truststore.password"):
        assert configs[key].is_sensitive and configs[key].value is None
    assert all(certs.password != (e.value or "") for e in configs.values())


def test_fixture_security_option(tmp_path: Path) -> None:
    """What docs/testing.md shows: a user's SASL_SSL settings against BrokerThread(security=...)."""
    with BrokerThread(tmp_path / "d", security="SASL_SSL") as b:
        for mechanism in ("PLAIN", "SCRAM-SHA-512"):
            conf = b.client_config(mechanism)
            assert conf["security.protocol"] == "SASL_SSL"
            assert len(roundtrip(conf, unique("fixture"), n=1)) == 1
