"""SASL against Apache Kafka and minibroker configured the same way (one server.properties-style
set of keys): SCRAM users made with Kafka's own `kafka-configs --alter --add-config
'SCRAM-SHA-256=[...]' --entity-type users`, described alike; PLAIN and SCRAM logins succeed, and a
wrong password fails fast with the same error message on both. OAUTHBEARER on the same listener
with Kafka's unsecured validator: confluent-kafka, kafka-python, aiokafka, kafkajs and the Java
client log in, produce and consume; bad tokens and bad exchanges get the same answers
(tests/reference/oauth_helpers.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from reference import kafka_reference as kr
from tests.reference import oauth_helpers, token_helpers

JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def sasl_props(plain_port: int, sasl_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": JAAS_SCRAM,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": JAAS_SCRAM,
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": oauth_helpers.JAAS,
        "delegation.token.secret.key": "token-secret",  # delegation tokens on (test_delegation_tokens_as_kafka)
    }


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str]]]:
    """name -> (PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap), for "kafka" and "minibroker"."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    from minibroker.testing import BrokerThread

    kport, ksasl = kr.free_port(), kr.free_port()
    props = sasl_props(kport, ksasl)
    k = kr.KafkaReference(overrides={
        **props, "listeners": props["listeners"] + ",CONTROLLER://127.0.0.1:{cp}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
        port=kport)
    cp = kr.free_port()
    k.controller_port = cp
    k.overrides = {**k.overrides, "listeners": str(k.overrides["listeners"]).format(cp=cp)}
    mini = BrokerThread(tmp_path_factory.mktemp("mini-sasl") / "data",
                        overrides={**sasl_props(0, 0), "group.initial.rebalance.delay.ms": 0})
    k.start()
    try:
        mini.start()
        try:
            yield {"kafka": (f"127.0.0.1:{kport}", f"127.0.0.1:{ksasl}"),
                   "minibroker": (mini.bootstrap_for("PLAINTEXT"), mini.bootstrap_for("SASL_PLAINTEXT"))}
        finally:
            mini.stop()
    finally:
        k.stop()


def login(sasl_bootstrap: str, mechanism: str, user: str, password: str) -> tuple[bool, str]:
    """(delivered, first error string) of one produce over SASL_PLAINTEXT."""
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
                  "error_cb": errors.append, "message.timeout.ms": 5000})
    p.produce("sasl-ref", b"x")
    deadline = time.monotonic() + 10
    while p.flush(0.1) and not errors and time.monotonic() < deadline:
        pass
    return (not errors and len(p) == 0), (errors[0].str().split(" (after")[0].split(": ", 1)[-1] if errors else "")


