"""JBOD: which log directory holds each replica, and directories going offline (KIP-858).

Kafka 4.4's controller, from metadata.version 3.7-IV2 on (MetadataVersion.isDirectoryAssignmentSupported):
- a broker registers its directory ids (BrokerRegistrationRequest.LogDirs); the registration is
  refused without any, with a reserved id, with one twice or with one another broker registered
  (ClusterControlManager.registerBroker, INVALID_REGISTRATION);
- a new replica (CreateTopics, CreatePartitions, a reassignment adding it) is recorded in the
  broker's *default directory* (ClusterControlManager.defaultDir): the only one when it has one,
  UNASSIGNED when it has several (the broker picks and tells), MIGRATING when it registered none;
- a broker tells where it placed a replica with AssignReplicasToDirs (ReplicationControlManager.
  handleAssignReplicasToDirs): a PartitionChangeRecord with the new `directories`;
- a broker names its failed directories in each BrokerHeartbeat (OfflineLogDirs): for a directory
  newly offline, every partition with a replica in it loses that replica from its ISR and its
  leadership, and a BrokerRegistrationChangeRecord lists the directories left online
  (ReplicationControlManager.handleDirectoriesOffline);
- a replica whose directory is offline may not lead (ReplicationControlManager.LeaderAcceptor:
  isActive and ClusterControlManager.hasOnlineDir).
The reserved ids are Kafka's DirectoryId: MIGRATING (all zeros, what a record written before
KIP-858 means), UNASSIGNED (1), LOST (2); ids below 100 are reserved.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from minibroker.metadata.image import BrokerRegistration, MetadataImage
from minibroker.metadata.partition_registration import (
    MIGRATING,
    UNASSIGNED,
    PartitionRegistration,
    directory_assignment_supported,
    directory_of,
    directory_online,
)
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import assign_replicas_to_dirs as ard_api
from minibroker_protocol.apis.assign_replicas_to_dirs import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)
from minibroker_protocol.apis.broker_registration import BrokerRegistrationRequest
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

log = logging.getLogger("minibroker.controller")

BROKER_REGISTRATION_CHANGE_VERSION = 2


def reserved(d: uuid.UUID) -> bool:
    """Kafka: DirectoryId.reserved (the first 100 ids)."""
    return d.int < 100


def default_dir(image: MetadataImage, broker_id: int) -> uuid.UUID:
    """Where a new replica on `broker_id` is recorded (Kafka: KRaftClusterDescriber.defaultDir,
    ClusterControlManager.defaultDir)."""
    if not directory_assignment_supported(image.features):
        return MIGRATING
    b = image.brokers.get(broker_id)
    if b is None:
        return UNASSIGNED
    if not b.log_dirs:
        return MIGRATING
    return b.log_dirs[0] if len(b.log_dirs) == 1 else UNASSIGNED


def has_online_dir(image: MetadataImage, broker_id: int, d: uuid.UUID) -> bool:
    b = image.brokers.get(broker_id)
    return b is not None and directory_online(d, b.log_dirs)


class ReplicaAcceptor:
    """May a broker lead or join an ISR (unfenced, not shutting down: `broker_ok`), and for one
    partition, is its replica's directory online too (Kafka: ReplicationControlManager.LeaderAcceptor).
    Also answers each broker's default directory (Kafka: ClusterDescriber)."""

    def __init__(self, image: MetadataImage, broker_ok: Callable[[int], bool]):
        self.image = image
        self.broker_ok = broker_ok

    def __call__(self, broker_id: int) -> bool:
        return self.broker_ok(broker_id)

    def for_partition(self, reg: PartitionRegistration) -> Callable[[int], bool]:
        image = self.image
        return lambda b: self.broker_ok(b) and has_online_dir(image, b, directory_of(reg, b))

    def default_dir(self, broker_id: int) -> uuid.UUID:
        return default_dir(self.image, broker_id)


def check_registration(image: MetadataImage, req: BrokerRegistrationRequest) -> None:
    """Kafka's directory checks of ClusterControlManager.registerBroker (INVALID_REGISTRATION)."""
    if not directory_assignment_supported(image.features):
        return
    if not req.log_dirs:
        raise KafkaError(ErrorCode.INVALID_REGISTRATION, "No directories specified in request")
    if any(reserved(d) for d in req.log_dirs):
        raise KafkaError(ErrorCode.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(req.log_dirs)) != len(req.log_dirs):
        raise KafkaError(ErrorCode.INVALID_REGISTRATION, "Duplicate directory ID in request")
    for b in image.brokers.values():
        if b.id != req.broker_id:
            for d in req.log_dirs:
                if d in b.log_dirs:
                    raise KafkaError(ErrorCode.INVALID_REGISTRATION,
                                     f"Broker {b.id} is already registered with directory {d}")


