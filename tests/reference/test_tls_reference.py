"""TLS against Apache Kafka 4.4 and minibroker configured with the same keys: an SSL listener (PEM
keystore file, client certificates requested, PEM truststore) and a SASL_SSL listener (PKCS12
keystore, SCRAM). The same outcomes on both: confluent-kafka with host name verification by name
and by address, an untrusted CA refused with the same error, SCRAM over SASL_SSL (users made with
Kafka's kafka-configs), a wrong password refused with the same message; and the Java client
(Kafka's own console producer and consumer from the reference jars) over SSL with
ssl.endpoint.identification.algorithm=https and a PEM truststore; kafkajs over SSL (the test CA,
by address and by name, another CA refused) and SASL_SSL with SCRAM (a wrong password refused
with the same message)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from minibroker.security.certs import CertFiles, write_certs
from reference import kafka_reference as kr

JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def tls_props(certs: CertFiles, plain: int, tls: int, sasl: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls},SASL_SSL://127.0.0.1:{sasl}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls},SASL_SSL://127.0.0.1:{sasl}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
        "ssl.client.auth": "requested",
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": str(certs.server_p12),
        "listener.name.sasl_ssl.ssl.keystore.password": certs.password,
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": JAAS_SCRAM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": JAAS_SCRAM,
    }


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return write_certs(tmp_path_factory.mktemp("certs"), ["localhost", "127.0.0.1"], ["alice"], password="ks-pass-1")


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory, certs: CertFiles) -> Iterator[dict[str, dict[str, str]]]:
    """name -> listener -> bootstrap, for "kafka" and "minibroker"."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    from minibroker.testing import BrokerThread

    kp, ks, kz, cp = kr.free_port(), kr.free_port(), kr.free_port(), kr.free_port()
    props = tls_props(certs, kp, ks, kz)
    k = kr.KafkaReference(overrides={
        **props, "listeners": props["listeners"] + f",CONTROLLER://127.0.0.1:{cp}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"},
        port=kp, controller_port=cp)
    mini = BrokerThread(tmp_path_factory.mktemp("mini-tls") / "data",
                        overrides={**{k: v for k, v in tls_props(certs, 0, 0, 0).items()
                                      if k != "advertised.listeners"}, "group.initial.rebalance.delay.ms": 0})
    k.start()
    try:
        mini.start()
        try:
            yield {"kafka": {"PLAINTEXT": f"127.0.0.1:{kp}", "SSL": f"127.0.0.1:{ks}", "SASL_SSL": f"127.0.0.1:{kz}"},
                   "minibroker": {n: mini.bootstrap_for(n) for n in ("PLAINTEXT", "SSL", "SASL_SSL")}}
        finally:
            mini.stop()
    finally:
        k.stop()


def outcome(conf: dict[str, Any], topic: str) -> tuple[bool, str]:
    """(a record produced and consumed back, first error) over the given settings."""
    errors: list[KafkaError] = []
    conf = {**conf, "error_cb": errors.append}
    p = Producer({**conf, "message.timeout.ms": 6000})
    p.produce(topic, b"tls")
    deadline = time.monotonic() + 10
    while p.flush(0.1) and not errors and time.monotonic() < deadline:
        pass
    if errors or len(p):
        return False, errors[0].str().split(" (after")[0].split(": ", 1)[-1] if errors else "timeout"
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = None
    while got is None and time.monotonic() < deadline + 10:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got = m.value()
    c.close()
    return got == b"tls", ""


