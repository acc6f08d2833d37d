"""ACLs, SCRAM credentials, client quotas and delegation tokens on a cluster (issues 29, 35):
created through one broker, they are records of the metadata log (AccessControlEntryRecord,
UserScramCredentialRecord, ClientQuotaRecord, DelegationTokenRecord), so every broker decides on them; and the requests a broker forwards to the
controller (CreateTopics, IncrementalAlterConfigs, CreateAcls...) are checked against the ACLs as
Kafka's controller checks them. The clients are confluent-kafka's AdminClient and kafka-configs,
each bootstrapped on one broker."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import socket
import uuid
from pathlib import Path

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

from minibroker.cluster_control import read_node_properties
from minibroker.cluster_launcher import NODE_PROPERTIES, write_properties
from minibroker.cluster_testing import poll
from minibroker.testing import SCRAM_JAAS, Cluster
from minibroker_protocol.apis import (
    create_delegation_token,
    describe_delegation_token,
    expire_delegation_token,
    renew_delegation_token,
    unregister_controller,
)
from minibroker_protocol.errors import ErrorCode
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient
from tests.reference.helpers import sasl_plain_client
from tests.reference.token_helpers import created, plain_config, token_login, tokens_tool

# Every client here is User:ANONYMOUS (PLAINTEXT); with no ACL on a resource everyone may use it,
# so the cluster works as usual until the test denies something. Delegation tokens need SASL: the
# token test gives each broker a SASL_PLAINTEXT listener too (a restart: the launcher's overrides are
# every node's, a listener's port is one broker's), with PLAIN users and the same secret key on
# every node, the controller included (Kafka requires it).
TOKEN_SECRET = "cluster-token-secret"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-pw" user_alice="alice-pw" user_bob="bob-pw";')
pytestmark = pytest.mark.minibroker_cluster(brokers=2, overrides={
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "delegation.token.secret.key": TOKEN_SECRET,
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS})

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


def _with_sasl_listener(c: Cluster, node_id: int) -> str:
    """Restart broker `node_id` with a SASL_PLAINTEXT listener beside its PLAINTEXT one (kept
    first: the inter-broker listener and the one cluster.json names); its host:port."""
    path = c.root / f"broker-{node_id}" / NODE_PROPERTIES
    props = read_node_properties(path)
    if "SASL_PLAINTEXT://" not in props["listeners"]:
        with socket.socket() as s:
            s.bind((c.host, 0))
            port = s.getsockname()[1]
        props["listeners"] += f",SASL_PLAINTEXT://{c.host}:{port}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props["inter.broker.listener.name"] = "PLAINTEXT"
        write_properties(path, {k: str(v) for k, v in props.items()}, f"broker {node_id}, with a SASL listener")
        c.stop_broker(node_id)
        c.start_broker(node_id)
    return str(props["listeners"]).split(",")[-1].rpartition("//")[2]


def _logs_in(bootstrap: str, token_id: str, mac: bytes) -> bool:
    try:
        token_login(bootstrap, token_id, mac).close()
    except AssertionError:  # SaslAuthenticate answered SASL_AUTHENTICATION_FAILED
        return False
    return True


def test_a_token_made_through_one_broker_logs_in_on_every_broker(kafka_cluster: Cluster, tmp_path: Path) -> None:
    """Create/Renew/Expire go to the controller in an Envelope with the client's principal; it
    writes DelegationTokenRecords, every broker's token cache is built from them (Kafka:
    DelegationTokenControlManager, DelegationTokenPublisher)."""
    c = kafka_cluster
    sasl = {n: _with_sasl_listener(c, n) for n in (1, 2)}
    # Kafka's tool (its admin client picks a broker), as alice over SASL PLAIN
    config = plain_config(tmp_path / "alice.properties", "alice", "alice-pw")
    code, out = tokens_tool(sasl[1], config, "--create", "--max-life-time-period", "-1")
    assert code == 0, out
    tool_id, tool_hmac = created(out)
    tool_mac = base64.b64decode(tool_hmac)
    assert tool_mac == hmac.new(TOKEN_SECRET.encode(), tool_id.encode(), hashlib.sha512).digest()
    for address in sasl.values():  # a token works on both brokers, whichever created it
        assert poll(functools.partial(_logs_in, address, tool_id, tool_mac), f"the tool's token on {address}", 30)

    # raw requests, so the broker each one goes through is known
    alice = {n: sasl_plain_client(sasl[n], "alice", "alice-pw", client_id="dt") for n in (1, 2)}
    bob = sasl_plain_client(sasl[2], "bob", "bob-pw", client_id="dt")
    R = create_delegation_token.REQUEST
    made = alice[1].call(create_delegation_token.API, 3, R(owner_principal_type=None, owner_principal_name=None,
                                                           renewers=[], max_lifetime_ms=-1))
    assert made.error_code == 0 and (made.principal_name, made.token_requester_principal_name) == ("alice", "alice")
    token_id, mac = made.token_id, made.hmac
    # the answer waited for broker 1's image; broker 2 has it once it fetched the record
    assert _logs_in(sasl[1], token_id, mac)
    assert poll(lambda: _logs_in(sasl[2], token_id, mac), "the token on broker 2", 30)
    described = alice[2].call(describe_delegation_token.API, 3, describe_delegation_token.REQUEST(owners=None))
    mine = [t for t in described.tokens if t.token_id == token_id]
    code, out = tokens_tool(sasl[2], config, "--describe", "--owner-principal", "User:alice")
    assert code == 0 and tool_id in out and token_id in out and tool_hmac in out, out
    assert [(t.hmac, t.expiry_timestamp, t.max_timestamp) for t in mine] == [
        (mac, made.expiry_timestamp_ms, made.max_timestamp_ms)]
    # renew through broker 2: decided by the controller (bob is no renewer: Kafka's code)
    renew = renew_delegation_token.REQUEST
    assert bob.call(renew_delegation_token.API, 2, renew(hmac=mac, renew_period_ms=-1)).error_code == \
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    renewed = alice[2].call(renew_delegation_token.API, 2, renew(hmac=mac, renew_period_ms=60_000))
    assert renewed.error_code == 0 and made.issue_timestamp_ms < renewed.expiry_timestamp_ms < made.expiry_timestamp_ms

    def expiry_on_1() -> int | None:
        d = alice[1].call(describe_delegation_token.API, 3, describe_delegation_token.REQUEST(owners=None))
        got = [t.expiry_timestamp for t in d.tokens if t.token_id == token_id]
        return got[0] if got == [renewed.expiry_timestamp_ms] else None
    poll(expiry_on_1, "the renewal seen by broker 1", 30)
    # expire through broker 2 (at once): no broker accepts the token any more
    gone = alice[2].call(expire_delegation_token.API, 2,
                         expire_delegation_token.REQUEST(hmac=mac, expiry_time_period_ms=-1))
    assert gone.error_code == 0
    assert not _logs_in(sasl[2], token_id, mac)
    poll(lambda: not _logs_in(sasl[1], token_id, mac), "the expired token refused by broker 1", 30)
    assert alice[1].call(renew_delegation_token.API, 2, renew(hmac=mac, renew_period_ms=-1)).error_code == \
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    # the tool's token, expired by the tool through broker 2, is refused on broker 1 too
    code, out = tokens_tool(sasl[2], config, "--expire", "--hmac", tool_hmac, "--expiry-time-period", "-1")
    assert code == 0, out
    poll(lambda: not _logs_in(sasl[1], tool_id, tool_mac), "the tool's expired token refused by broker 1", 30)
    for client in (*alice.values(), bob):
        client.close()


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