def test_same_sasl_outcomes_as_kafka(brokers: dict[str, tuple[str, str]]) -> None:
    outcomes: dict[str, Any] = {}
    for name, (plain, sasl) in brokers.items():
        for mech, iterations in (("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)):
            r = kr.run_tool("kafka-configs", ["--bootstrap-server", plain, "--alter", "--add-config",
                                              f"{mech}=[iterations={iterations},password=bob-secret]",
                                              "--entity-type", "users", "--entity-name", "bob"])
            assert r.returncode == 0, r.stderr
        # (kafka-configs --describe --entity-type users also needs DescribeClientQuotas, not served here)
        admin = AdminClient({"bootstrap.servers": plain})
        infos = admin.describe_user_scram_credentials(["bob"])["bob"].result()
        outcomes[name] = {
            "describe": sorted((str(i.mechanism), i.iterations) for i in infos.scram_credential_infos),
            "plain ok": login(sasl, "PLAIN", "alice", "alice-secret"),
            "plain wrong": login(sasl, "PLAIN", "alice", "nope"),
            "scram ok": login(sasl, "SCRAM-SHA-256", "bob", "bob-secret"),
            "scram512 ok": login(sasl, "SCRAM-SHA-512", "bob", "bob-secret"),
            "scram wrong": login(sasl, "SCRAM-SHA-256", "bob", "nope"),
            "scram unknown user": login(sasl, "SCRAM-SHA-512", "nobody", "nope"),
        }
    assert outcomes["minibroker"] == outcomes["kafka"]
    assert outcomes["kafka"]["scram ok"] == (True, "")


def test_same_oauthbearer_outcomes_as_kafka(brokers: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    # the two brokers at once: each side's time is mostly waiting (group joins, JVM starts)
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(oauth_helpers.outcomes, sasl, name, tmp_path)
                   for name, (_plain, sasl) in brokers.items()}
        outcomes = {name: f.result() for name, f in futures.items()}
    assert outcomes["minibroker"] == outcomes["kafka"], json.dumps(outcomes, default=repr, indent=1)
    k = outcomes["kafka"]
    assert k["confluent unsecure jwt"] == (True, "") and k["java"] == ["j1", "j2"]
    assert k["confluent no scope"] == (False, 'SASL authentication error: {"status":"insufficient_scope", '
                                              '"scope":"[kafka]"}')


def _token_outcomes(name: str, plain: str, sasl: str, tmp_path: Path) -> dict[str, Any]:
    """One broker's delegation-token session (test_delegation_tokens_as_kafka)."""
    r = kr.run_tool("kafka-configs", ["--bootstrap-server", plain, "--alter", "--add-config",
                                      "SCRAM-SHA-256=[iterations=4096,password=dan-pw]",
                                      "--entity-type", "users", "--entity-name", "dan"])
    assert r.returncode == 0, r.stderr
    dan = token_helpers.client_config(tmp_path / f"{name}-dan.properties", "dan", "dan-pw")
    alice = token_helpers.plain_config(tmp_path / f"{name}-alice.properties", "alice", "alice-secret")
    out: dict[str, Any] = {}
    rc, text = token_helpers.tokens_tool(sasl, dan, "--create", "--max-life-time-period", "-1",
                                         "--renewer-principal", "User:admin")
    token_id, hmac = token_helpers.created(text)
    names = {token_id: "<ID>", hmac: "<HMAC>"}
    out["create"] = (rc, token_helpers.mask(text, names))
    out["describe"] = token_helpers.mask(token_helpers.tokens_tool(sasl, dan, "--describe", "--owner-principal",
                                                                   "User:dan")[1], names)
    out["renew"] = token_helpers.mask(token_helpers.tokens_tool(
        sasl, dan, "--renew", "--hmac", hmac, "--renew-time-period", "-1")[1], names)
    out["renew by another"] = token_helpers.mask(token_helpers.tokens_tool(
        sasl, alice, "--renew", "--hmac", hmac, "--renew-time-period", "-1")[1], names)
    out["token clients"] = token_helpers.token_clients(sasl, tmp_path / f"{name}-token.properties", token_id, hmac)
    out["raw"] = token_helpers.raw_outcomes(plain, sasl, token_id, hmac)
    out["expire"] = token_helpers.mask(token_helpers.tokens_tool(
        sasl, dan, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")[1], names)
    return out


@pytest.mark.timeout(300)  # a dozen JVM tool runs: ~40 s, more on a loaded machine
def test_delegation_tokens_as_kafka(brokers: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    """kafka-delegation-tokens --create/--describe/--renew/--expire give Kafka's output (ids, HMACs
    and dates masked) and Kafka's errors; the Java console producer and kafka-python log in with
    the token (SCRAM-SHA-512, tokenauth=true); raw requests get Kafka's codes. The two brokers'
    sessions run side by side (each is mostly JVM start-ups)."""
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_token_outcomes, name, plain, sasl, tmp_path)
                   for name, (plain, sasl) in brokers.items()}
        outcomes = {name: f.result() for name, f in futures.items()}
    assert outcomes["minibroker"] == outcomes["kafka"]
    assert outcomes["kafka"]["token clients"] == ["t1", "t2"]
    assert "Completed renew operation" in outcomes["kafka"]["renew"], outcomes["kafka"]["renew"]
    assert "DelegationTokenOwnerMismatchException" in outcomes["kafka"]["renew by another"], outcomes["kafka"]
