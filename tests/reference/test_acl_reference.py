"""ACLs on Apache Kafka and minibroker configured the same way (StandardAuthorizer, PLAIN users
over SASL_PLAINTEXT, `super.users`): Kafka's own `kafka-acls` adds, lists and removes ACLs with the
same output on both, and confluent-kafka clients get the same outcomes (allowed, or Kafka's
authorization error) per API family."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from reference import kafka_reference as kr

JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def acl_props(plain_port: int, sasl_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        "authorizer.class.name": AUTHORIZER,
        # the PLAINTEXT listener (and Kafka's own controller link) is the operator's: ANONYMOUS is super
        "super.users": "User:admin;User:ANONYMOUS",
        "group.initial.rebalance.delay.ms": "0",
    }


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, str]]]:
    """name -> (PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap), for "kafka" and "minibroker"."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    from minibroker.testing import BrokerThread

    kport, ksasl, cp = kr.free_port(), kr.free_port(), kr.free_port()
    props = acl_props(kport, ksasl)
    k = kr.KafkaReference(overrides={
        **props, "listeners": props["listeners"] + f",CONTROLLER://127.0.0.1:{cp}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
        port=kport, controller_port=cp)
    mini = BrokerThread(tmp_path_factory.mktemp("mini-acl") / "data", overrides=acl_props(0, 0))
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


def acls_tool(bootstrap: str, *args: str) -> str:
    r = kr.run_tool("kafka-acls", ["--bootstrap-server", bootstrap, *args])
    assert r.returncode == 0, r.stderr
    return normalised(r.stdout)


def normalised(text: str) -> str:
    """kafka-acls prints each resource's ACLs from a hash set: compare blocks and lines unordered."""
    text = re.sub(r"(ACLs for principal `[^`]*`)\n", r"\1\n\n", text)
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "\n\n".join(sorted("\n".join(sorted(line.strip() for line in b.splitlines())) for b in blocks))


def test_kafka_acls_tool_adds_lists_removes_alike(brokers: dict[str, tuple[str, str]]) -> None:
    def steps(plain: str) -> list[str]:
        return [
            acls_tool(plain, "--add", "--allow-principal", "User:carol", "--operation", "Write", "--operation",
                      "Describe", "--topic", "tool-t"),
            acls_tool(plain, "--add", "--allow-principal", "User:carol", "--consumer", "--topic", "tool-",
                      "--resource-pattern-type", "prefixed", "--group", "tool-g"),
            acls_tool(plain, "--add", "--deny-principal", "User:dave", "--deny-host", "10.0.0.9", "--operation",
                      "All", "--cluster"),
            acls_tool(plain, "--add", "--allow-principal", "User:carol", "--operation", "Write",
                      "--transactional-id", "tool-txn"),
            acls_tool(plain, "--list"),
            acls_tool(plain, "--list", "--topic", "tool-t", "--resource-pattern-type", "match"),
            acls_tool(plain, "--list", "--principal", "User:carol"),
            acls_tool(plain, "--remove", "--force", "--allow-principal", "User:carol", "--operation", "Write",
                      "--topic", "tool-t"),
            acls_tool(plain, "--remove", "--force", "--topic", "tool-t", "--cluster", "--transactional-id",
                      "tool-txn"),
            acls_tool(plain, "--remove", "--force", "--topic", "tool-", "--group", "tool-g",
                      "--resource-pattern-type", "prefixed"),
            acls_tool(plain, "--list"),
        ]

    # the two sides run at once (each step is a JVM start)
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(steps, plain) for name, (plain, _sasl) in brokers.items()}
        out = {name: f.result() for name, f in futures.items()}
    for i, (m, k) in enumerate(zip(out["minibroker"], out["kafka"], strict=True)):
        assert m == k, f"step {i}"
    assert "User:carol" in out["kafka"][4] and out["kafka"][-1] == ""
