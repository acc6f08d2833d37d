"""The broker's image of the cluster metadata (Kafka: MetadataCache, fed by a MetadataPublisher).

Theory of operation: request handlers read topics (name, id, partitions with their leader,
replicas, ISR and leader epoch, effective config, internal flag) from one `MetadataCache`, never
from the topic registry or a partition log. One publisher changes it: today the `TopicRegistry`
(minibroker.topics), which publishes each topic it registers, grows, reconfigures or deletes
to every `MetadataPublisher` added to it (this cache and the ReplicaManager); in the cluster issue, Kafka's metadata log replayed into a
new image (Kafka's `KRaftMetadataCache.setImage` from `BrokerMetadataPublisher`). Nobody else
writes it. A `TopicImage` is replaced as a whole on each change (readers that hold one see a
consistent topic), its partitions are immutable `PartitionImage`s.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minibroker.config import ConfigValue

if TYPE_CHECKING:  # minibroker_storage.log is imported by the first log opened, not at start (issue 22)
    from minibroker_storage.log import Log


@dataclass(frozen=True, slots=True)
class PartitionImage:
    """One partition as the metadata says it is (Kafka: PartitionRegistration)."""

    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # bumped by every change of the registration (an ISR change too); AlterPartition carries it
    partition_epoch: int = 0
    leader_recovery_state: int = 0  # 0 RECOVERED, 1 RECOVERING (after an unclean election)
    elr: tuple[int, ...] = ()  # Eligible Leader Replicas (KIP-966)
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()  # a reassignment in progress (KIP-455)
    removing_replicas: tuple[int, ...] = ()
    # each replica's log directory (KIP-858), in replica order; () when the metadata has none
    directories: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicImage:
    """One topic (Kafka: TopicImage, with its ConfigurationImage's effective values)."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionImage]
    config: Mapping[str, ConfigValue]  # effective topic config (Kafka keys -> parsed values)
    overrides: Mapping[str, ConfigValue]  # the topic's own config keys (DescribeConfigs' TOPIC_CONFIG source)
    is_internal: bool

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True, slots=True)
class ClusterBroker:
    """One registered broker as the metadata log says it is (Kafka: BrokerRegistration, as the
    KRaft MetadataCache reads it): its endpoint per listener name, fenced or not."""

    node_id: int
    endpoints: Mapping[str, tuple[str, int]]
    rack: str | None = None
    fenced: bool = False
    in_controlled_shutdown: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()  # the directories registered online (KIP-858)


class MetadataPublisher(Protocol):
    """What the metadata's one writer tells (Kafka: MetadataPublisher.onMetadataUpdate): a topic's
    new image with its partitions' logs on this broker, or its removal."""

    def publish_topic(self, topic: TopicImage, logs: Mapping[int, Log]) -> None: ...

    def remove_topic(self, topic: TopicImage) -> None: ...


class MetadataCache:
    """Topics by name and by id, as last published, and this broker."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id  # the one broker, controller and leader of every partition
        self._by_name: dict[str, TopicImage] = {}
        self._by_id: dict[uuid.UUID, TopicImage] = {}
        # a KRaft broker's view of the cluster (set by minibroker.metadata.broker_metadata_publisher);
        # empty on the single broker, which answers with itself
        self.brokers: Mapping[int, ClusterBroker] = {}
        self.controller_id = node_id  # what Metadata and DescribeCluster name as the controller

    # -- reading (handlers) --------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def topic_names(self) -> Iterator[str]:
        return iter(list(self._by_name))

    def topics(self) -> list[TopicImage]:
        return list(self._by_name.values())

    def topic(self, name: str | None) -> TopicImage | None:
        return self._by_name.get(name) if name is not None else None

    def topic_by_id(self, topic_id: uuid.UUID | None) -> TopicImage | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        t = self._by_id.get(topic_id) if topic_id is not None else None
        return t.name if t is not None else None

    def topic_id(self, name: str | None) -> uuid.UUID | None:
        t = self._by_name.get(name) if name is not None else None
        return t.topic_id if t is not None else None

    def partition(self, name: str | None, partition: int) -> PartitionImage | None:
        t = self._by_name.get(name) if name is not None else None
        return t.partitions.get(partition) if t is not None else None

    def topic_config(self, name: str) -> Mapping[str, ConfigValue] | None:
        t = self._by_name.get(name)
        return t.config if t is not None else None

    def alive_brokers(self) -> list[ClusterBroker]:
        """The unfenced brokers, by id (Kafka: KRaftMetadataCache.getAliveBrokerNodes)."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def broker_endpoint(self, node_id: int, listener: str | None) -> tuple[str, int] | None:
        """(host, port) of an unfenced broker on `listener`, None if it has none."""
        b = self.brokers.get(node_id)
        if b is None or b.fenced or listener is None:
            return None
        return b.endpoints.get(listener)

    # -- publishing (the one publisher: the topic registry today, the metadata log later) -----
    def publish_topic(self, image: TopicImage, logs: Mapping[int, Log] | None = None) -> None:
        old = self._by_name.get(image.name)
        if old is not None and old.topic_id != image.topic_id:
            self._by_id.pop(old.topic_id, None)
        self._by_name[image.name] = image
        self._by_id[image.topic_id] = image

    def remove_topic(self, topic: TopicImage) -> None:
        old = self._by_name.pop(topic.name, None)
        if old is not None:
            self._by_id.pop(old.topic_id, None)
