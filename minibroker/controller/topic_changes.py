"""DeleteTopics, CreatePartitions and ElectLeaders on the controller (Kafka: ReplicationControlManager's
deleteTopics, createPartitions and electLeaders, kept apart from replication_control.py to keep each
module small).

DeleteTopics writes a RemoveTopicRecord per topic (by id from v6, by name before), which also drops
its configs when replayed. CreatePartitions adds PartitionRecords numbered after the last one,
placed on the usable brokers by the striping placer (continuing the topic's stripe) or as the
request assigns them, each led by its first replica with every usable replica in the ISR.
ElectLeaders (type 0, PREFERRED) moves leadership to each partition's first replica when it is in
the ISR and usable: ELECTION_NOT_NEEDED if it already leads, PREFERRED_LEADER_NOT_AVAILABLE if it
cannot; type 1 (UNCLEAN) elects outside the ISR only for a partition without a leader. A null
partition list means every partition (what `kafka-leader-election --all-topic-partitions` sends).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from minibroker.controller import eligible_leader_replicas as elr_rules
from minibroker.controller import replica_placer
from minibroker.controller.directory_assignment import new_replica_dirs
from minibroker.controller.partition_change import change_record
from minibroker.metadata.image import MetadataImage, TopicImage
from minibroker.metadata.partition_registration import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import create_partitions as cp_api
from minibroker_protocol.apis import delete_topics as dt_api
from minibroker_protocol.apis import elect_leaders as el_api
from minibroker_protocol.apis.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from minibroker_protocol.apis.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from minibroker_protocol.apis.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion
from minibroker_protocol.schema import ZERO_UUID

PREFERRED, UNCLEAN = 0, 1  # ElectLeaders election_type (Kafka: ElectionType)


def delete_topics(image: MetadataImage, req: DeleteTopicsRequest,
                  version: int) -> tuple[list[ApiMessageAndVersion], DeleteTopicsResponse]:
    resp = dt_api.RESPONSE(responses=[])
    records: list[ApiMessageAndVersion] = []
    wanted = [(t.name, t.topic_id) for t in req.topics] if version >= 6 else [(n, ZERO_UUID) for n in req.topic_names]
    for name, topic_id in wanted:
        by_id = topic_id != ZERO_UUID
        topic = image.topics.get(topic_id) if by_id else (image.topic(name) if name is not None else None)
        result = dt_api.RESPONSE.DeletableTopicResult(name=name, topic_id=topic_id, error_code=0)
        resp.responses.append(result)
        if topic is None or any(r.message.topic_id == topic.id for r in records):  # type: ignore[attr-defined]
            result.error_code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = "This server does not host this topic ID." if by_id else \
                "This server does not host this topic-partition."
            continue
        result.name, result.topic_id = topic.name, topic.id
        records.append(ApiMessageAndVersion(mr.REMOVE_TOPIC_RECORD(topic_id=topic.id), 0))
    return records, resp


def create_partitions(image: MetadataImage, req: CreatePartitionsRequest, usable_brokers: list[int],
                      rng: random.Random) -> tuple[list[ApiMessageAndVersion], CreatePartitionsResponse]:
    resp = cp_api.RESPONSE(results=[])
    records: list[ApiMessageAndVersion] = []
    for t in req.topics:
        result = cp_api.RESPONSE.CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        resp.results.append(result)
        try:
            topic = image.topic(t.name)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")
            current = len(topic.partitions)
            if t.count < current:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {current} partitions, which is "
                                                               f"higher than the requested {t.count}.")
            if t.count == current:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
            new = _new_assignments(image, topic, t, usable_brokers, rng)
        except KafkaError as e:
            result.error_code, result.error_message = e.code, e.message
            continue
        if req.validate_only:
            continue
        for i, replicas in enumerate(new):
            isr = [r for r in replicas if r in usable_brokers]
            reg = PartitionRegistration(tuple(replicas), tuple(isr), isr[0] if isr else NO_LEADER,
                                        directories=new_replica_dirs(image, replicas))  # KIP-858
            records.append(ApiMessageAndVersion(reg.to_record(topic.id, current + i), 2))
    return records, resp


def _new_assignments(image: MetadataImage, topic: TopicImage, t: CreatePartitionsRequest.CreatePartitionsTopic,
                     usable_brokers: list[int], rng: random.Random) -> list[list[int]]:
    current = len(topic.partitions)
    rf = len(next(iter(topic.partitions.values())).replicas)
    if t.assignments is None:
        return replica_placer.place(usable_brokers, t.count - current, rf, start_partition=current, rng=rng)
    if len(t.assignments) != t.count - current:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Attempted to add {t.count - current} additional partition(s), but only "
                         f"{len(t.assignments)} assignment(s) were specified.")
    out = []
    for a in t.assignments:
        if len(a.broker_ids) != rf or len(set(a.broker_ids)) != rf:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(set(a.broker_ids))} "
                             f"replica(s), but this is not consistent with previous partitions, which have {rf} "
                             "replica(s).")
        unknown = [b for b in a.broker_ids if b not in image.brokers]
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes broker {unknown[0]}, but no such broker is "
                             "registered.")
        out.append(list(a.broker_ids))
    return out


def elect_leaders(image: MetadataImage, req: ElectLeadersRequest, version: int,
                  usable: Callable[[int], bool]) -> tuple[list[ApiMessageAndVersion], ElectLeadersResponse]:
    resp = el_api.RESPONSE(error_code=0, replica_election_results=[])
    records: list[ApiMessageAndVersion] = []
    election = req.election_type if version >= 1 else PREFERRED
    if req.topic_partitions is None:
        wanted = [(t.name, sorted(t.partitions)) for t in sorted(image.topics.values(), key=lambda t: t.name)]
    else:
        wanted = [(tp.topic, list(tp.partitions)) for tp in req.topic_partitions]
    for name, partitions in wanted:
        topic = image.topic(name)
        out = el_api.RESPONSE.ReplicaElectionResult(topic=name, partition_result=[])
        resp.replica_election_results.append(out)
        for p in partitions:
            result = el_api.RESPONSE.PartitionResult(partition_id=p, error_code=0, error_message=None)
            out.partition_result.append(result)
            reg = topic.partitions.get(p) if topic is not None else None
            if topic is None or reg is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = "This server does not host this topic-partition."
                continue
            record = _elect(topic, p, reg, election, usable, elr_rules.policy(image, name))
            if isinstance(record, int):
                result.error_code = record
                result.error_message = _ELECTION_MESSAGES.get(record)
            else:
                records.append(ApiMessageAndVersion(record, 2))
    return records, resp


_ELECTION_MESSAGES: dict[int, str] = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "Failed to elect leader for topic partition.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Failed to elect leader for topic partition.",
}


def _elect(topic: TopicImage, p: int, reg: PartitionRegistration, election: int,
           usable: Callable[[int], bool], elr: elr_rules.ElrPolicy | None) -> mr.PartitionChangeRecord | int:
    """The record of the election, or the error code that says why there is none. An UNCLEAN one
    keeps ELR's order (Kafka: electAnyLeader): the ISR, the unfenced ELR, the last known leader,
    then any live replica."""
    if election == PREFERRED:
        preferred = reg.replicas[0]
        if reg.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED
        if preferred not in reg.isr or not usable(preferred):
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        return mr.PARTITION_CHANGE_RECORD(partition_id=p, topic_id=topic.id, leader=preferred)
    if reg.leader != NO_LEADER:
        return ErrorCode.ELECTION_NOT_NEEDED
    record = change_record(topic.id, p, reg, target_isr=reg.isr, usable=usable, unclean=True, elr=elr)
    if record is None or record.leader == NO_LEADER_CHANGE or record.leader == NO_LEADER:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    return record
