"""ACLs on Apache Kafka and minibroker configured the same way (StandardAuthorizer, PLAIN users
over SASL_PLAINTEXT, `super.users`): Kafka's own `kafka-acls` adds, lists and removes ACLs with the
same output on both, and confluent-kafka clients get the same outcomes (allowed, or Kafka's
authorization error) per API family."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

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


def client_conf(sasl: str, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


def produce(sasl: str, user: str, topic: str) -> str:
    """NONE or the error name of one delivery."""
    result: list[str] = []
    p = Producer({**client_conf(sasl, user), "message.timeout.ms": 5000})
    p.produce(topic, b"v", on_delivery=lambda err, _m: result.append(err.name() if err else "NONE"))
    p.flush(10)
    return result[0] if result else "TIMEOUT"


def consume(sasl: str, user: str, topic: str, group: str) -> str:
    """NONE once a record arrives, or the first error's name."""
    c = Consumer({**client_conf(sasl, user), "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            err = m.error()
            if err is None:
                return "NONE"
            if err.code() != KafkaError._PARTITION_EOF:
                return str(err.name())
        return "TIMEOUT"
    finally:
        c.close()


def visible(sasl: str, user: str) -> list[str]:
    md = AdminClient(client_conf(sasl, user)).list_topics(timeout=10)
    return sorted(t for t in md.topics if t.startswith("acl-"))


def test_same_authorization_outcomes_as_kafka(brokers: dict[str, tuple[str, str]]) -> None:
    def acl(rtype: ResourceType, name: str, principal: str, op: AclOperation, perm: AclPermissionType) -> AclBinding:
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, perm)

    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    outcomes: dict[str, dict[str, Any]] = {}
    for name, (plain, sasl) in brokers.items():
        admin = AdminClient({"bootstrap.servers": plain})  # ANONYMOUS: a super user here
        for f in admin.create_topics([NewTopic(t, 1) for t in ("acl-a", "acl-b")]).values():
            f.result()
        for f in admin.create_acls([
            acl(ResourceType.TOPIC, "acl-a", "User:alice", AclOperation.WRITE, allow),
            acl(ResourceType.TOPIC, "acl-a", "User:alice", AclOperation.READ, allow),
            acl(ResourceType.GROUP, "acl-g", "User:alice", AclOperation.READ, allow),
            acl(ResourceType.TOPIC, "acl-b", "User:*", AclOperation.READ, allow),
            acl(ResourceType.TOPIC, "acl-b", "User:alice", AclOperation.READ, deny),
        ]).values():
            f.result()
        # Kafka's brokers apply ACLs from the metadata log a moment after CreateAcls answers
        every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                 AclPermissionType.ANY)
        deadline = time.monotonic() + 10
        while len(admin.describe_acls(every).result()) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        outcomes[name] = {
            "alice produces to acl-a": produce(sasl, "alice", "acl-a"),
            "bob produces to acl-a": produce(sasl, "bob", "acl-a"),
            "alice consumes acl-a in acl-g": consume(sasl, "alice", "acl-a", "acl-g"),
            "bob consumes acl-b in acl-g": consume(sasl, "bob", "acl-b", "acl-g"),
            "alice consumes acl-b (DENY wins)": consume(sasl, "alice", "acl-b", "acl-g"),
            "admin (super user) produces to acl-b": produce(sasl, "admin", "acl-b"),
            "alice sees": visible(sasl, "alice"),
            "bob sees": visible(sasl, "bob"),
            "bob creates a topic": admin_create(sasl, "bob", "acl-new"),
        }
    assert outcomes["minibroker"] == outcomes["kafka"]
    assert outcomes["kafka"]["alice produces to acl-a"] == "NONE"
    assert outcomes["kafka"]["bob produces to acl-a"] == "TOPIC_AUTHORIZATION_FAILED"
    assert outcomes["kafka"]["alice consumes acl-a in acl-g"] == "NONE"
    assert outcomes["kafka"]["bob consumes acl-b in acl-g"] == "GROUP_AUTHORIZATION_FAILED"
    assert outcomes["kafka"]["alice consumes acl-b (DENY wins)"] == "TOPIC_AUTHORIZATION_FAILED"
    assert outcomes["kafka"]["bob sees"] == ["acl-b"]


def admin_create(sasl: str, user: str, topic: str) -> str:
    admin = AdminClient(client_conf(sasl, user))  # held: a collected client fails its futures with _DESTROY
    try:
        admin.create_topics([NewTopic(topic, 1)])[topic].result(timeout=10)
    except KafkaException as e:
        return str(e.args[0].name())
    return "NONE"
