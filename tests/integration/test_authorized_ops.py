"""KIP-430 authorized operations computed from the ACLs, through confluent-kafka's AdminClient as
PLAIN users (what tests/reference/test_acl_clients_reference.py compares with Kafka 4.4, here
without a JVM): a super user gets every operation of the resource type, a user the ones its ACLs
allow (with the implied DESCRIBE and DESCRIBE_CONFIGS), a user without DESCRIBE gets the
authorization error, and without the flag no set at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from minibroker.testing import BrokerThread

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
TOPIC_OPS = {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
CLUSTER_OPS = {"CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
               "IDEMPOTENT_WRITE"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    data: Path = tmp_path_factory.mktemp("kip430") / "data"
    data.mkdir()
    with BrokerThread(data, overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_for("PLAINTEXT")})
        admin.create_topics([NewTopic("ops-t", 1)])["ops-t"].result(10)

        def acl(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
            return AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op,
                              AclPermissionType.ALLOW)

        for f in admin.create_acls([acl(ResourceType.TOPIC, "ops-t", AclOperation.READ),
                                    acl(ResourceType.TOPIC, "ops-t", AclOperation.ALTER_CONFIGS),
                                    acl(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE)]).values():
            f.result(10)
        yield b


def _admin(b: BrokerThread, user: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"})


def _names(ops: Any) -> set[str] | None:
    return None if ops is None else {o.name for o in ops}


def _topic_ops(admin: AdminClient, asked: bool = True) -> set[str] | str | None:
    f = admin.describe_topics(TopicCollection(["ops-t"]), include_authorized_operations=asked)["ops-t"]
    try:
        return _names(f.result(10).authorized_operations)
    except KafkaException as e:
        return str(e.args[0].name())


def test_sets_follow_the_acls(broker: BrokerThread) -> None:
    admin, alice, bob = (_admin(broker, u) for u in ("admin", "alice", "bob"))
    assert _topic_ops(admin) == TOPIC_OPS  # a super user: everything the type has
    assert _topic_ops(alice) == {"READ", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"}
    assert _topic_ops(bob) == "TOPIC_AUTHORIZATION_FAILED"
    assert _topic_ops(alice, asked=False) is None
    cluster = {u: _names(c.describe_cluster(include_authorized_operations=True).result(10).authorized_operations)
               for u, c in (("admin", admin), ("alice", alice), ("bob", bob))}
    # bob may do nothing on the cluster: an empty set, which librdkafka hands over as None
    assert cluster == {"admin": CLUSTER_OPS, "alice": {"DESCRIBE"}, "bob": None}
