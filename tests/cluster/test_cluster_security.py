"""ACLs, SCRAM credentials and client quotas on a cluster (issue 29): created through one broker,
they are records of the metadata log (AccessControlEntryRecord, UserScramCredentialRecord,
ClientQuotaRecord), so every broker decides on them; and the requests a broker forwards to the
controller (CreateTopics, IncrementalAlterConfigs, CreateAcls...) are checked against the ACLs as
Kafka's controller checks them. The clients are confluent-kafka's AdminClient and kafka-configs,
each bootstrapped on one broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from minibroker.cluster_testing import poll
from minibroker.testing import Cluster
from minibroker_protocol.apis import unregister_controller
from minibroker_protocol.errors import ErrorCode
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient

# Every client here is User:ANONYMOUS (PLAINTEXT); with no ACL on a resource everyone may use it,
# so the cluster works as usual until the test denies something.
pytestmark = pytest.mark.minibroker_cluster(brokers=2, overrides={
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true"})

ANON = "User:ANONYMOUS"


def admin_of(c: Cluster, node_id: int) -> AdminClient:
    """An AdminClient bootstrapped on broker `node_id` (librdkafka sends the admin requests to a
    broker it knows: with one bootstrap address and before Metadata names the others, that one)."""
    b = c.brokers[node_id]
    return AdminClient({"bootstrap.servers": f"{b.host}:{b.port}"})


def deny(rtype: ResourceType, name: str, op: AclOperation,
         pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, ANON, "*", op, AclPermissionType.DENY)


def described(admin: AdminClient, prefix: str) -> set[tuple[str, str]]:
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return {(a.name, a.operation.name) for a in admin.describe_acls(f).result(30) if a.name.startswith(prefix)}


def create_topic(admin: AdminClient, name: str) -> None:
    admin.create_topics([NewTopic(name, 1, 2)])[name].result(60)


def test_acls_made_through_one_broker_rule_every_broker_and_forwarded_requests(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    tag = uuid.uuid4().hex[:6]
    one, two = admin_of(c, 1), admin_of(c, 2)
    denied, allowed = f"denied-{tag}-", f"ok-{tag}"
    # an ACL on the cluster ends "allow if no ACL" there: ALL stays allowed (the brokers fetch from
    # each other as User:ANONYMOUS too, CLUSTER_ACTION), but CREATE is denied
    acls = [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANON, "*",
                       AclOperation.ALL, AclPermissionType.ALLOW),
            deny(ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE),
            deny(ResourceType.TOPIC, denied, AclOperation.CREATE, ResourcePatternType.PREFIXED),
            AclBinding(ResourceType.TOPIC, allowed, ResourcePatternType.LITERAL, ANON, "*", AclOperation.ALL,
                       AclPermissionType.ALLOW),
            deny(ResourceType.TOPIC, allowed, AclOperation.ALTER_CONFIGS)]
    for f in one.create_acls(acls).values():
        f.result(30)
    try:
        # broker 2 holds what broker 1 created: it came through the metadata log
        assert {("kafka-cluster", "ALL"), ("kafka-cluster", "CREATE"), (denied, "CREATE"), (allowed, "ALTER_CONFIGS")} <= (
            described(two, denied) | described(two, allowed) | described(two, "kafka-cluster"))
        # CreateTopics, forwarded by broker 2: the denied prefix is refused, the other created
        with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
            create_topic(two, denied + "x")
        create_topic(two, allowed)
        # IncrementalAlterConfigs on a topic without ALTER_CONFIGS: refused, nothing changed
        res = ConfigResource(ResourceType.TOPIC, allowed, incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
            two.incremental_alter_configs([res])[res].result(30)
        got = one.describe_configs([ConfigResource(ResourceType.TOPIC, allowed)])
        assert next(iter(got.values())).result(30)["retention.ms"].value != "1000"
    finally:
        deleted = two.delete_acls([AclBindingFilter(a.restype, a.name, a.resource_pattern_type, a.principal, a.host,
                                                    a.operation, a.permission_type) for a in acls])
        assert sum(len(f.result(30)) for f in deleted.values()) == 5
    # deleted through broker 2: gone on broker 1 once it has the controller's records (they reach
    # each broker through its own metadata fetch, as on Kafka), and the prefix may be created again
    poll(lambda: described(one, denied) == set(), "the deleted ACL gone on broker 1", 30)
    create_topic(one, denied + "y")


def test_scram_credentials_made_through_one_broker_are_every_brokers(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    user = f"u-{uuid.uuid4().hex[:6]}"
    one, two = admin_of(c, 1), admin_of(c, 2)
    up = [UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"secret"),
          UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"secret")]
    for u in up:  # one user once per request (twice is DUPLICATE_RESOURCE, as Kafka answers)
        one.alter_user_scram_credentials([u])[user].result(30)

    def mechanisms(admin: AdminClient) -> dict[str, int]:
        got = admin.describe_user_scram_credentials([user])[user].result(30)
        return {i.mechanism.name: i.iterations for i in got.scram_credential_infos}

    assert mechanisms(two) == {"SCRAM_SHA_256": 8192, "SCRAM_SHA_512": 4096}
    c.stop_broker(2)
    c.start_broker(2)
    assert mechanisms(admin_of(c, 2)) == {"SCRAM_SHA_256": 8192, "SCRAM_SHA_512": 4096}  # from the log
    # validation is the controller's, with Kafka's answers: too few iterations, nothing changed
    low = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"x")
    with pytest.raises(KafkaException, match="Too few iterations"):
        two.alter_user_scram_credentials([low])[user].result(30)
    gone = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)
    two.alter_user_scram_credentials([gone])[user].result(30)
    assert mechanisms(one) == {"SCRAM_SHA_256": 8192}


def test_client_quotas_made_through_one_broker_are_every_brokers(kafka_cluster: Cluster) -> None:
    """kafka-configs --entity-type users (AlterClientQuotas / DescribeClientQuotas): set through
    broker 1, described by broker 2, removed through broker 2."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    c = kafka_cluster
    user = f"q-{uuid.uuid4().hex[:6]}"

    def configs(node_id: int, *args: str) -> str:
        b = c.brokers[node_id]
        r = kr.run_tool("kafka-configs", ["--bootstrap-server", f"{b.host}:{b.port}", "--entity-type", "users",
                                          "--entity-name", user, *args], timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    configs(1, "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    assert "consumer_byte_rate=2048.0, producer_byte_rate=1024.0" in configs(2, "--describe")
    configs(2, "--alter", "--delete-config", "producer_byte_rate")
    out = configs(1, "--describe")
    assert "consumer_byte_rate=2048.0" in out and "producer_byte_rate" not in out


def test_acl_apis_need_alter_on_the_cluster_and_survive_a_broker_restart(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    tag = uuid.uuid4().hex[:6]
    one, two = admin_of(c, 1), admin_of(c, 2)
    keep = deny(ResourceType.GROUP, f"g-{tag}", AclOperation.READ)
    one.create_acls([keep])[keep].result(30)
    c.stop_broker(2)
    c.start_broker(2)
    two = admin_of(c, 2)
    assert described(two, f"g-{tag}") == {(f"g-{tag}", "READ")}  # replayed from the metadata log
    # without ALTER on the cluster, CreateAcls and DeleteAcls are refused by whichever broker gets
    # them (this DENY cannot be taken back by User:ANONYMOUS: the module's last test)
    everything = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANON, "*",
                            AclOperation.ALL, AclPermissionType.ALLOW)  # DESCRIBE, CLUSTER_ACTION stay allowed
    alter = deny(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER)
    for f in one.create_acls([everything, alter]).values():
        f.result(30)
    late = deny(ResourceType.GROUP, f"h-{tag}", AclOperation.READ)
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        two.create_acls([late])[late].result(30)
    gone = two.delete_acls([AclBindingFilter(ResourceType.GROUP, f"g-{tag}", ResourcePatternType.LITERAL, None,
                                             None, AclOperation.ANY, AclPermissionType.ANY)])
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        next(iter(gone.values())).result(30)
    assert described(one, f"h-{tag}") == set()
    assert described(one, f"g-{tag}") == {(f"g-{tag}", "READ")}
    # UnregisterController (API 94, forwarded) needs ALTER on the cluster too (Kafka's ControllerApis):
    # refused before the controller is asked (which would answer CONTROLLER_ID_NOT_REGISTERED for 99)
    b = c.brokers[2]
    with RawClient(f"{b.host}:{b.port}") as raw:
        resp = raw.call(unregister_controller.API, 0, unregister_controller.REQUEST(controller_id=99))
    assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
