"""Metadata on the wire, v0 to v12: which topics a request means, auto-creation and its refusals,
topic ids, internal topics; and what the clients make of it."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from minibroker_protocol.apis import metadata
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.schema import ZERO_UUID
from tests.integration.helpers import TIMEOUT, RawClient, create_topic, module_broker, topic_names, unique

E = ErrorCode
R = metadata.REQUEST


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


@pytest.fixture(scope="module")
def kafka_broker_module_no_auto_create(tmp_path_factory):
    with module_broker(tmp_path_factory, {"auto.create.topics.enable": False}) as b:
        yield b


def request(version: int, names: list[str] | None, *, auto: bool = True, ids: list[uuid.UUID] | None = None):
    topics = None
    if names is not None or ids is not None:
        topics = [R.MetadataRequestTopic(name=n, topic_id=ZERO_UUID) for n in names or []]
        topics += [R.MetadataRequestTopic(name=None, topic_id=i) for i in ids or []]
    return R(topics=topics, allow_auto_topic_creation=auto, include_cluster_authorized_operations=False,
             include_topic_authorized_operations=False)


def call(b, version: int, body) -> object:
    with RawClient(b.bootstrap) as raw:
        return raw.call(metadata.API, version, body)


@pytest.mark.parametrize("version", range(0, 13))
def test_every_version_lists_the_broker_and_a_topic(kafka_broker_module, version):
    topic = unique(f"md-v{version}")
    create_topic(kafka_broker_module, topic, 3)
    resp = call(kafka_broker_module, version, request(version, [topic]))
    host, port = kafka_broker_module.bootstrap.rsplit(":", 1)
    assert [(br.node_id, br.host, br.port) for br in resp.brokers] == [(1, host, int(port))]
    [t] = resp.topics
    assert (t.error_code, t.name) == (0, topic)
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in t.partitions] == [
        (i, 1, [1], [1]) for i in range(3)]
    if version >= 1:
        assert resp.controller_id == 1 and t.is_internal is False
    if version >= 2:
        assert resp.cluster_id == kafka_broker_module.call(lambda broker: broker.cluster_id)
    if version >= 7:
        assert {p.leader_epoch for p in t.partitions} == {0}
    if version >= 8:
        # Not requested: Kafka answers Integer.MIN_VALUE ("not provided").
        assert t.topic_authorized_operations == -2147483648
    if version >= 10:
        assert t.topic_id == kafka_broker_module.call(lambda broker: broker.topics[topic].topic_id)


def test_which_topics_a_request_means(kafka_broker_module):
    topic = unique("md-which")
    create_topic(kafka_broker_module, topic)
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    assert topic in {t.name for t in call(kafka_broker_module, 0, request(0, [])).topics}
    assert topic in {t.name for t in call(kafka_broker_module, 1, request(1, None)).topics}
    assert call(kafka_broker_module, 1, request(1, [])).topics == []
    assert topic in {t.name for t in call(kafka_broker_module, 12, request(12, None)).topics}
    assert call(kafka_broker_module, 12, request(12, [])).topics == []


def test_auto_creation_and_its_refusals(kafka_broker_module):
    wanted = unique("md-auto")
    [t] = call(kafka_broker_module, 9, request(9, [wanted])).topics
    assert (t.error_code, t.name, len(t.partitions)) == (0, wanted, 1)  # num.partitions
    assert wanted in topic_names(kafka_broker_module)
    # v4+: the client may ask not to create.
    other = unique("md-noauto")
    [t] = call(kafka_broker_module, 9, request(9, [other], auto=False)).topics
    assert (t.error_code, t.partitions) == (E.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert other not in topic_names(kafka_broker_module)
    # An illegal name is refused, not created.
    [t] = call(kafka_broker_module, 9, request(9, ["bad name!"])).topics
    assert t.error_code == E.INVALID_TOPIC_EXCEPTION
    assert "bad name!" not in topic_names(kafka_broker_module)


def test_auto_creation_disabled_on_the_broker(kafka_broker_module_no_auto_create):
    wanted = unique("md-off")
    for version in (0, 3, 9, 12):
        [t] = call(kafka_broker_module_no_auto_create, version, request(version, [wanted])).topics
        assert t.error_code == E.UNKNOWN_TOPIC_OR_PARTITION, version
    assert wanted not in topic_names(kafka_broker_module_no_auto_create)


def test_topics_by_id(kafka_broker_module):
    topic = unique("md-id")
    create_topic(kafka_broker_module, topic, 2)
    tid = kafka_broker_module.call(lambda broker: broker.topics[topic].topic_id)
    missing = uuid.uuid4()
    resp = call(kafka_broker_module, 12, request(12, None, ids=[tid, missing]))
    by_id = {t.topic_id: t for t in resp.topics}
    assert (by_id[tid].error_code, by_id[tid].name, len(by_id[tid].partitions)) == (0, topic, 2)
    assert (by_id[missing].error_code, by_id[missing].name) == (E.UNKNOWN_TOPIC_ID, None)


def test_internal_topic_is_flagged(kafka_broker_module):
    kafka_broker_module.call(lambda broker: broker.group_coordinator.store.ensure_topic())
    [t] = call(kafka_broker_module, 9, request(9, ["__consumer_offsets"])).topics
    assert (t.error_code, t.is_internal, len(t.partitions)) == (0, True, 50)
    all_topics = {t.name: t.is_internal for t in call(kafka_broker_module, 9, request(9, None)).topics}
    assert all_topics["__consumer_offsets"] is True


def test_clients_see_the_same_cluster(kafka_broker_module):
    topic = unique("md-clients")
    create_topic(kafka_broker_module, topic, 4)
    md = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap}).list_topics(timeout=TIMEOUT)
    assert md.cluster_id == kafka_broker_module.call(lambda broker: broker.cluster_id)
    assert md.controller_id == 1 and list(md.brokers) == [1]
    assert sorted(md.topics[topic].partitions) == [0, 1, 2, 3]
    assert all(p.leader == 1 and p.replicas == [1] and p.isrs == [1] for p in md.topics[topic].partitions.values())
    # kafka-python auto-creates on first send (Metadata with allow_auto_topic_creation).
    fresh = unique("md-kp-auto")
    p = KafkaProducer(bootstrap_servers=kafka_broker_module.bootstrap, enable_idempotence=False)  # issue 6: no InitProducerId yet
    try:
        assert p.send(fresh, b"x").get(TIMEOUT).offset == 0
    finally:
        p.close(TIMEOUT)
    assert fresh in topic_names(kafka_broker_module)
