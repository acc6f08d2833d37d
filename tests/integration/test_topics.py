"""Topic create/delete through the three admin clients (confluent AdminClient, kafka-python
KafkaAdminClient, aiokafka AIOKafkaAdminClient): Kafka's name rules, collisions, duplicates,
validate_only, replication factor, partitions, configs, delete and delete of unknown topics.

Each client sits behind a small adapter answering in Kafka error codes, so every case runs
against every client; the broker's own view (`topic_names`) is checked next to the client's."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import KafkaAdminClient

from minibroker_protocol.apis import create_topics
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import TIMEOUT, RawClient, module_broker, topic_names, unique

E = ErrorCode


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


class ConfluentAdmin:
    def __init__(self, bootstrap: str):
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def create(self, name: str, partitions: int = 1, rf: int = 1, configs: dict | None = None,
               validate_only: bool = False) -> int:
        futures = self.admin.create_topics([CfNewTopic(name, partitions, rf, config=configs or {})],
                                           validate_only=validate_only, request_timeout=TIMEOUT)
        return _code(futures[name])

    def delete(self, name: str) -> int:
        return _code(self.admin.delete_topics([name], request_timeout=TIMEOUT)[name])

    def topics(self) -> set[str]:
        return set(self.admin.list_topics(timeout=TIMEOUT).topics)

    def close(self) -> None:
        pass


def _code(future) -> int:
    try:
        future.result(TIMEOUT)
    except KafkaException as e:
        return e.args[0].code()
    return 0


class KafkaPythonAdmin:
    def __init__(self, bootstrap: str):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))

    def create(self, name: str, partitions: int = 1, rf: int = 1, configs: dict | None = None,
               validate_only: bool = False) -> int:
        result = self.admin.create_topics(
            {name: {"num_partitions": partitions, "replication_factor": rf, "configs": configs or {}}},
            validate_only=validate_only, raise_errors=False)
        [topic] = result["topics"]
        return topic["error_code"]

    def delete(self, name: str) -> int:
        [topic] = self.admin.delete_topics([name], raise_errors=False)["topics"]
        return topic["error_code"]

    def topics(self) -> set[str]:
        return set(self.admin.list_topics())

    def close(self) -> None:
        self.admin.close()


class AiokafkaAdmin:
    """The asyncio client driven from sync tests on a private loop."""

    def __init__(self, bootstrap: str):
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaAdminClient:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
            await admin.start()
            return admin

        self.admin = self._run(start())

    def _run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def create(self, name: str, partitions: int = 1, rf: int = 1, configs: dict | None = None,
               validate_only: bool = False) -> int:
        resp = self._run(self.admin.create_topics([AioNewTopic(name, partitions, rf, topic_configs=configs or {})],
                                                  validate_only=validate_only))
        [topic] = resp.to_object()["topic_errors"]
        return topic["error_code"]

    def delete(self, name: str) -> int:
        [topic] = self._run(self.admin.delete_topics([name])).to_object()["topic_error_codes"]
        return topic["error_code"]

    def topics(self) -> set[str]:
        return set(self._run(self.admin.list_topics()))

    def close(self) -> None:
        self._run(self.admin.close())
        self.loop.close()


@pytest.fixture(scope="module", params=[ConfluentAdmin, KafkaPythonAdmin, AiokafkaAdmin],
                ids=["confluent", "kafka-python", "aiokafka"])
def admin(request, kafka_broker_module):
    a = request.param(kafka_broker_module.bootstrap)
    yield a
    a.close()


@pytest.mark.parametrize("name", [
    "bad name", "bad/name", "t\u00f6pic", "a*b", "tab\there", "new\nline", ".", "..", "x" * 250,
])
def test_illegal_names_are_refused(kafka_broker_module, admin, name):
    assert admin.create(name) == E.INVALID_TOPIC_EXCEPTION
    assert name not in topic_names(kafka_broker_module)


def test_longest_legal_name_can_be_created_used_and_deleted(kafka_broker_module, admin):
    name = unique("long")
    name += "x" * (249 - len(name))
    assert admin.create(name, partitions=2) == 0
    assert name in admin.topics()
    # The deleted partition directory gets a longer name (<topic>-<p>.<uuid>-delete); Kafka shortens
    # the topic part so it still fits in 255 bytes.
    assert admin.delete(name) == 0
    assert name not in topic_names(kafka_broker_module)
    assert name not in admin.topics()


def test_dot_and_underscore_collide(kafka_broker_module, admin):
    stem = unique("coll")
    assert admin.create(f"{stem}.b") == 0
    assert admin.create(f"{stem}_b") == E.INVALID_TOPIC_EXCEPTION
    assert admin.create(f"{stem}.b") == E.TOPIC_ALREADY_EXISTS
    assert f"{stem}_b" not in topic_names(kafka_broker_module)


def test_duplicate_create(kafka_broker_module, admin):
    name = unique("dup")
    assert admin.create(name, partitions=3) == 0
    assert admin.create(name, partitions=3) == E.TOPIC_ALREADY_EXISTS
    assert kafka_broker_module.call(lambda broker: len(broker.topics[name].partitions)) == 3


def test_validate_only_creates_nothing(kafka_broker_module, admin):
    name = unique("dry")
    assert admin.create(name, partitions=4, validate_only=True) == 0
    assert name not in topic_names(kafka_broker_module)
    assert name not in admin.topics()
    # ... and still reports what a real create would.
    assert admin.create("bad name", validate_only=True) == E.INVALID_TOPIC_EXCEPTION
    assert admin.create(name, rf=3, validate_only=True) == E.INVALID_REPLICATION_FACTOR
    assert admin.create(name, partitions=4) == 0
    assert admin.create(name, validate_only=True) == E.TOPIC_ALREADY_EXISTS


def test_replication_factor_above_one_broker(kafka_broker_module, admin):
    name = unique("rf")
    assert admin.create(name, rf=3) == E.INVALID_REPLICATION_FACTOR
    assert admin.create(name, rf=0) == E.INVALID_REPLICATION_FACTOR
    assert name not in topic_names(kafka_broker_module)


def test_partition_count_and_configs(kafka_broker_module, admin):
    name = unique("cfg")
    assert admin.create(name, partitions=0) == E.INVALID_PARTITIONS
    assert admin.create(name, configs={"cleanup.policy": "nonsense"}) == E.INVALID_CONFIG
    assert admin.create(name, configs={"no.such.config": "1"}) == E.INVALID_CONFIG
    assert name not in topic_names(kafka_broker_module)
    assert admin.create(name, partitions=2, configs={"max.message.bytes": "2048", "retention.ms": "60000"}) == 0
    cfg = kafka_broker_module.call(lambda broker: broker.topics[name].config)
    assert (cfg["max.message.bytes"], cfg["retention.ms"]) == (2048, 60000)


def test_delete_then_metadata_shows_it_gone(kafka_broker_module, admin):
    name = unique("del")
    assert admin.create(name, partitions=2) == 0
    assert name in admin.topics()
    assert admin.delete(name) == 0
    assert name not in admin.topics()
    assert name not in topic_names(kafka_broker_module)
    assert admin.delete(name) == E.UNKNOWN_TOPIC_OR_PARTITION
    # The name is free again.
    assert admin.create(name, partitions=1) == 0
    assert kafka_broker_module.call(lambda broker: len(broker.topics[name].partitions)) == 1


def test_delete_unknown_topic(kafka_broker_module, admin):
    assert admin.delete(unique("never-created")) == E.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_internal_topic_is_refused(kafka_broker_module, admin):
    kafka_broker_module.call(lambda broker: broker.topics.ensure_internal_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"}))
    assert admin.delete("__consumer_offsets") == E.TOPIC_DELETION_DISABLED
    assert "__consumer_offsets" in topic_names(kafka_broker_module)


def test_empty_name_on_the_wire(kafka_broker_module):
    """Clients refuse an empty name themselves; the broker must too."""
    R = create_topics.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(create_topics.API, 7, R(topics=[R.CreatableTopic(
            name="", num_partitions=1, replication_factor=1, assignments=[], configs=[])], timeout_ms=5_000,
            validate_only=False))
    [t] = resp.topics
    assert t.error_code == E.INVALID_TOPIC_EXCEPTION
    assert "" not in topic_names(kafka_broker_module)


def test_same_name_twice_in_one_request(kafka_broker_module):
    """Kafka (ControllerApis.createTopics) answers a name listed twice once, with INVALID_REQUEST,
    and creates neither; the other topics of the request are handled as usual."""
    R = create_topics.REQUEST
    name = unique("twice")
    other = unique("once")

    def creatable(n: str) -> object:
        return R.CreatableTopic(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[])

    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(create_topics.API, 7, R(topics=[creatable(name), creatable(other), creatable(name)],
                                                timeout_ms=5_000, validate_only=False))
    assert sorted((t.name, t.error_code) for t in resp.topics) == sorted([(name, E.INVALID_REQUEST), (other, 0)])
    assert name not in topic_names(kafka_broker_module)
    assert other in topic_names(kafka_broker_module)
