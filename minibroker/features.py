"""The cluster's feature flags (KIP-584), as ApiVersions v3+ reports them.

Theory of operation. A Kafka 4 cluster finalizes a level of each feature in its metadata log
(`kafka-features upgrade`, or `kafka-storage format --feature`), and every broker reports the
features it supports and the finalized levels in its ApiVersions response. Clients switch
protocols on them: the Java producer 4.x runs transactions v2 (KIP-890 part 2: Produce v12 adds
partitions implicitly, TxnOffsetCommit v5 adds the group's partition, EndTxn v5 bumps the epoch)
only when `transaction.version` >= 2 is finalized; `group.version` >= 1 is what makes Kafka serve
the KIP-848 consumer group APIs. This broker is its own controller with nothing to upgrade: the
levels are fixed, those of what it serves.

`metadata.version` is reported as Kafka 4.4 (the reference broker, docs/reference.md) reports it
on a freshly formatted cluster; it gates no client behaviour, only admin tools print it.
`kraft.version` is supported at level 0 only (no dynamic quorum: there is no quorum), so, as in
Kafka, it is not among the finalized features (a level-0 feature is not listed).
The finalized epoch is constant: Kafka's is the metadata offset of the last feature change, and
clients only ask that it grows, which it would if these levels ever changed.

Other features register here (`register`) before the broker answers its first request.
`share.version` 2 is what makes share groups write to a dead-letter queue (KIP-1191);
`streams.version` 1 is what makes the group coordinator serve streams groups (KIP-1071).
"""

from __future__ import annotations

from dataclasses import dataclass

TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"

FINALIZED_FEATURES_EPOCH = 1


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int  # supported range
    max_version: int
    level: int  # finalized level; 0 means not finalized (not listed)


FEATURES: dict[str, Feature] = {}


def register(feature: Feature) -> None:
    """Add or replace a feature (at import time of the module that serves it)."""
    FEATURES[feature.name] = feature


# KIP-890 part 2: an epoch bump at every transaction end (transactions v2)
register(Feature(TRANSACTION_VERSION, 0, 2, 2))
# KIP-848: ConsumerGroupHeartbeat / ConsumerGroupDescribe
register(Feature(GROUP_VERSION, 0, 1, 1))
# 3.3-IV3 (the oldest KRaft level Kafka 4 supports) up to Kafka 4.4's latest production level
register(Feature(METADATA_VERSION, 7, 33, 33))
register(Feature(KRAFT_VERSION, 0, 0, 0))
# KIP-932 share groups (level 1, Kafka 4.2) and their dead-letter queue (level 2, KIP-1191, Kafka 4.4)
register(Feature(SHARE_VERSION, 0, 2, 2))
# KIP-1071 streams groups (StreamsGroupHeartbeat / StreamsGroupDescribe): Kafka 4.4's StreamsVersion
# SV_0-SV_1, SV_1 (needs metadata.version 4.2-IV1) finalized by `kafka-storage format`; at 0 the
# broker answers the streams group APIs UNSUPPORTED_VERSION (KafkaApis.isStreamsGroupProtocolEnabled)
register(Feature(STREAMS_VERSION, 0, 1, 1))
# KIP-966 Eligible Leader Replicas: finalized at 1 on a new Kafka 4.1+ cluster
# (minibroker.controller.eligible_leader_replicas)
register(Feature(ELIGIBLE_LEADER_REPLICAS_VERSION, 0, 1, 1))


@dataclass(frozen=True, slots=True)
class FeatureLevels:
    """What one broker's ApiVersions reports: the levels it supports and the cluster's finalized ones."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]  # level > 0 only
    epoch: int


def static_levels() -> FeatureLevels:
    """A broker that is its own controller: the table's levels."""
    return FeatureLevels({f.name: (f.min_version, f.max_version) for f in FEATURES.values()},
                         {f.name: f.level for f in FEATURES.values() if f.level > 0}, FINALIZED_FEATURES_EPOCH)


def kraft_supported() -> dict[str, tuple[int, int]]:
    """The levels a KRaft broker registers with its controller (and reports): the table's. Share
    groups run on a cluster (share partitions on their leaders, their state sent to the share
    coordinator: docs/differences.md#kraft-share-groups), so share.version 0-2 as Kafka 4.4's."""
    return {f.name: (f.min_version, f.max_version) for f in FEATURES.values()}


def finalized_level(name: str) -> int:
    """The finalized level of a feature, 0 when it is not finalized."""
    f = FEATURES.get(name)
    return f.level if f is not None else 0


def transaction_version() -> int:
    """The cluster's transaction.version: 2 makes the coordinator bump epochs at every end of a
    transaction it aborts on its own (Kafka passes the server's level for those)."""
    return finalized_level(TRANSACTION_VERSION)
