"""The topic registry: every topic this broker leads, its rules and the one way to create one.

Theory of operation: a single-node cluster keeps its topic metadata here (Kafka keeps it in the
KRaft metadata log and answers from its MetadataCache). `TopicRegistry` maps names and topic ids to
`Topic`s, checks new topics as Kafka's controller does (`Topic.validate`, name collisions,
partition count, replication factor, config), and creates them through one body, either on the
loop (`create`) or with the partition directories made off it (`create_async`). Deletion tells
whoever registered for it (the group coordinator drops committed offsets, the replica manager
wakes waiting fetches) without the registry knowing who they are.

The registry is the one publisher of the metadata image (Kafka: the controller's metadata log and
the broker's MetadataPublisher): every change — load, create, add partitions, reconfigure, a
topic's config altered, delete — is published to the `MetadataCache` the handlers read and to the
`ReplicaManager`, which makes its `Partition`s of the logs.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from minibroker.config import (
    BrokerConfig,
    ConfigValue,
    effective_topic_config,
    to_log_config,
    validate_topic_config,
)
from minibroker.metadata_cache import MetadataPublisher, PartitionImage, TopicImage
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.config import LogConfig
from minibroker_storage.log_manager import LogManager

if TYPE_CHECKING:  # the logs are opened by minibroker_storage.log_manager, which imports minibroker_storage.log then (issue 22)
    from minibroker_storage.log import Log

log = logging.getLogger("minibroker.topics")

MAX_TOPIC_NAME_LENGTH = 249  # Kafka: Topic.MAX_NAME_LENGTH
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def validate_topic_name(name: str) -> None:
    """Kafka's org.apache.kafka.common.internals.Topic.validate rules, with Kafka 4.4's messages
    (checked against the reference broker by tests/reference/test_differential_topics.py)."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' is not allowed")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
            f"{MAX_TOPIC_NAME_LENGTH}",
        )
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        )


