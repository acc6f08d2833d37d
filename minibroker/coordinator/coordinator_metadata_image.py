"""The topics the group and share coordinators assign from: the cluster's metadata, not this
broker's logs (Kafka: CoordinatorMetadataImage, KRaftCoordinatorMetadataImage over the broker's
MetadataImage).

Why. A KRaft broker's TopicRegistry holds the partitions it has a replica of; a coordinator that
counted those gave a KIP-848 consumer group only the partitions its coordinator held (two of six on
a cluster of three with replication factor 1, issue 37). Kafka's group coordinator reads topic
names, ids and partition counts from the metadata image; so does this view. On one node every
partition is here and the registry publishes every change to the metadata cache, so both agree.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Protocol

from minibroker.metadata_cache import MetadataCache, TopicImage


class TopicMetadata(Protocol):
    """What the coordinators read of a topic: a TopicImage of the metadata, or (tests' stacks) a
    registry's Topic."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Mapping[int, object]: ...

    @property
    def is_internal(self) -> bool: ...


class TopicsMetadata(Protocol):
    """Topics by name and by id (CoordinatorMetadataImage; a TopicRegistry fits it too)."""

    def get(self, name: str | None) -> TopicMetadata | None: ...

    def by_id(self, topic_id: uuid.UUID | None) -> TopicMetadata | None: ...

    def values(self) -> Sequence[TopicMetadata]: ...


class CoordinatorMetadataImage:
    """The metadata cache's topics, read where a coordinator needs names, ids and partition counts."""

    def __init__(self, metadata: MetadataCache) -> None:
        self._metadata = metadata

    def get(self, name: str | None) -> TopicImage | None:
        return self._metadata.topic(name)

    def by_id(self, topic_id: uuid.UUID | None) -> TopicImage | None:
        return self._metadata.topic_by_id(topic_id)

    def values(self) -> list[TopicImage]:
        return self._metadata.topics()
