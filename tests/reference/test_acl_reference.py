"""ACLs on Apache Kafka and minibroker configured the same way (StandardAuthorizer, PLAIN users
over SASL_PLAINTEXT, `super.users`): Kafka's own `kafka-acls` adds, lists and removes ACLs with the
same output on both, and confluent-kafka clients get the same outcomes (allowed, or Kafka's
authorization error) per API family."""

from __future__ import annotations

import gc
import re
import time
import uuid
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


# ---------------------------------------------------------------------------------------------
# Every other API family, raw: the same requests as user bob (over SASL PLAIN) on both brokers,
# the answers reduced to what authorization decides (error codes and messages, which resources
# are listed) and compared. Runs after the tests above (whose last step expects no ACLs left).

# the fields an authorization decision shows in (names identify the rows being compared)
_KEEP = frozenset({"error_code", "error_message", "name", "topic", "topic_name", "group_id", "transactional_id",
                   "partition_index", "partition", "resource_type", "resource_name", "user",
                   "acknowledge_error_code", "partition_error_code", "transaction_state", "committed_offset",
                   "entity_type", "entity_name"})


def _decisions(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _decisions(x) for k, x in v.items()
                if k in _KEEP or isinstance(x, dict) or (isinstance(x, list) and all(isinstance(y, dict) for y in x))}
    if isinstance(v, list):
        return [_decisions(x) for x in v]
    return v