def new_replica_dirs(image: MetadataImage, replicas: Sequence[int]) -> tuple[uuid.UUID, ...]:
    """The `directories` of a new partition's PartitionRecord (Kafka: PartitionAssignment with the
    ClusterDescriber's defaultDir of each replica)."""
    return tuple(default_dir(image, r) for r in replicas)


def directories_offline(image: MetadataImage, b: BrokerRegistration, offline: Sequence[uuid.UUID],
                        leave: Callable[[uuid.UUID, int, PartitionRegistration], mr.PartitionChangeRecord | None]
                        ) -> list[ApiMessageAndVersion]:
    """Kafka: ReplicationControlManager.handleDirectoriesOffline. For each directory of the
    registration newly named offline, `leave` takes the broker out of the ISR and leadership of
    every partition whose replica on it is there; then the registration keeps the others."""
    if not directory_assignment_supported(image.features):
        return []
    newly = [d for d in b.log_dirs if d in offline]  # Kafka: BrokerRegistration.directoryIntersection
    if not newly:
        return []
    out: list[ApiMessageAndVersion] = []
    for d in newly:
        for t in image.topics.values():
            for p, reg in sorted(t.partitions.items()):
                if b.id in reg.replicas and directory_of(reg, b.id) == d:
                    rec = leave(t.id, p, reg)
                    if rec is not None:
                        out.append(ApiMessageAndVersion(rec, 2))
    online = [d for d in b.log_dirs if d not in offline]  # Kafka: directoryDifference
    out.append(ApiMessageAndVersion(mr.BROKER_REGISTRATION_CHANGE_RECORD(
        broker_id=b.id, broker_epoch=b.epoch, log_dirs=online), BROKER_REGISTRATION_CHANGE_VERSION))
    log.warning("Directories %s in broker %d marked offline, remaining directories: %s",
                [str(d) for d in newly], b.id, [str(d) for d in online])
    return out


def assign_replicas_to_dirs(
        image: MetadataImage, req: AssignReplicasToDirsRequest,
        assign: Callable[[uuid.UUID, int, PartitionRegistration, uuid.UUID], mr.PartitionChangeRecord | None],
        leave: Callable[[uuid.UUID, int, PartitionRegistration], mr.PartitionChangeRecord | None],
) -> tuple[list[ApiMessageAndVersion], AssignReplicasToDirsResponse]:
    """Kafka: ReplicationControlManager.handleAssignReplicasToDirs (the broker epoch is checked
    before). `assign` builds the change recording the directory (PartitionChangeBuilder.setDirectory),
    `leave` the ISR/leadership change of a replica placed in an offline directory (Kafka's
    "offline-dir-assignment" generateLeaderAndIsrUpdates, built on the state before the assignment)."""
    if not directory_assignment_supported(image.features):
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "Directory assignment is not supported yet.")
    R = ard_api.RESPONSE
    broker = image.brokers[req.broker_id]
    resp = R(error_code=0, directories=[])
    records: list[ApiMessageAndVersion] = []
    offline_updates: dict[tuple[uuid.UUID, int], PartitionRegistration] = {}
    for rd in req.directories:
        dir_offline = not directory_online(rd.id, broker.log_dirs)
        out_d = R.DirectoryData(id=rd.id, topics=[])
        resp.directories.append(out_d)
        for rt in rd.topics:
            topic = image.topics.get(rt.topic_id)
            if topic is None:
                log.warning("AssignReplicasToDirsRequest from broker %d references unknown topic ID %s",
                            req.broker_id, rt.topic_id)
            out_t = R.TopicData(topic_id=rt.topic_id, partitions=[])
            out_d.topics.append(out_t)
            for rp in rt.partitions:
                error = ErrorCode.NONE if topic is not None else ErrorCode.UNKNOWN_TOPIC_ID
                reg = topic.partitions.get(rp.partition_index) if topic is not None else None
                if topic is not None and reg is None:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif reg is not None and req.broker_id not in reg.replicas:
                    error = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif topic is not None and reg is not None:
                    rec = assign(topic.id, rp.partition_index, reg, rd.id)
                    if rec is not None:
                        records.append(ApiMessageAndVersion(rec, 2))
                    if dir_offline:
                        offline_updates[(topic.id, rp.partition_index)] = reg
                out_t.partitions.append(R.PartitionData(partition_index=rp.partition_index, error_code=error))
    for (tid, p), reg in offline_updates.items():
        rec = leave(tid, p, reg)
        if rec is not None:
            records.append(ApiMessageAndVersion(rec, 2))
    return records, resp

