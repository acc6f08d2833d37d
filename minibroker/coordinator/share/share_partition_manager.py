"""Share partitions on the leaders of their topic partitions (KIP-932; Kafka's SharePartitionManager
and SharePartition.maybeInitialize), for a KRaft cluster.

Theory of operation. On a cluster a share partition is held by the broker leading its topic
partition, and its state by the share coordinator (minibroker.coordinator.share.persister). So
before a ShareFetch or ShareAcknowledge touches a share partition this broker checks that it
leads the topic partition (else NOT_LEADER_OR_FOLLOWER, as Kafka's SharePartitionManager answers,
and the share partition, if one was held from an earlier leadership, is dropped), and that the
share partition was loaded at the current leader epoch: a share partition made under an older
epoch is dropped and read again, because another leader may have changed the state in between.
Loading reads the state from the share coordinator (ReadShareGroupState with the leader epoch,
which fences the old leader's later writes); when the coordinator holds none, the share partition
starts at the group's share.auto.offset.reset and is initialized there (InitializeShareGroupState).
Records that were acquired when the old leader died come back AVAILABLE with their delivery counts
(acquired is persisted as available), so they are delivered again, as Kafka's do.

On one broker none of this runs: the share partitions are made where the shard is (the
ShareGroupCoordinator's own `_initialised`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable

from minibroker.coordinator.share.dlq_sender import DLQSender as DLQSender
from minibroker.coordinator.share.persister import DefaultStatePersister as DefaultStatePersister
from minibroker.coordinator.share.share_group import ShareGroupCoordinator
from minibroker.coordinator.share.share_group import _reset_offset as reset_offset
from minibroker.coordinator.share.share_group_configs import AUTO_OFFSET_RESET
from minibroker.coordinator.share.share_group_state_admin import ShareGroupStateAdmin as ShareGroupStateAdmin
from minibroker_protocol.errors import ErrorCode

log = logging.getLogger("minibroker.coordinator.share_partition_manager")

TopicIdPartition = tuple[uuid.UUID, int]


class SharePartitionManager:
    """Leadership checks and loading of share partitions on a cluster's brokers."""

    def __init__(self, coordinator: ShareGroupCoordinator, persister: DefaultStatePersister, node_id: int) -> None:
        self.coordinator = coordinator
        self.persister = persister
        self.node_id = node_id
        self._loading: dict[tuple[str, uuid.UUID, int], asyncio.Lock] = {}

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """This broker's leader epoch of the topic partition, None when it does not lead it."""
        part = self.coordinator.replica_manager.get_partition(topic, partition)
        if part is None or part.leader_id != self.node_id or not part.from_metadata:
            return None
        return int(part.leader_epoch)

    def group_closed(self, group_id: str) -> None:
        """The group's last share session on this broker closed: its share partitions are dropped
        and read again by the next session, which so sees what the admin APIs wrote meanwhile
        (share_group_state_admin.py; their state was written on every change, acquired records
        as available)."""
        for key in [k for k in self.coordinator.partitions if k[0] == group_id]:
            del self.coordinator.partitions[key]

    async def prepare(self, group_id: str, partitions: Iterable[TopicIdPartition]) -> dict[TopicIdPartition, int]:
        """Make ready the share partitions of `partitions` this broker leads: the error of each
        one that cannot be used (NOT_LEADER_OR_FOLLOWER, or the persister's error)."""
        out: dict[TopicIdPartition, int] = {}
        for tid, p in dict.fromkeys(partitions):
            code = await self._ensure(group_id, tid, p)
            if code != ErrorCode.NONE:
                out[(tid, p)] = code
        return out

    async def _ensure(self, group_id: str, tid: uuid.UUID, partition: int) -> int:
        coord = self.coordinator
        topic = coord.topics.by_id(tid)
        if topic is None:
            return ErrorCode.NONE  # answered UNKNOWN_TOPIC_ID by the coordinator's own checks
        key = (group_id, tid, partition)
        epoch = self.leader_epoch(topic.name, partition)
        if epoch is None:
            coord.partitions.pop(key, None)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        sp = coord.partitions.get(key)
        if sp is not None and sp.leader_epoch == epoch:
            return ErrorCode.NONE
        async with self._loading.setdefault(key, asyncio.Lock()):
            sp = coord.partitions.get(key)
            if sp is not None and sp.leader_epoch == epoch:
                return ErrorCode.NONE
            coord.partitions.pop(key, None)  # made under another leader epoch: read again
            await self.persister.flush([key])  # after this broker's own writes of it (a session closed)
            code, state = await self.persister.read(key, epoch)
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                lg = coord.topics.get_log(topic.name, partition)
                if lg is None:
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER
                start = reset_offset(coord.group_config(group_id, AUTO_OFFSET_RESET), lg, coord.now_ms())
                log.info("share partition %s-%d of group %s: no state with its share coordinator, initialized at %d",
                         topic.name, partition, group_id, start)
                code = await self.persister.initialize(key, start, 0)
                if code != ErrorCode.NONE:
                    return code
                sp = coord._new_partition(key, start)
            elif code != ErrorCode.NONE or state is None:
                log.warning("share partition %s-%d of group %s: reading its state failed: %s",
                            topic.name, partition, group_id, ErrorCode(code).name)
                return code
            else:
                sp = coord._new_partition(key, state.start_offset)
                sp.state_epoch = state.state_epoch
                sp.restore(state.start_offset, state.batches)
            sp.leader_epoch = epoch
            log.info("share partition %s-%d of group %s loaded at leader epoch %d (start offset %d)",
                     topic.name, partition, group_id, epoch, sp.start_offset)
            return ErrorCode.NONE

