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
from tests.reference.acl_helpers import client_conf


@pytest.fixture(scope="module")
def brokers(acl_pair: dict[str, tuple[str, str]]) -> Iterator[dict[str, tuple[str, str]]]:
    """name -> (PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap), for "kafka" and "minibroker"
    (the pair tests/reference/conftest.py shares among the ACL modules)."""
    yield acl_pair


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