def _raw_steps(topic_ids: dict[str, Any]) -> list[tuple[str, Any, int, Any]]:
    """(label, api, version, request) for each API family, as bob: READ/WRITE/DESCRIBE_CONFIGS on
    topic acl2-a, READ on group acl2-g, DELETE on group acl2-d, WRITE on transactional id acl2-t,
    DESCRIBE on acl2-u; nothing on topic acl2-b, group acl2-h, transactional id acl2-w and the
    cluster."""
    from minibroker_protocol.apis import (
        add_offsets_to_txn as aot,
    )
    from minibroker_protocol.apis import (
        add_partitions_to_txn as apt,
    )
    from minibroker_protocol.apis import (
        alter_client_quotas as acq,
    )
    from minibroker_protocol.apis import (
        alter_configs as ac,
    )
    from minibroker_protocol.apis import (
        alter_share_group_offsets as asgo,
    )
    from minibroker_protocol.apis import (
        alter_user_scram_credentials as ausc,
    )
    from minibroker_protocol.apis import (
        consumer_group_describe as cgd,
    )
    from minibroker_protocol.apis import (
        consumer_group_heartbeat as cgh,
    )
    from minibroker_protocol.apis import (
        create_partitions as cp,
    )
    from minibroker_protocol.apis import (
        delete_groups as dg,
    )
    from minibroker_protocol.apis import (
        delete_records as dr,
    )
    from minibroker_protocol.apis import (
        delete_share_group_offsets as dsgo,
    )
    from minibroker_protocol.apis import (
        describe_client_quotas as dcq,
    )
    from minibroker_protocol.apis import (
        describe_configs as dc,
    )
    from minibroker_protocol.apis import (
        describe_groups as dgr,
    )
    from minibroker_protocol.apis import (
        describe_log_dirs as dld,
    )
    from minibroker_protocol.apis import (
        describe_producers as dp,
    )
    from minibroker_protocol.apis import (
        describe_share_group_offsets as dsg,
    )
    from minibroker_protocol.apis import (
        describe_topic_partitions as dtp,
    )
    from minibroker_protocol.apis import (
        describe_transactions as dt,
    )
    from minibroker_protocol.apis import (
        describe_user_scram_credentials as dusc,
    )
    from minibroker_protocol.apis import (
        end_txn as et,
    )
    from minibroker_protocol.apis import (
        incremental_alter_configs as iac,
    )
    from minibroker_protocol.apis import (
        list_groups as lg,
    )
    from minibroker_protocol.apis import (
        list_transactions as lt,
    )
    from minibroker_protocol.apis import (
        offset_delete as od,
    )
    from minibroker_protocol.apis import (
        offset_fetch as of,
    )
    from minibroker_protocol.apis import (
        offset_for_leader_epoch as ole,
    )
    from minibroker_protocol.apis import (
        share_acknowledge as sa,
    )
    from minibroker_protocol.apis import (
        share_fetch as sf,
    )
    from minibroker_protocol.apis import (
        share_group_describe as sgd,
    )
    from minibroker_protocol.apis import (
        share_group_heartbeat as sgh,
    )
    from minibroker_protocol.apis import (
        txn_offset_commit as toc,
    )

    TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
    DCR, IAR, ACR = dc.REQUEST.DescribeConfigsResource, iac.REQUEST.AlterConfigsResource, ac.REQUEST.AlterConfigsResource
    both = ("acl2-a", "acl2-b")
    a_id = topic_ids["acl2-a"]
    return [
        # configs: DESCRIBE_CONFIGS / ALTER_CONFIGS on topic, group, cluster (BROKER, BROKER_LOGGER)
        ("DescribeConfigs", dc.API, 4, dc.REQUEST(resources=[
            DCR(resource_type=TOPIC, resource_name="acl2-a", configuration_keys=["cleanup.policy"]),
            DCR(resource_type=TOPIC, resource_name="acl2-b", configuration_keys=None),
            DCR(resource_type=GROUP, resource_name="acl2-g", configuration_keys=None),
            DCR(resource_type=BROKER, resource_name="", configuration_keys=None),
            DCR(resource_type=BROKER_LOGGER, resource_name="1", configuration_keys=None)],
            include_synonyms=False, include_documentation=False)),
        ("IncrementalAlterConfigs", iac.API, 1, iac.REQUEST(validate_only=True, resources=[
            IAR(resource_type=TOPIC, resource_name="acl2-a", configs=[
                iac.REQUEST.AlterableConfig(name="retention.ms", config_operation=0, value="100000")]),
            IAR(resource_type=GROUP, resource_name="acl2-g", configs=[
                iac.REQUEST.AlterableConfig(name="consumer.session.timeout.ms", config_operation=0, value="50000")]),
            IAR(resource_type=BROKER, resource_name="", configs=[
                iac.REQUEST.AlterableConfig(name="log.retention.ms", config_operation=0, value="100000")]),
            IAR(resource_type=BROKER_LOGGER, resource_name="1", configs=[
                iac.REQUEST.AlterableConfig(name="kafka", config_operation=0, value="DEBUG")])])),
        # a BROKER change is validated on the broker before the controller authorizes it
        ("IncrementalAlterConfigs, invalid broker value", iac.API, 1, iac.REQUEST(validate_only=True, resources=[
            IAR(resource_type=BROKER, resource_name="", configs=[
                iac.REQUEST.AlterableConfig(name="log.retention.ms", config_operation=0, value="soon")])])),
        ("AlterConfigs", ac.API, 2, ac.REQUEST(validate_only=True, resources=[
            ACR(resource_type=TOPIC, resource_name="acl2-b", configs=[
                ac.REQUEST.AlterableConfig(name="retention.ms", value="100000")])])),
        # transactions
        ("AddPartitionsToTxn v3, txn id refused", apt.API, 3, apt.REQUEST(
            v3_and_below_transactional_id="acl2-u", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
            v3_and_below_topics=[apt.REQUEST.AddPartitionsToTxnTopic(name="acl2-a", partitions=[0])])),
        ("AddPartitionsToTxn v3, topic refused", apt.API, 3, apt.REQUEST(
            v3_and_below_transactional_id="acl2-t", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
            v3_and_below_topics=[apt.REQUEST.AddPartitionsToTxnTopic(name=t, partitions=[0]) for t in both])),
        ("AddPartitionsToTxn v5 (brokers only)", apt.API, 5, apt.REQUEST(transactions=[
            apt.REQUEST.AddPartitionsToTxnTransaction(
                transactional_id="acl2-t", producer_id=1, producer_epoch=0, verify_only=True,
                topics=[apt.REQUEST.AddPartitionsToTxnTopic(name="acl2-a", partitions=[0])])])),
        ("AddOffsetsToTxn, txn id refused", aot.API, 4, aot.REQUEST(
            transactional_id="acl2-u", producer_id=1, producer_epoch=0, group_id="acl2-g")),
        ("AddOffsetsToTxn, group refused", aot.API, 4, aot.REQUEST(
            transactional_id="acl2-t", producer_id=1, producer_epoch=0, group_id="acl2-h")),
        ("EndTxn", et.API, 4, et.REQUEST(transactional_id="acl2-u", producer_id=1, producer_epoch=0,
                                         committed=True)),
        ("TxnOffsetCommit, group refused", toc.API, 4, toc.REQUEST(
            transactional_id="acl2-t", group_id="acl2-h", producer_id=1, producer_epoch=0, generation_id_or_member_epoch=-1,
            member_id="", group_instance_id=None, topics=[toc.REQUEST.TxnOffsetCommitRequestTopic(
                name="acl2-a", partitions=[toc.REQUEST.TxnOffsetCommitRequestPartition(
                    partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")])])),
        ("TxnOffsetCommit, topic refused", toc.API, 4, toc.REQUEST(
            transactional_id="acl2-t", group_id="acl2-g", producer_id=1, producer_epoch=0, generation_id_or_member_epoch=-1,
            member_id="", group_instance_id=None, topics=[toc.REQUEST.TxnOffsetCommitRequestTopic(
                name="acl2-b", partitions=[toc.REQUEST.TxnOffsetCommitRequestPartition(
                    partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")])])),
        ("DescribeTransactions", dt.API, 0, dt.REQUEST(transactional_ids=["acl2-t", "acl2-w"])),
        ("ListTransactions", lt.API, 1, lt.REQUEST(state_filters=[], producer_id_filters=[], duration_filter=-1)),
        ("DescribeProducers", dp.API, 0, dp.REQUEST(topics=[
            dp.REQUEST.TopicRequest(name=t, partition_indexes=[0]) for t in both])),
        # groups
        ("DescribeGroups", dgr.API, 5, dgr.REQUEST(groups=["acl2-g", "acl2-h"], include_authorized_operations=False)),
        ("ListGroups", lg.API, 4, lg.REQUEST(states_filter=[])),
        ("DeleteGroups", dg.API, 2, dg.REQUEST(groups_names=["acl2-d", "acl2-g", "acl2-h"])),
        ("OffsetDelete, group refused", od.API, 0, od.REQUEST(group_id="acl2-h", topics=[
            od.REQUEST.OffsetDeleteRequestTopic(name="acl2-a", partitions=[
                od.REQUEST.OffsetDeleteRequestPartition(partition_index=0)])])),
        ("OffsetFetch v8 by name", of.API, 8, of.REQUEST(require_stable=False, groups=[
            of.REQUEST.OffsetFetchRequestGroup(group_id="acl2-g", topics=[
                of.REQUEST.OffsetFetchRequestTopics(name=t, partition_indexes=[0]) for t in both]),
            of.REQUEST.OffsetFetchRequestGroup(group_id="acl2-h", topics=None)])),
        ("OffsetFetch v8 all topics", of.API, 8, of.REQUEST(require_stable=False, groups=[
            of.REQUEST.OffsetFetchRequestGroup(group_id="acl2-g", topics=None)])),
        ("OffsetFetch v10 by id", of.API, 10, of.REQUEST(require_stable=False, groups=[
            of.REQUEST.OffsetFetchRequestGroup(group_id="acl2-g", member_id=None, member_epoch=-1, topics=[
                of.REQUEST.OffsetFetchRequestTopics(topic_id=topic_ids[t], partition_indexes=[0]) for t in both])])),
        ("OffsetFetch v1 by name", of.API, 1, of.REQUEST(group_id="acl2-g", topics=[
            of.REQUEST.OffsetFetchRequestTopic(name=t, partition_indexes=[0]) for t in both])),
        ("OffsetFetch v5 by name", of.API, 5, of.REQUEST(group_id="acl2-g", topics=[
            of.REQUEST.OffsetFetchRequestTopic(name=t, partition_indexes=[0]) for t in both])),
        ("ConsumerGroupHeartbeat, group refused", cgh.API, 1, cgh.REQUEST(
            group_id="acl2-h", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30000,
            subscribed_topic_names=["acl2-a"], topic_partitions=[])),
        ("ConsumerGroupHeartbeat, topic refused", cgh.API, 1, cgh.REQUEST(
            group_id="acl2-c", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30000,
            subscribed_topic_names=["acl2-a", "acl2-b"], topic_partitions=[])),
        ("ConsumerGroupDescribe", cgd.API, 1, cgd.REQUEST(group_ids=["acl2-h"], include_authorized_operations=False)),
        # topics and the cluster
        ("DeleteRecords", dr.API, 2, dr.REQUEST(timeout_ms=5000, topics=[
            dr.REQUEST.DeleteRecordsTopic(name="acl2-a", partitions=[
                dr.REQUEST.DeleteRecordsPartition(partition_index=0, offset=0)])])),
        ("CreatePartitions", cp.API, 3, cp.REQUEST(timeout_ms=5000, validate_only=True, topics=[
            cp.REQUEST.CreatePartitionsTopic(name=t, count=2, assignments=None) for t in (*both, "acl2-none")])),
        ("DescribeLogDirs", dld.API, 4, dld.REQUEST(topics=None)),
        ("OffsetForLeaderEpoch", ole.API, 4, ole.REQUEST(replica_id=-1, topics=[
            ole.REQUEST.OffsetForLeaderTopic(topic=t, partitions=[ole.REQUEST.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=-1, leader_epoch=0)]) for t in both])),
        ("DescribeTopicPartitions", dtp.API, 0, dtp.REQUEST(
            topics=[dtp.REQUEST.TopicRequest(name=t) for t in both], response_partition_limit=100, cursor=None)),
        ("DescribeUserScramCredentials", dusc.API, 0, dusc.REQUEST(users=[dusc.REQUEST.UserName(name="bob")])),
        ("AlterUserScramCredentials", ausc.API, 0, ausc.REQUEST(upsertions=[], deletions=[
            ausc.REQUEST.ScramCredentialDeletion(name="bob", mechanism=1)])),
        ("DescribeClientQuotas", dcq.API, 1, dcq.REQUEST(components=[], strict=False)),
        ("AlterClientQuotas", acq.API, 1, acq.REQUEST(validate_only=True, entries=[acq.REQUEST.EntryData(
            entity=[acq.REQUEST.EntityData(entity_type="user", entity_name="bob")],
            ops=[acq.REQUEST.OpData(key="producer_byte_rate", value=1000.0, remove=False)])])),
        # share groups
        ("ShareGroupHeartbeat, group refused", sgh.API, 1, sgh.REQUEST(
            group_id="acl2-h", member_id="AAAAAAAAAAAAAAAAAAAAAA", member_epoch=0, rack_id=None,
            subscribed_topic_names=["acl2-a"])),
        ("ShareGroupHeartbeat, topic refused", sgh.API, 1, sgh.REQUEST(
            group_id="acl2-s", member_id="AAAAAAAAAAAAAAAAAAAAAA", member_epoch=0, rack_id=None,
            subscribed_topic_names=["acl2-b"])),
        ("ShareGroupDescribe", sgd.API, 1, sgd.REQUEST(group_ids=["acl2-h"], include_authorized_operations=False)),
        ("ShareFetch", sf.API, 1, sf.REQUEST(
            group_id="acl2-h", member_id="AAAAAAAAAAAAAAAAAAAAAA", share_session_epoch=0, max_wait_ms=0,
            min_bytes=1, max_bytes=1024, max_records=10, batch_size=10, topics=[sf.REQUEST.FetchTopic(
                topic_id=a_id, partitions=[sf.REQUEST.FetchPartition(partition_index=0, acknowledgement_batches=[])])],
            forgotten_topics_data=[])),
        ("ShareAcknowledge", sa.API, 1, sa.REQUEST(
            group_id="acl2-h", member_id="AAAAAAAAAAAAAAAAAAAAAA", share_session_epoch=1, topics=[])),
        ("ShareGroupHeartbeat, joins", sgh.API, 1, sgh.REQUEST(
            group_id="acl2-s", member_id="AAAAAAAAAAAAAAAAAAAAAA", member_epoch=0, rack_id=None,
            subscribed_topic_names=["acl2-a"])),
        ("DescribeShareGroupOffsets", dsg.API, 0, dsg.REQUEST(groups=[
            dsg.REQUEST.DescribeShareGroupOffsetsRequestGroup(group_id="acl2-h", topics=None),
            dsg.REQUEST.DescribeShareGroupOffsetsRequestGroup(group_id="acl2-s", topics=[
                dsg.REQUEST.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=[0]) for t in both])])),
        ("AlterShareGroupOffsets", asgo.API, 0, asgo.REQUEST(group_id="acl2-h", topics=[
            asgo.REQUEST.AlterShareGroupOffsetsRequestTopic(topic_name="acl2-a", partitions=[
                asgo.REQUEST.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])])),
        ("DeleteShareGroupOffsets", dsgo.API, 0, dsgo.REQUEST(group_id="acl2-g", topics=[
            dsgo.REQUEST.DeleteShareGroupOffsetsRequestTopic(topic_name="acl2-b")])),
    ]


_KEEP_OPEN: list[Any] = []  # producers whose transactions must stay open for the module
_COORDINATOR_NOT_READY = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                          KafkaError.COORDINATOR_NOT_AVAILABLE)


def _setup_raw(plain: str) -> dict[str, Any]:
    """Topics, groups with committed offsets, two transactional ids and bob's ACLs, as the super
    user; the topic ids, for the share-group requests that name topics by id."""
    from confluent_kafka import TopicCollection, TopicPartition

    def acl(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:bob", "*", op, AclPermissionType.ALLOW)

    admin = AdminClient({"bootstrap.servers": plain})
    for f in admin.create_topics([NewTopic(t, 1) for t in ("acl2-a", "acl2-b")]).values():
        f.result()
    for group in ("acl2-g", "acl2-h", "acl2-d"):
        c = Consumer({"bootstrap.servers": plain, "group.id": group, "enable.auto.commit": False})
        try:
            deadline = time.monotonic() + 15
            while True:  # Kafka's coordinator may still be loading the new __consumer_offsets
                try:
                    c.commit(offsets=[TopicPartition(t, 0, 0) for t in ("acl2-a", "acl2-b")], asynchronous=False)
                    break
                except KafkaException as e:
                    if e.args[0].code() not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            c.close()
    for tid in ("acl2-w", "acl2-t", "acl2-u"):
        # a long timeout: the open transaction must outlive the module's other tests
        p = Producer({"bootstrap.servers": plain, "transactional.id": tid, "transaction.timeout.ms": 600000})
        p.init_transactions(15)
    # acl2-u stays open over both topics (DescribeTransactions shows bob acl2-a only)
    p.begin_transaction()
    for t in ("acl2-a", "acl2-b"):
        p.produce(t, b"v")
    p.flush(10)
    _KEEP_OPEN.append(p)
    for f in admin.create_acls([
        acl(ResourceType.TOPIC, "acl2-a", AclOperation.READ), acl(ResourceType.TOPIC, "acl2-a", AclOperation.WRITE),
        acl(ResourceType.TOPIC, "acl2-a", AclOperation.DESCRIBE_CONFIGS),
        acl(ResourceType.GROUP, "acl2-g", AclOperation.READ), acl(ResourceType.GROUP, "acl2-c", AclOperation.READ),
        acl(ResourceType.GROUP, "acl2-s", AclOperation.READ), acl(ResourceType.GROUP, "acl2-d", AclOperation.DELETE),
        acl(ResourceType.GROUP, "acl2-k", AclOperation.READ), acl(ResourceType.GROUP, "acl2-r", AclOperation.READ),
        acl(ResourceType.GROUP, "acl2-v", AclOperation.READ),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        acl(ResourceType.TRANSACTIONAL_ID, "acl2-u", AclOperation.DESCRIBE),
        acl(ResourceType.TRANSACTIONAL_ID, "acl2-t", AclOperation.WRITE),
    ]).values():
        f.result()
    md = admin.describe_topics(TopicCollection(["acl2-a", "acl2-b"]))
    mask = (1 << 64) - 1
    return {name: uuid.UUID(int=((tid.get_most_significant_bits() & mask) << 64)
                            | (tid.get_least_significant_bits() & mask))
            for name, f in md.items() for tid in [f.result().topic_id]}


@pytest.fixture(scope="module")
def bob_setup(brokers: dict[str, tuple[str, str]]) -> Iterator[dict[str, dict[str, Any]]]:
    """Each broker's topic ids once `_setup_raw` made the resources and bob's ACLs there, and bob's
    ACLs are in force (Kafka applies them from its metadata log a moment after CreateAcls)."""
    from minibroker_protocol.apis import describe_configs as dc
    from tests.reference.helpers import sasl_plain_client

    probe = dc.REQUEST(resources=[dc.REQUEST.DescribeConfigsResource(resource_type=2, resource_name="acl2-a",
                                                                     configuration_keys=["cleanup.policy"])],
                       include_synonyms=False, include_documentation=False)
    out = {}
    for name, (plain, sasl) in brokers.items():
        out[name] = _setup_raw(plain)
        with sasl_plain_client(sasl, "bob", "bob-secret") as c:
            deadline = time.monotonic() + 10
            while c.call(dc.API, 4, probe).results[0].error_code and time.monotonic() < deadline:
                time.sleep(0.1)
    yield out
    for p in _KEEP_OPEN:  # before the brokers stop, or librdkafka retries them until collected
        p.abort_transaction(10)
    _KEEP_OPEN.clear()
    gc.collect()


def test_every_api_family_decides_as_kafka(brokers: dict[str, tuple[str, str]],
                                           bob_setup: dict[str, dict[str, Any]]) -> None:
    from tests.reference.differential import differences, normalise
    from tests.reference.helpers import sasl_plain_client

    seen: dict[str, dict[str, Any]] = {}
    for name, (_plain, sasl) in brokers.items():
        with sasl_plain_client(sasl, "bob", "bob-secret") as c:
            seen[name] = {label: _decisions(c.call(api, v, body).to_dict())
                          for label, api, v, body in _raw_steps(bob_setup[name])}
        # Kafka assigns a new share member's partitions a heartbeat later, minibroker at once
        seen[name]["ShareGroupHeartbeat, joins"].pop("assignment", None)
        # Kafka's controller names its internal request object in this text: compare the shape
        for r in seen[name]["AlterUserScramCredentials"]["results"]:
            r["error_message"] = re.sub(r"^Request .* needs ALTER permission\.$", "Request <request> needs ALTER "
                                        "permission.", r["error_message"] or "")
    diffs = [f"{label}{d}" for label in seen["kafka"]
             for d in differences(normalise(seen["kafka"][label]), normalise(seen["minibroker"][label]))]
    assert not diffs, "minibroker decides differently from Kafka:\n  " + "\n  ".join(diffs)
    # the test would pass if neither broker checked anything: make sure Kafka did
    k = seen["kafka"]
    assert k["DescribeLogDirs"]["error_code"] == 31 and k["EndTxn"]["error_code"] == 53
    assert [g["group_id"] for g in k["ListGroups"]["groups"] if g["group_id"] == "acl2-h"] == []
    assert sorted(t["transactional_id"] for t in k["ListTransactions"]["transaction_states"]
                  if t["transactional_id"].startswith("acl2-")) == ["acl2-t", "acl2-u"]  # not acl2-w


def test_kafka_tools_as_a_restricted_user(brokers: dict[str, tuple[str, str]], bob_setup: dict[str, dict[str, Any]],
                                          tmp_path: Any) -> None:
    """Kafka's own kafka-consumer-groups and kafka-configs, logged in as bob, see the same on both."""
    conf = tmp_path / "bob.properties"
    conf.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    'username="bob" password="bob-secret";\n')

    def steps(sasl: str) -> list[str]:
        common = ["--bootstrap-server", sasl, "--command-config", str(conf)]
        configs = [*common, "--describe", "--entity-type"]
        runs = [kr.run_tool("kafka-consumer-groups", [*common, "--list"]),
                # every topic: Metadata shows bob acl2-a only, and DescribeConfigs answers for it
                kr.run_tool("kafka-configs", [*configs, "topics"]),
                kr.run_tool("kafka-configs", [*configs, "groups", "--entity-name", "acl2-g"])]
        listed = " ".join(sorted(g for g in runs[0].stdout.split() if g.startswith("acl2-")))
        topics = " ".join(line.strip() for line in runs[1].stdout.splitlines() if "acl2-" in line)
        # the first line naming an exception: the refusal as the Java admin client reports it
        refused = [line.strip() for line in runs[2].stderr.splitlines() if "Exception" in line][:1]
        return [listed, topics, runs[2].stdout.strip(), *refused]

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(steps, sasl) for name, (_plain, sasl) in brokers.items()}
        out = {name: f.result() for name, f in futures.items()}
    assert out["minibroker"] == out["kafka"]
    assert "acl2-g" in out["kafka"][0] and "acl2-h" not in out["kafka"][0]
    assert "acl2-a" in out["kafka"][1] and "acl2-b" not in out["kafka"][1]
    assert "GroupAuthorizationException" in out["kafka"][3]


def _heartbeat_until_assigned(c: Any, group: str, member: str, *, names: list[str] | None = None,
                              regex: str | None = None) -> tuple[int, list[Any]]:
    """KIP-848 heartbeats until the coordinator assigns something (Kafka resolves a regex in the
    background): (member epoch, assigned topic ids)."""
    from minibroker_protocol.apis import consumer_group_heartbeat as cgh

    epoch, deadline = 0, time.monotonic() + 15
    while True:
        r = c.call(cgh.API, 1, cgh.REQUEST(
            group_id=group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000,
            subscribed_topic_names=names if epoch == 0 else None, subscribed_topic_regex=regex if epoch == 0 else None,
            topic_partitions=[] if epoch == 0 else None))
        assert r.error_code == 0, r
        epoch = r.member_epoch
        if r.assignment is not None and r.assignment.topic_partitions:
            return epoch, [tp.topic_id for tp in r.assignment.topic_partitions]
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.2)


def test_assignments_and_transactions_hide_topics_as_kafka(brokers: dict[str, tuple[str, str]],
                                                           bob_setup: dict[str, dict[str, Any]]) -> None:
    """A regex subscription gets only the topics bob may DESCRIBE; ConsumerGroupDescribe refuses a
    group assigned a topic bob may not DESCRIBE; DescribeTransactions leaves that topic out;
    ShareFetch and ShareAcknowledge refuse that topic's partitions and serve the others."""
    from minibroker_protocol.apis import consumer_group_describe as cgd
    from minibroker_protocol.apis import describe_transactions as dt
    from minibroker_protocol.apis import list_groups as lg
    from tests.integration.helpers import RawClient
    from tests.reference.helpers import sasl_plain_client

    seen: dict[str, Any] = {}
    for name, (plain, sasl) in brokers.items():
        ids = {v: k for k, v in bob_setup[name].items()}
        with RawClient(plain) as admin, sasl_plain_client(sasl, "bob", "bob-secret") as bob:
            _heartbeat_until_assigned(admin, "acl2-k", "admin-member-1", names=["acl2-a", "acl2-b"])
            _, regex_topics = _heartbeat_until_assigned(bob, "acl2-r", "bob-member-1", regex="acl2-.*")
            described = bob.call(cgd.API, 1, cgd.REQUEST(group_ids=["acl2-k"], include_authorized_operations=False))
            txn = bob.call(dt.API, 0, dt.REQUEST(transactional_ids=["acl2-u"]))
            fetched, acked = _share_fetch_and_ack(bob, bob_setup[name])
        with sasl_plain_client(sasl, "alice", "alice-secret") as alice:  # DESCRIBE on the cluster: every group
            listed = alice.call(lg.API, 4, lg.REQUEST(states_filter=[]))
        seen[name] = {
            "ListGroups with DESCRIBE on the cluster": sorted(
                g.group_id for g in listed.groups if g.group_id in ("acl2-g", "acl2-h", "acl2-k")),
            "ShareFetch errors": sorted((ids[t.topic_id], p.partition_index, p.error_code)
                                        for t in fetched.responses for p in t.partitions if p.error_code),
            "ShareAcknowledge errors": [acked.error_code] + sorted(
                (ids[t.topic_id], p.partition_index, p.error_code) for t in acked.responses for p in t.partitions),
            "regex assignment": sorted(ids.get(t, "?") for t in regex_topics),
            "ConsumerGroupDescribe": _decisions(described.to_dict()),
            "DescribeTransactions": _decisions(txn.to_dict()),
        }
    assert seen["minibroker"] == seen["kafka"]
    assert seen["kafka"]["regex assignment"] == ["acl2-a"]
    assert seen["kafka"]["ListGroups with DESCRIBE on the cluster"] == ["acl2-g", "acl2-h", "acl2-k"]
    assert seen["kafka"]["ShareFetch errors"] == [("acl2-b", 0, 29)]
    assert seen["kafka"]["ShareAcknowledge errors"] == [0, ("acl2-b", 0, 29)]
    assert seen["kafka"]["ConsumerGroupDescribe"]["groups"][0]["error_code"] == 29
    assert [t["topic"] for t in seen["kafka"]["DescribeTransactions"]["transaction_states"][0]["topics"]] == [
        "acl2-a"]


def _share_fetch_and_ack(bob: Any, topic_ids: dict[str, Any]) -> tuple[Any, Any]:
    """bob joins share group acl2-v, fetches acl2-a and acl2-b (READ on acl2-a only) and
    acknowledges an offset of acl2-b."""
    from minibroker_protocol.apis import share_acknowledge as sa
    from minibroker_protocol.apis import share_fetch as sf
    from minibroker_protocol.apis import share_group_heartbeat as sgh

    member = "BBBBBBBBBBBBBBBBBBBBBB"
    joined = bob.call(sgh.API, 1, sgh.REQUEST(group_id="acl2-v", member_id=member, member_epoch=0, rack_id=None,
                                             subscribed_topic_names=["acl2-a"]))
    assert joined.error_code == 0, joined
    fetched = bob.call(sf.API, 1, sf.REQUEST(
        group_id="acl2-v", member_id=member, share_session_epoch=0, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        max_records=10, batch_size=10, forgotten_topics_data=[], topics=[sf.REQUEST.FetchTopic(
            topic_id=topic_ids[t], partitions=[sf.REQUEST.FetchPartition(partition_index=0, acknowledgement_batches=[])])
            for t in ("acl2-a", "acl2-b")]))
    acked = bob.call(sa.API, 1, sa.REQUEST(
        group_id="acl2-v", member_id=member, share_session_epoch=1, topics=[sa.REQUEST.AcknowledgeTopic(
            topic_id=topic_ids["acl2-b"], partitions=[sa.REQUEST.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=[sa.REQUEST.AcknowledgementBatch(
                    first_offset=0, last_offset=0, acknowledge_types=[1])])])]))
    return fetched, acked
