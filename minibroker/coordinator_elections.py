"""The coordinators told which of their internal-topic partitions this broker leads, as the
metadata moves leadership (Kafka: BrokerMetadataPublisher.onMetadataUpdate -> updateCoordinator
-> GroupCoordinator / TransactionCoordinator / ShareCoordinator onElection(partition, epoch) and
onResignation(partition, epoch)).

Theory of operation. `ReplicaManager.apply_delta` (the one door of the metadata's partition
changes, whoever calls it: the KRaft BrokerMetadataPublisher, or a test playing the controller)
makes this broker leader or follower of each partition, then hands the same topics to
`update_coordinators`. For the partitions of `__consumer_offsets`, `__transaction_state` and
`__share_group_state` it calls the listener (minibroker.coordinators.Coordinators):

- `on_election(topic, partition, leader_epoch)` where the image names this broker the leader: the
  coordinator loads the partition's state from its log (COORDINATOR_LOAD_IN_PROGRESS until done);
- `on_resignation(topic, partition, leader_epoch)` everywhere else (a follower, no leader, or no
  replica here; `None` for a deleted topic, as Kafka's OptionalInt.empty()): the coordinator
  unloads it (its groups or transactional ids answer NOT_COORDINATOR from then on, its parked
  JoinGroup/SyncGroup are answered NOT_COORDINATOR).

Like Kafka's, both are idempotent and epoch-checked by the listener: an election at an epoch older
than the one loaded, or a resignation older than the loaded election, is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from minibroker.metadata_cache import TopicImage

# the coordinators' internal topics (minibroker.coordinators names them too)
COORDINATOR_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class CoordinatorElectionListener(Protocol):
    """What `update_coordinators` tells (Kafka: the coordinators' onElection / onResignation)."""

    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None: ...

    def on_resignation(self, topic: str, partition: int, leader_epoch: int | None) -> None: ...


def update_coordinators(node_id: int, changed: Iterable[TopicImage], deleted: Iterable[TopicImage],
                        listener: CoordinatorElectionListener | None) -> None:
    """Tell `listener` about the coordinator partitions in a metadata delta (Kafka:
    BrokerMetadataPublisher.updateCoordinator), elections before resignations of a topic's
    partitions in partition order."""
    if listener is None:
        return
    for topic in changed:
        if topic.name not in COORDINATOR_TOPICS:
            continue
        for p, image in sorted(topic.partitions.items()):
            if image.leader_id == node_id and node_id in image.replicas:
                listener.on_election(topic.name, p, image.leader_epoch)
            else:
                listener.on_resignation(topic.name, p, image.leader_epoch)
    for topic in deleted:
        if topic.name in COORDINATOR_TOPICS:
            for p in sorted(topic.partitions):
                listener.on_resignation(topic.name, p, None)
