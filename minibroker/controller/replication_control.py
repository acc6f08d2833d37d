"""Topics, partitions and their ISRs (Kafka: ReplicationControlManager).

CreateTopics: names checked as the brokers check them, the partition count and replication
factor defaulted from `num.partitions` / `default.replication.factor`, replicas placed on the
usable brokers (replica_placer) or taken from the request's assignments, the first replica
(the preferred one) leading with every replica in the ISR; one TopicRecord, a PartitionRecord per
partition and a ConfigRecord per given config, in one batch so a topic appears whole.
AlterPartition: the leader's ISR change, accepted only from the current leader at the current
leader epoch and partition epoch, with every new ISR member usable (Kafka's error for each
case); the answer is the partition's new state. A broker that stops being usable (fenced, in
controlled shutdown, unregistered) leaves every ISR and leadership through partition_change;
one that becomes usable again is elected where a partition has no leader.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from minibroker.controller import eligible_leader_replicas as elr_rules
from minibroker.controller import replica_placer
from minibroker.controller.directory_assignment import new_replica_dirs
from minibroker.controller.partition_change import change_record
from minibroker.controller.reassignment import validate_manual_assignment
from minibroker.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from minibroker.metadata.partition_registration import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration
from minibroker.topics import validate_topic_name
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import alter_partition, create_topics
from minibroker_protocol.apis.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from minibroker_protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsResponse
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

PARTITION_RECORD_VERSION = 2
PARTITION_CHANGE_RECORD_VERSION = 2
UNCLEAN_KEY = "unclean.leader.election.enable"


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    num_partitions: int = 1  # num.partitions
    replication_factor: int = 1  # default.replication.factor
    unclean_leader_election: bool = False  # unclean.leader.election.enable (cluster default)
    min_insync_replicas: int = 1  # min.insync.replicas: recorded at the cluster level with ELR on


def _change(rec: mr.PartitionChangeRecord) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(rec, PARTITION_CHANGE_RECORD_VERSION)


class ReplicationControlManager:
    def __init__(self, defaults: TopicDefaults, rng: random.Random | None = None):
        self.defaults = defaults
        self.rng = rng or random.Random()

    def unclean(self, image: MetadataImage, topic: str) -> bool:
        """The topic's unclean.leader.election.enable: its own, else the cluster default set with
        kafka-configs --entity-default, else the static one (Kafka's config order)."""
        value = image.configs.get((TOPIC_RESOURCE, topic), {}).get(UNCLEAN_KEY)
        if value is None:
            value = image.configs.get((BROKER_RESOURCE, ""), {}).get(UNCLEAN_KEY)
        return self.defaults.unclean_leader_election if value is None else value.lower() == "true"

    # -- CreateTopics ----------------------------------------------------------------------------
    def create_topics(self, image: MetadataImage, req: CreateTopicsRequest,
                      usable_brokers: list[int]) -> tuple[list[ApiMessageAndVersion], CreateTopicsResponse]:
        resp = create_topics.RESPONSE(topics=[])
        records: list[ApiMessageAndVersion] = []
        seen: set[str] = set()
        for t in req.topics:
            result = create_topics.RESPONSE.CreatableTopicResult(name=t.name, error_code=0, error_message=None)
            resp.topics.append(result)
            try:
                if t.name in seen:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                seen.add(t.name)
                validate_topic_name(t.name)
                if image.topic(t.name) is not None:
                    raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
                assignments = self._assignments(t, usable_brokers, image)
            except KafkaError as e:
                result.error_code, result.error_message = e.code, e.message
                continue
            topic_id = uuid.uuid4()
            result.topic_id, result.num_partitions = topic_id, len(assignments)
            result.replication_factor = len(assignments[0])
            if req.validate_only:
                continue
            records.append(ApiMessageAndVersion(mr.TOPIC_RECORD(name=t.name, topic_id=topic_id), 0))
            for p, replicas in enumerate(assignments):
                isr = [r for r in replicas if r in usable_brokers]
                reg = PartitionRegistration(tuple(replicas), tuple(isr), isr[0] if isr else NO_LEADER,
                                            directories=new_replica_dirs(image, replicas))  # KIP-858
                records.append(ApiMessageAndVersion(reg.to_record(topic_id, p), PARTITION_RECORD_VERSION))
            records += [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=TOPIC_RESOURCE, resource_name=t.name,
                                                              name=c.name, value=c.value), 0) for c in t.configs]
        return records, resp

    def _assignments(self, t: CreateTopicsRequest.CreatableTopic, usable_brokers: list[int],
                     image: MetadataImage) -> list[list[int]]:
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "A manual partition assignment was specified, but numPartitions or "
                                 "replicationFactor was not set to -1.")
            out: list[list[int]] = []
            for i, a in enumerate(sorted(t.assignments, key=lambda a: a.partition_index)):
                if a.partition_index != i:
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"Partitions should be numbered from 0; found {a.partition_index} at {i}.")
                validate_manual_assignment(image, list(a.broker_ids))
                if out and len(a.broker_ids) != len(out[0]):  # Kafka: one replication factor per topic
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"The manual partition assignment includes a partition with {len(a.broker_ids)} "
                                     f"replica(s), but this is not consistent with previous partitions, which have "
                                     f"{len(out[0])} replica(s).")
                out.append(list(a.broker_ids))
            return out
        partitions = self.defaults.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = self.defaults.replication_factor if t.replication_factor == -1 else t.replication_factor
        if partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive "
                                                           "value.")
        if rf <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        return replica_placer.place(usable_brokers, partitions, rf, rng=self.rng)

    # -- AlterPartition --------------------------------------------------------------------------
    def alter_partition(self, image: MetadataImage, req: AlterPartitionRequest, version: int,
                        usable: Callable[[int], bool]) -> tuple[list[ApiMessageAndVersion], AlterPartitionResponse]:
        resp = alter_partition.RESPONSE(topics=[])
        records: list[ApiMessageAndVersion] = []
        for t in req.topics:
            topic = image.topics.get(t.topic_id)
            out_t = alter_partition.RESPONSE.TopicData(topic_id=t.topic_id, partitions=[])
            resp.topics.append(out_t)
            for p in t.partitions:
                out_p = alter_partition.RESPONSE.PartitionData(partition_index=p.partition_index, isr=[])
                out_t.partitions.append(out_p)
                reg = topic.partitions.get(p.partition_index) if topic is not None else None
                if topic is None or reg is None:
                    out_p.error_code = ErrorCode.UNKNOWN_TOPIC_ID if topic is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                new_isr = [b.broker_id for b in p.new_isr_with_epochs] if version >= 3 else list(p.new_isr)
                error = self._check_alter(image, reg, req.broker_id, p, new_isr, version, usable)
                if error is not None:
                    out_p.error_code = error
                    continue
                if reg.adding_replicas or reg.removing_replicas:
                    # the ISR change may complete a reassignment, even move the leadership away:
                    # the leader is then told NEW_LEADER_ELECTED (Kafka: alterPartition)
                    built = change_record(t.topic_id, p.partition_index, reg, target_isr=new_isr, usable=usable,
                                          unclean=self.unclean(image, topic.name),
                                          target_leader_recovery=p.leader_recovery_state,
                                          elr=elr_rules.policy(image, topic.name))
                    if built is None:  # nothing to change (Kafka writes no record and answers the state)
                        self._answer(out_p, reg)
                        continue
                    rec = built
                    if rec.leader not in (req.broker_id, NO_LEADER_CHANGE):
                        records.append(_change(rec))
                        out_p.error_code = ErrorCode.NEW_LEADER_ELECTED
                        continue
                else:
                    rec = mr.PARTITION_CHANGE_RECORD(partition_id=p.partition_index, topic_id=t.topic_id,
                                                     isr=[r for r in reg.replicas if r in new_isr])
                    if p.leader_recovery_state != reg.leader_recovery_state:
                        rec.leader_recovery_state = p.leader_recovery_state
                    elr = elr_rules.policy(image, topic.name)
                    if elr is not None:  # KIP-966: a shrink below min ISR keeps who left eligible
                        elr_rules.alter_partition_fields(rec, reg, elr)
                records.append(_change(rec))
                self._answer(out_p, reg.merge(rec))
        return records, resp

    @staticmethod
    def _answer(out_p: AlterPartitionResponse.PartitionData, new: PartitionRegistration) -> None:
        out_p.leader_id, out_p.leader_epoch, out_p.isr = new.leader, new.leader_epoch, list(new.isr)
        out_p.leader_recovery_state, out_p.partition_epoch = new.leader_recovery_state, new.partition_epoch

    @staticmethod
    def _check_alter(image: MetadataImage, reg: PartitionRegistration, broker_id: int,
                     p: AlterPartitionRequest.PartitionData, new_isr: list[int], version: int,
                     usable: Callable[[int], bool]) -> int | None:
        """Kafka's per-partition checks of ReplicationControlManager.alterPartition, in its order."""
        if reg.leader != broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if p.leader_epoch != reg.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH if p.leader_epoch < reg.leader_epoch else ErrorCode.NOT_LEADER_OR_FOLLOWER
        if p.partition_epoch != reg.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        if not new_isr or any(r not in reg.replicas for r in new_isr) or broker_id not in new_isr:
            return ErrorCode.INVALID_REQUEST
        if p.leader_recovery_state == 1 and len(new_isr) > 1:  # RECOVERING admits the leader alone
            return ErrorCode.INVALID_REQUEST
        if reg.leader_recovery_state == 0 and p.leader_recovery_state == 1:
            return ErrorCode.INVALID_REQUEST
        for r in new_isr:
            if r in reg.isr:
                continue
            if not usable(r):
                return ErrorCode.INELIGIBLE_REPLICA
        if version >= 3:
            for b in p.new_isr_with_epochs:  # KIP-903: a replica that restarted since it fetched is not in sync
                reg_b = image.brokers.get(b.broker_id)
                if b.broker_epoch != -1 and reg_b is not None and reg_b.epoch != b.broker_epoch:
                    return ErrorCode.INELIGIBLE_REPLICA
        return None

    # -- a broker stops or starts being usable ---------------------------------------------------
    def broker_unusable(self, image: MetadataImage, broker_id: int,
                        usable: Callable[[int], bool]) -> list[ApiMessageAndVersion]:
        """Take `broker_id` out of every ISR and leadership (Kafka: handleBrokerFenced /
        handleBrokerInControlledShutdown / handleBrokerUnregistered)."""
        out = []
        for t in image.topics.values():
            unclean = self.unclean(image, t.name)
            for p, reg in sorted(t.partitions.items()):
                if broker_id not in reg.isr and reg.leader != broker_id:
                    continue
                rec = change_record(t.id, p, reg, target_isr=[r for r in reg.isr if r != broker_id],
                                    usable=usable, unclean=unclean, elr=elr_rules.policy(image, t.name))
                if rec is not None:
                    out.append(_change(rec))
        return out

    def broker_usable(self, image: MetadataImage, broker_id: int,
                      usable: Callable[[int], bool]) -> list[ApiMessageAndVersion]:
        """Elect leaders for leaderless partitions `broker_id` can now lead (Kafka: handleBrokerUnfenced)."""
        out = []
        for t in image.topics.values():
            unclean = self.unclean(image, t.name)
            for p, reg in sorted(t.partitions.items()):
                if reg.leader == NO_LEADER and broker_id in reg.replicas:
                    rec = change_record(t.id, p, reg, target_isr=reg.isr, usable=usable, unclean=unclean,
                                        elr=elr_rules.policy(image, t.name))
                    if rec is not None:
                        out.append(_change(rec))
        return out

    def broker_unclean_shutdown(self, image: MetadataImage, broker_id: int,
                                usable: Callable[[int], bool]) -> list[ApiMessageAndVersion]:
        """A broker registering again without its last epoch lost what it had not flushed: out of
        every ISR and ELR (KIP-966; Kafka: handleBrokerUncleanShutdown). Nothing when ELR is off."""
        out = []
        for t in image.topics.values():
            elr = elr_rules.policy(image, t.name, unclean_shutdown=(broker_id,))
            if elr is None:
                return []
            for p, reg in sorted(t.partitions.items()):
                if broker_id in reg.isr or broker_id in reg.elr:
                    rec = change_record(t.id, p, reg, target_isr=[r for r in reg.isr if r != broker_id],
                                        usable=usable, unclean=self.unclean(image, t.name), elr=elr)
                    if rec is not None:
                        out.append(_change(rec))
        return out

    # -- KIP-858 ---------------------------------------------------------------------------------
    def replica_leaves(self, image: MetadataImage, broker_id: int, usable: Callable[[int], bool]
                       ) -> Callable[[uuid.UUID, int, PartitionRegistration], mr.PartitionChangeRecord | None]:
        """The change taking `broker_id`'s replica out of a partition's ISR and leadership (Kafka:
        generateLeaderAndIsrUpdates with brokerToRemove, for handleDirectoriesOffline)."""
        def leave(topic_id: uuid.UUID, p: int, reg: PartitionRegistration) -> mr.PartitionChangeRecord | None:
            name = image.topics[topic_id].name
            return change_record(topic_id, p, reg, target_isr=[r for r in reg.isr if r != broker_id], usable=usable,
                                 unclean=self.unclean(image, name), elr=elr_rules.policy(image, name))
        return leave

    def directory_assigned(self, image: MetadataImage, broker_id: int, usable: Callable[[int], bool]
                           ) -> Callable[[uuid.UUID, int, PartitionRegistration, uuid.UUID],
                                         mr.PartitionChangeRecord | None]:
        """The change recording `broker_id`'s replica in a directory (Kafka: handleAssignReplicasToDirs'
        PartitionChangeBuilder.setDirectory; an election only if the leader is no longer acceptable)."""
        def assign(topic_id: uuid.UUID, p: int, reg: PartitionRegistration,
                   directory: uuid.UUID) -> mr.PartitionChangeRecord | None:
            name = image.topics[topic_id].name
            return change_record(topic_id, p, reg, target_isr=reg.isr, usable=usable, unclean=self.unclean(image, name),
                                 elr=elr_rules.policy(image, name), directory=(broker_id, directory))
        return assign

    @staticmethod
    def leaderships(image: MetadataImage, broker_id: int) -> int:
        return sum(1 for t in image.topics.values() for reg in t.partitions.values() if reg.leader == broker_id)