def _collision_key(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them.
    return name.replace(".", "_")


class Topic:
    """What the broker knows of a topic: its id, partitions and config overrides."""

    __slots__ = ("name", "topic_id", "partitions", "overrides", "config")

    def __init__(self, name: str, topic_id: uuid.UUID, partitions: dict[int, Log],
                 overrides: dict[str, ConfigValue], config: dict[str, ConfigValue]):
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.overrides = overrides
        self.config = config  # effective topic config (Kafka keys -> parsed values)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


TopicListener = Callable[[Topic], None]


class RemoteTopicCreator(Protocol):
    """Creates a topic through the controller and returns once this broker's metadata has it."""

    async def create_topic(self, name: str, num_partitions: int, overrides: Mapping[str, ConfigValue]) -> None: ...


class TopicRegistry:
    """Topics by name and by id (Fetch v13+, Produce v13 and the v10 offset APIs name topics by
    id, once per topic per request), over the `LogManager` that owns their partition logs."""

    def __init__(self, log_manager: LogManager, config: BrokerConfig) -> None:
        self.log_manager = log_manager
        self.config = config
        self._by_name: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        # a topic name by its collision key, so that CreateTopics checks a name in O(1), not
        # against every topic (quadratic at 10,000 topics: bench/README.md, "How cost grows")
        self._by_collision_key: dict[str, set[str]] = {}
        self._creating: dict[str, asyncio.Future[Topic]] = {}
        self._adding = asyncio.Lock()  # CreatePartitions, one at a time (add_partitions_async)
        self._on_delete: list[TopicListener] = []
        self._publishers: list[MetadataPublisher] = []
        # a KRaft broker's creations go to the controller (Kafka: AutoTopicCreationManager); the
        # topic is here once the metadata log brought it (minibroker.metadata.forwarding_manager)
        self.remote_creator: RemoteTopicCreator | None = None

    # -- reading ----------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Topic:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str | None) -> Topic | None:
        return self._by_name.get(name) if name is not None else None

    def by_id(self, topic_id: uuid.UUID | None) -> Topic | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def values(self) -> list[Topic]:
        return list(self._by_name.values())

    def items(self) -> list[tuple[str, Topic]]:
        return list(self._by_name.items())

    def get_log(self, topic: str, partition: int) -> Log | None:
        t = self._by_name.get(topic)
        return t.partitions.get(partition) if t is not None else None

    def replace_log(self, lg: Log) -> None:
        """A partition's log replaced by its copy in another log dir (minibroker.log_dirs)."""
        t = self._by_name.get(lg.topic)
        if t is not None and lg.partition in t.partitions:
            t.partitions[lg.partition] = lg

    def add_publisher(self, publisher: MetadataPublisher) -> None:
        """Publish every topic change to `publisher` (the MetadataCache, the ReplicaManager),
        starting with the topics already registered."""
        self._publishers.append(publisher)
        for topic in self._by_name.values():
            publisher.publish_topic(self.image(topic), topic.partitions)

    def image(self, topic: Topic) -> TopicImage:
        """The metadata image of `topic`: this node leads every partition, at epoch 0, alone in
        its replica set and ISR (the cluster issue gives them real members)."""
        node = self.config.node_id
        replicas = (node,)
        return TopicImage(topic.name, topic.topic_id,
                          {p: PartitionImage(p, node, 0, replicas, replicas) for p in sorted(topic.partitions)},
                          dict(topic.config), dict(topic.overrides), topic.is_internal)

    def _publish(self, topic: Topic) -> None:
        if self._publishers:
            image = self.image(topic)
            for publisher in self._publishers:
                publisher.publish_topic(image, topic.partitions)

    def on_delete(self, listener: TopicListener) -> None:
        """Call `listener(topic)` after a topic is deleted."""
        self._on_delete.append(listener)

    # -- loading ----------------------------------------------------------------------------
    def load(self) -> None:
        """Register the topics whose partition logs the log manager found on disk."""
        by_topic: dict[str, dict[int, Log]] = {}
        for (name, partition), lg in self.log_manager.logs().items():
            by_topic.setdefault(name, {})[partition] = lg
        ids = self.log_manager.topic_ids()
        for name, parts in by_topic.items():
            overrides = self.log_manager.topic_overrides(name)
            self._register(Topic(name, ids.get(name) or uuid.uuid4(), parts, overrides,
                                 effective_topic_config(self.config, overrides)))

    def put(self, topic: Topic) -> None:
        """Register a topic the metadata log made (a KRaft broker's BrokerMetadataPublisher), its logs
        already open."""
        self._register(topic)

    def _register(self, topic: Topic) -> None:
        old = self._by_name.get(topic.name)
        if old is not None:
            self._by_id.pop(old.topic_id, None)
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self._by_collision_key.setdefault(_collision_key(topic.name), set()).add(topic.name)
        self._publish(topic)

    def reconfigure(self, config: BrokerConfig) -> None:
        """A dynamic broker config changed: every topic and open log gets its new effective config
        (the log.* keys are the broker defaults of topic keys). Overrides are unchanged: new
        LogConfigs for the open logs, no file write."""
        self.config = config
        self.log_manager.default_config = self.log_config(effective_topic_config(config, {}))
        for topic in self._by_name.values():
            topic.config = effective_topic_config(config, topic.overrides)
            log_config = self.log_config(topic.config)
            for lg in topic.partitions.values():
                lg.config = log_config
            self._publish(topic)

    def alter_config(self, topic: Topic, overrides: dict[str, ConfigValue], effective: dict[str, ConfigValue]) -> None:
        """A topic's config overrides changed (AlterConfigs): stored, then published."""
        self.log_manager.set_topic_overrides(topic.name, overrides)
        topic.overrides = overrides
        topic.config = effective
        self._publish(topic)

    # -- creating ---------------------------------------------------------------------------
    def check_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                        configs: Mapping[str, str | None]) -> dict[str, ConfigValue]:
        """Validate a topic creation as Kafka does; return the parsed config overrides."""
        validate_topic_name(name)
        if name in self._by_name:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        others = self._by_collision_key.get(_collision_key(name))
        if others:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic '{name}' collides with existing topic: {min(others)}")
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        if replication_factor != 1:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                "factor of " f"{replication_factor} cannot be reached because only 1 broker(s) are registered or some brokers have all their "
                "log directories cordoned.",  # Kafka 4.4's text (KIP-1066 added the cordoning)
            )
        try:
            return validate_topic_config(configs)
        except Exception as e:  # ConfigError
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None

    def log_config(self, effective: dict[str, ConfigValue]) -> LogConfig:
        return to_log_config(effective)

    def _prepare(self, name: str, overrides: dict[str, ConfigValue] | None, topic_id: uuid.UUID | None = None
                 ) -> tuple[uuid.UUID, dict[str, ConfigValue], dict[str, ConfigValue], LogConfig]:
        overrides = dict(overrides or {})
        effective = effective_topic_config(self.config, overrides)
        self.log_manager.set_topic_overrides(name, overrides, new_topic=True)
        return topic_id or uuid.uuid4(), overrides, effective, self.log_config(effective)

    def _make_logs(self, name: str, topic_id: uuid.UUID, partitions: range, log_config: LogConfig) -> dict[int, Log]:
        return {p: self.log_manager.create_log(name, p, topic_id, log_config) for p in partitions}

    def _finish(self, name: str, topic_id: uuid.UUID, parts: dict[int, Log], overrides: dict[str, ConfigValue],
                effective: dict[str, ConfigValue]) -> Topic:
        topic = Topic(name, topic_id, parts, overrides, effective)
        self._register(topic)
        log.info("Created topic %s with %d partition(s), id %s", name, len(parts), topic_id)
        return topic

    def create(self, name: str, num_partitions: int, overrides: dict[str, ConfigValue] | None = None, *,
               topic_id: uuid.UUID | None = None) -> Topic:
        """Create a topic now, on the calling thread (each partition costs a few fsyncs).
        `topic_id`: the id the metadata gave it (the same on every broker of a cluster)."""
        if self.remote_creator is not None:  # a KRaft broker creates nothing itself (create_async asks the controller)
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} is not in the metadata yet")
        topic_id, overrides, effective, log_config = self._prepare(name, overrides, topic_id)
        parts = self._make_logs(name, topic_id, range(num_partitions), log_config)
        return self._finish(name, topic_id, parts, overrides, effective)

    async def create_async(self, name: str, num_partitions: int, overrides: dict[str, ConfigValue] | None = None
                           ) -> Topic:
        """`create` with the partition directories made off the event loop.

        Each new partition costs a few fsyncs (partition.metadata, leader-epoch-checkpoint, the
        directory); 50 of them for __consumer_offsets would stall every connection for most of a
        second. The creation runs as its own task: concurrent calls for the same topic share it
        (librdkafka sends FindCoordinator on several connections at once; two would race on the
        same directories), and a caller that goes away (a client disconnecting) does not cancel it
        half way, which would leave directories behind for a second topic id.
        """
        existing = self._by_name.get(name)
        if existing is not None:
            return existing
        if self.remote_creator is not None:
            return await self._create_remotely(name, num_partitions, overrides)
        pending = self._creating.get(name)
        if pending is None:
            pending = asyncio.ensure_future(self._create_off_loop(name, num_partitions, overrides))
            self._creating[name] = pending
            pending.add_done_callback(lambda _f: self._creating.pop(name, None))
        return await asyncio.shield(pending)

    async def _create_remotely(self, name: str, num_partitions: int,
                               overrides: dict[str, ConfigValue] | None) -> Topic:
        assert self.remote_creator is not None
        # its own task (asyncio.timeout needs one; a request's coroutine is not)
        await asyncio.ensure_future(self.remote_creator.create_topic(name, num_partitions, overrides or {}))
        topic = self._by_name.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"Topic {name} is not in this broker's metadata yet")
        return topic

    async def _create_off_loop(self, name: str, num_partitions: int, overrides: dict[str, ConfigValue] | None) -> Topic:
        topic_id, overrides, effective, log_config = self._prepare(name, overrides)
        parts = await self._make_logs_or_undo(name, topic_id, range(num_partitions), log_config, new_topic=True)
        return self._finish(name, topic_id, parts, overrides, effective)

    async def _make_logs_or_undo(self, name: str, topic_id: uuid.UUID, partitions: range, log_config: LogConfig,
                                 *, new_topic: bool) -> dict[int, Log]:
        """The partitions' logs, made off the loop; if the process runs out of descriptors or the
        disk fills half way, what was made is removed again (and a new topic's stored overrides),
        so that nothing is left for the next start to trip on, and the client gets an error
        (minibroker.controller_limits checks the headroom first; this is for what it cannot see)."""
        try:
            return await asyncio.get_running_loop().run_in_executor(None, self._make_logs, name, topic_id,
                                                                    partitions, log_config)
        except OSError as e:
            log.error("Creating partitions %d-%d of %s failed, undone: %s", partitions.start, partitions.stop - 1,
                      name, e)
            self.log_manager.abandon_logs(name, partitions)
            if new_topic:
                self.log_manager.set_topic_overrides(name, {}, new_topic=True)
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Unable to create partitions {partitions.start}-{partitions.stop - 1} of {name}: "
                             f"{e.strerror or e}") from None

    def ensure_internal_topic(self, name: str, partitions: int, overrides: dict[str, ConfigValue]) -> Topic:
        topic = self._by_name.get(name)
        return topic if topic is not None else self.create(name, partitions, overrides)

    async def ensure_internal_topic_async(self, name: str, partitions: int, overrides: dict[str, ConfigValue]) -> Topic:
        topic = self._by_name.get(name)
        return topic if topic is not None else await self.create_async(name, partitions, overrides)

    def _auto_create_partitions(self, name: str) -> int | None:
        if not self.config.get_bool("auto.create.topics.enable"):
            return None
        validate_topic_name(name)
        others = self._by_collision_key.get(_collision_key(name))
        if others and name not in others:
            # Kafka's controller refuses it as it refuses CreateTopics; its auto-creation manager
            # only logs that, and Metadata answers UNKNOWN_TOPIC_OR_PARTITION (Kafka 4.4, issue 30)
            log.warning("Auto topic creation failed for %s with error 'INVALID_TOPIC_EXCEPTION': Topic '%s' "
                        "collides with existing topic: %s.", name, name, min(others))
            return None
        return self.config.get_int("num.partitions")

    async def maybe_auto_create(self, name: str) -> Topic | None:
        """Metadata auto-creation (auto.create.topics.enable), with the broker's defaults."""
        partitions = self._auto_create_partitions(name)
        return None if partitions is None else await self.create_async(name, partitions)

    def maybe_auto_create_now(self, name: str) -> Topic | None:
        """`maybe_auto_create` on the calling thread (the in-process test helpers)."""
        partitions = self._auto_create_partitions(name)
        return None if partitions is None else self.create(name, partitions)

    def add_partitions(self, topic: Topic, total: int) -> None:
        log_config = self.log_config(topic.config)
        topic.partitions.update(self._make_logs(topic.name, topic.topic_id,
                                                range(len(topic.partitions), total), log_config))
        self._publish(topic)

    async def add_partitions_async(self, topic: Topic, total: int) -> None:
        """`add_partitions` with the directories made off the event loop (CreatePartitions may add
        10,000), undone if it fails half way."""
        async with self._adding:  # one at a time: two requests must not make the same partitions
            if total <= len(topic.partitions):
                raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {len(topic.partitions)} partitions.")
            parts = await self._make_logs_or_undo(topic.name, topic.topic_id, range(len(topic.partitions), total),
                                                  self.log_config(topic.config), new_topic=False)
            topic.partitions.update(parts)
            self._publish(topic)

    # -- deleting ---------------------------------------------------------------------------
    def delete(self, name: str) -> Topic:
        topic = self._by_name.pop(name)
        self._by_id.pop(topic.topic_id, None)
        key = _collision_key(name)
        same = self._by_collision_key.get(key, set())
        same.discard(name)
        if not same:
            self._by_collision_key.pop(key, None)
        self.log_manager.delete_topic(name)
        if self._publishers:
            image = self.image(topic)
            for publisher in self._publishers:
                publisher.remove_topic(image)
        for listener in self._on_delete:
            listener(topic)
        log.info("Deleted topic %s", name)
        return topic
