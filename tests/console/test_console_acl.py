"""The console's writes on a broker with an authorizer (issue 21): a write needs HTTP Basic
credentials of a SASL user (PLAIN from the listener's JAAS config, or SCRAM credentials) and is
then checked as that user's protocol request would be. The ACLs are set with confluent-kafka's
AdminClient `create_acls` over SASL_PLAINTEXT; each refusal is compared with what a confluent-kafka
client logged in as the same user gets for the same request (same error code), and each grant
makes the console's action go through."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import SCRAM_JAAS, BrokerThread
from tests.console.helpers import CONSOLE_OVERRIDES, console_url, get
from tests.integration.helpers import create_topic, module_broker, unique

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    overrides = {**CONSOLE_OVERRIDES, "console.allow.writes": True,
                 "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                 "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
                 "authorizer.class.name": AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"}
    with module_broker(tmp_path_factory, overrides) as b:
        yield b


@pytest.fixture(scope="module")
def url(broker: BrokerThread) -> str:
    return console_url(broker)


def conf(b: BrokerThread, user: str, password: str, mechanism: str = "PLAIN") -> dict[str, Any]:
    return {"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


ALICE = basic("alice", "alice-secret")


def post(url: str, form: dict[str, str], headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    req = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, body, hdrs = r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        status, body, hdrs = e.code, e.read().decode(), dict(e.headers)
    return status, json.loads(body) if "/api/" in url else body, hdrs


def grant(b: BrokerThread, principal: str, rtype: str, name: str, op: str, prefixed: bool = False) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    a = AdminClient(conf(b, "admin", "admin-secret"))
    acl = AclBinding(ResourceType[rtype], name,
                     ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL,
                     principal, "*", AclOperation[op], AclPermissionType.ALLOW)
    for f in a.create_acls([acl]).values():
        f.result(10)


def test_writes_need_credentials_of_a_sasl_user_but_pages_stay_open(url: str, broker: BrokerThread) -> None:
    status, body, hdrs = post(f"{url}/api/actions/topics", {"name": unique("anon")})
    assert status == 401 and "SASL users" in body["error"], body
    assert hdrs["WWW-Authenticate"].startswith("Basic realm=")
    status, body, _ = post(f"{url}/api/actions/topics", {"name": unique("anon")}, basic("alice", "wrong"))
    assert status == 401 and "Invalid username or password" in body["error"]
    status, _, _ = post(f"{url}/api/actions/topics", {"name": unique("anon")}, basic("nobody", "x"))
    assert status == 401
    # reads need nothing (the console binds loopback)
    assert get(f"{url}/topics")[0] == 200 and get(f"{url}/api/groups")[0] == 200


def test_create_delete_produce_checked_as_the_protocol_checks_them(url: str, broker: BrokerThread) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = unique("alice-t")
    # CREATE: refused on the console and to the same user's CreateTopics alike
    status, body, _ = post(f"{url}/api/actions/topics", {"name": topic}, ALICE)
    assert status == 403, body
    assert body["error"].startswith("TOPIC_AUTHORIZATION_FAILED: User:alice from 127.0.0.1") \
        and f"CREATE on Topic {topic!r}" in body["error"] and "Cluster 'kafka-cluster'" in body["error"]
    alice_admin = AdminClient(conf(broker, "alice", "alice-secret"))
    with pytest.raises(KafkaException) as e:
        alice_admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(broker, "User:alice", "TOPIC", "alice-t", "CREATE", prefixed=True)
    status, body, _ = post(f"{url}/api/actions/topics", {"name": topic, "partitions": "1"}, ALICE)
    assert status == 200 and body["topic"] == topic, body
    # WRITE: the console's produce and alice's Producer refused alike, then allowed
    status, body, _ = post(f"{url}/api/actions/topics/{topic}/0/produce", {"value": "v"}, ALICE)
    assert status == 403 and body["error"].startswith("TOPIC_AUTHORIZATION_FAILED") and "WRITE on Topic" in body["error"]
    errors: list[Any] = []
    p = Producer({**conf(broker, "alice", "alice-secret"), "enable.idempotence": False, "retries": 0,
                  "message.timeout.ms": 5000})
    p.produce(topic, b"v", partition=0, on_delivery=lambda err, _m: errors.append(err))
    p.flush(10)
    assert errors and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(broker, "User:alice", "TOPIC", topic, "WRITE")
    status, body, _ = post(f"{url}/api/actions/topics/{topic}/0/produce", {"value": "from alice"}, ALICE)
    assert status == 200 and body["offset"] == 0, body
    # DELETE: refused (an HTML page naming the operation and the resource for the form), then allowed
    status, html, _ = post(f"{url}/actions/topics/{topic}/delete", {}, ALICE)
    assert status == 403 and "TOPIC_AUTHORIZATION_FAILED" in html and "DELETE on Topic" in html
    grant(broker, "User:alice", "TOPIC", topic, "DELETE")
    status, body, _ = post(f"{url}/api/actions/topics/{topic}/delete", {}, ALICE)
    assert status == 200, body
    assert topic not in broker.call(lambda br: set(br.topics))


def test_reset_offsets_needs_read_on_group_then_topic(url: str, broker: BrokerThread) -> None:
    """Kafka 4.4 (StandardAuthorizer and the same users; checked by hand against the reference
    broker with confluent-kafka's AdminClient, 2026-11-24) answers the Admin client's alterConsumerGroupOffsets with
    GROUP_AUTHORIZATION_FAILED without ACLs, TOPIC_AUTHORIZATION_FAILED with READ on the group only,
    and success with READ on the group and the topic: the sequence below."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic, group = unique("reset-t"), unique("reset-g")
    create_topic(broker, topic, 1)
    # the super user may do anything: admin resets (as kafka-consumer-groups.sh would)
    status, body, _ = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": topic, "to": "0"},
                           basic("admin", "admin-secret"))
    assert status == 200, body
    # alice: READ on the group first (OffsetCommit's order), then READ on the topic
    status, body, _ = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": topic, "to": "0"}, ALICE)
    assert status == 403 and body["error"].startswith("GROUP_AUTHORIZATION_FAILED") \
        and f"READ on Group {group!r}" in body["error"], body
    # what kafka-consumer-groups.sh --reset-offsets sends: the Admin client's alterConsumerGroupOffsets
    alice = AdminClient(conf(broker, "alice", "alice-secret"))

    def alter() -> int:
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])
        try:
            res = alice.alter_consumer_group_offsets([req])[group].result(10)
        except KafkaException as e:
            return int(e.args[0].code())
        return int(res.topic_partitions[0].error.code()) if res.topic_partitions[0].error else 0

    assert alter() == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(broker, "User:alice", "GROUP", group, "READ")
    status, body, _ = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": topic, "to": "0"}, ALICE)
    assert status == 403 and body["error"].startswith("TOPIC_AUTHORIZATION_FAILED") \
        and f"READ on Topic {topic!r}" in body["error"], body
    assert alter() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(broker, "User:alice", "TOPIC", topic, "READ")
    status, body, _ = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": topic, "to": "0"}, ALICE)
    assert status == 200 and body["offsets"] == {"0": 0}, body
    assert alter() == 0


def test_a_scram_user_logs_in_with_its_password(url: str, broker: BrokerThread) -> None:
    from confluent_kafka.admin import AdminClient, ScramMechanism, UserScramCredentialUpsertion
    from confluent_kafka.admin import ScramCredentialInfo as Info

    a = AdminClient(conf(broker, "admin", "admin-secret"))
    for f in a.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "carol", Info(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")]).values():
        f.result(10)
    topic = unique("carol-t")
    status, body, _ = post(f"{url}/api/actions/topics", {"name": topic}, basic("carol", "wrong"))
    assert status == 401
    status, body, _ = post(f"{url}/api/actions/topics", {"name": topic}, basic("carol", "carol-secret"))
    assert status == 403 and "User:carol" in body["error"], body
    grant(broker, "User:carol", "BROKER", "kafka-cluster", "CREATE")
    status, body, _ = post(f"{url}/api/actions/topics", {"name": topic}, basic("carol", "carol-secret"))
    assert status == 200, body