def java_roundtrip(bootstrap: str, props_file: Path, topic: str) -> list[str]:
    r = kr.run_tool("kafka-console-producer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(props_file)], input="j1\nj2\n")
    assert r.returncode == 0, r.stderr[-2000:]
    r = kr.run_tool("kafka-console-consumer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(props_file), "--from-beginning",
                                               "--max-messages", "2", "--timeout-ms", "20000"])
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def test_same_tls_outcomes_as_kafka(brokers: dict[str, dict[str, str]], certs: CertFiles, tmp_path: Path) -> None:
    other = write_certs(tmp_path / "other", ["127.0.0.1"])
    outcomes: dict[str, Any] = {}
    for name, listeners in brokers.items():
        r = kr.run_tool("kafka-configs", ["--bootstrap-server", listeners["PLAINTEXT"], "--alter", "--add-config",
                                          "SCRAM-SHA-512=[password=carol-secret]", "--entity-type", "users",
                                          "--entity-name", "carol"])
        assert r.returncode == 0, r.stderr
        ssl_conf = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
                    "ssl.endpoint.identification.algorithm": "https"}
        port = listeners["SSL"].rsplit(":", 1)[1]
        sasl = {"bootstrap.servers": listeners["SASL_SSL"], "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(certs.ca), "ssl.endpoint.identification.algorithm": "https",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol", "sasl.password": "carol-secret"}
        cert, key = certs.client("alice")
        outcomes[name] = {
            "ssl by address": outcome({**ssl_conf, "bootstrap.servers": listeners["SSL"]}, f"tls-ip-{name}"),
            "ssl by name": outcome({**ssl_conf, "bootstrap.servers": f"localhost:{port}"}, f"tls-name-{name}"),
            "ssl with client cert": outcome({**ssl_conf, "bootstrap.servers": listeners["SSL"],
                                             "ssl.certificate.location": str(cert),
                                             "ssl.key.location": str(key)}, f"tls-mtls-{name}"),
            "untrusted ca": outcome({**ssl_conf, "bootstrap.servers": listeners["SSL"],
                                     "ssl.ca.location": str(other.ca)}, f"tls-bad-{name}")[0],
            "sasl_ssl scram": outcome(sasl, f"sasl-ssl-{name}"),
            "sasl_ssl wrong password": outcome({**sasl, "sasl.password": "nope"}, f"sasl-ssl-bad-{name}"),
        }
        java = tmp_path / f"java-{name}.properties"
        java.write_text("security.protocol=SSL\nssl.truststore.type=PEM\n"
                        f"ssl.truststore.location={certs.ca}\nssl.endpoint.identification.algorithm=https\n")
        outcomes[name]["java ssl"] = java_roundtrip(listeners["SSL"], java, f"tls-java-{name}")
    assert outcomes["minibroker"] == outcomes["kafka"]
    assert outcomes["kafka"]["ssl by name"] == (True, "")
    assert outcomes["kafka"]["untrusted ca"] is False
    assert outcomes["kafka"]["java ssl"] == ["j1", "j2"]


JS = Path(__file__).resolve().parent.parent / "js"


@pytest.mark.skipif(
    not os.environ.get("CI") and (shutil.which("node") is None or not (JS / "node_modules" / "kafkajs").is_dir()),
    reason="needs node and `npm ci` in tests/js (make test does it)")
def test_same_kafkajs_tls_outcomes_as_kafka(brokers: dict[str, dict[str, str]], certs: CertFiles,
                                            tmp_path: Path) -> None:
    other = str(write_certs(tmp_path / "other", ["127.0.0.1"]).ca)

    def run(name: str) -> dict[str, Any]:
        listeners = brokers[name]
        r = kr.run_tool("kafka-configs", ["--bootstrap-server", listeners["PLAINTEXT"], "--alter", "--add-config",
                                          "SCRAM-SHA-256=[password=dave-secret]", "--entity-type", "users",
                                          "--entity-name", "dave"])
        assert r.returncode == 0, r.stderr
        port = listeners["SSL"].rsplit(":", 1)[1]
        sasl = {"mechanism": "scram-sha-256", "username": "dave", "password": "dave-secret"}
        scenarios = [
            {"name": "ssl-by-address", "brokers": [listeners["SSL"]], "ca": str(certs.ca)},
            {"name": "ssl-by-name", "brokers": [f"localhost:{port}"], "ca": str(certs.ca)},
            {"name": "ssl-other-ca", "brokers": [listeners["SSL"]], "ca": other, "retries": 0},
            {"name": "sasl-ssl-scram", "brokers": [listeners["SASL_SSL"]], "ca": str(certs.ca), "sasl": sasl},
            {"name": "sasl-ssl-wrong", "brokers": [listeners["SASL_SSL"]], "ca": str(certs.ca), "retries": 0,
             "sasl": {**sasl, "password": "nope"}},
        ]
        for sc in scenarios:
            sc["topic"] = f"js-{sc['name']}-{name}"
        done = subprocess.run(["node", str(JS / "secure_client.js"), json.dumps(scenarios)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return {r["name"]: (r["ok"], len(r["values"]), r["error"]) for r in json.loads(done.stdout.splitlines()[-1])}

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(run, name) for name in brokers}
        outcomes = {name: f.result() for name, f in futures.items()}
    assert outcomes["minibroker"] == outcomes["kafka"]
    assert outcomes["kafka"]["ssl-by-name"] == (True, 2, None)
    assert outcomes["kafka"]["sasl-ssl-scram"] == (True, 2, None)
    assert outcomes["kafka"]["ssl-other-ca"][0] is False
