"""AlterPartitionReassignments and ListPartitionReassignments at the controller (Kafka:
ReplicationControlManager.alterPartitionReassignments, changePartitionReassignment,
cancelPartitionReassignment, listPartitionReassignments; KIP-455).

A target replica list is checked as Kafka checks a manual assignment (not empty, every broker
registered, none twice; with v1's `allow_replication_factor_change` false, as many replicas as
the partition is headed for), then becomes one PartitionChangeRecord built by partition_change:
the target followed by the replicas leaving, with `adding_replicas` and `removing_replicas` (the
stages are told in minibroker.controller.reassignment_replicas). A reassignment that adds no
replica (a new order, fewer replicas) completes in that same record; one that adds replicas
completes when the leader's AlterPartition brings them all into the ISR. Null replicas cancel:
the original replicas come back and the added ones leave the ISR; a cancellation that would leave
no ISR member needs `unclean.leader.election.enable`, as in Kafka.

ListPartitionReassignments reads the image: a partition is being reassigned while its
registration names adding or removing replicas (a Kafka controller in the same metadata log may
have written them too).
"""

from __future__ import annotations

from collections.abc import Callable

from minibroker.controller.partition_change import change_record
from minibroker.controller.reassignment_replicas import ReassignmentReplicas, ReassignmentRevert
from minibroker.metadata.image import MetadataImage, TopicImage
from minibroker.metadata.partition_registration import PartitionRegistration
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import alter_partition_reassignments as apr
from minibroker_protocol.apis import list_partition_reassignments as lpr
from minibroker_protocol.apis.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from minibroker_protocol.apis.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

PARTITION_CHANGE_RECORD_VERSION = 2
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."  # Kafka: Errors.NO_REASSIGNMENT_IN_PROGRESS


def alter_partition_reassignments(image: MetadataImage, req: AlterPartitionReassignmentsRequest,
                                  usable: Callable[[int], bool], unclean: Callable[[str], bool]
                                  ) -> tuple[list[ApiMessageAndVersion], AlterPartitionReassignmentsResponse]:
    """The records of every accepted partition and the answer (Kafka answers per partition and
    writes the accepted ones atomically). `unclean(topic)` is the topic's
    unclean.leader.election.enable."""
    resp = apr.RESPONSE(throttle_time_ms=0, allow_replication_factor_change=req.allow_replication_factor_change,
                        error_code=0, error_message=None, responses=[])
    records: list[ApiMessageAndVersion] = []
    for t in req.topics:
        out = apr.RESPONSE.ReassignableTopicResponse(name=t.name, partitions=[])
        resp.responses.append(out)
        topic = image.topic(t.name)
        for p in t.partitions:
            code: int = ErrorCode.NONE
            message: str | None = None
            try:
                record = _reassign(image, t.name, topic, p, req.allow_replication_factor_change, usable, unclean)
            except KafkaError as e:
                code, message = e.code, e.message
            else:
                if record is not None:
                    records.append(ApiMessageAndVersion(record, PARTITION_CHANGE_RECORD_VERSION))
            out.partitions.append(apr.RESPONSE.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=code, error_message=message))
    return records, resp


def _reassign(image: MetadataImage, name: str, topic: TopicImage | None,
              p: AlterPartitionReassignmentsRequest.ReassignablePartition,
              allow_rf_change: bool, usable: Callable[[int], bool],
              unclean: Callable[[str], bool]) -> mr.PartitionChangeRecord | None:
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}.")
    reg = topic.partitions.get(p.partition_index)
    if reg is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{p.partition_index}.")
    if p.replicas is None:
        return _cancel(name, topic, p.partition_index, reg, usable, unclean(name))
    target = list(p.replicas)
    validate_manual_assignment(image, target)
    if not allow_rf_change:
        _check_replication_factor_unchanged(reg, target)
    moving = ReassignmentReplicas.moving(reg.replicas, target)
    # Kafka's builder keeps a partition's adding/removing lists unless the move names new ones
    lists = ReassignmentReplicas(moving.replicas, moving.adding or reg.adding_replicas,
                                 moving.removing or reg.removing_replicas)
    return change_record(topic.id, p.partition_index, reg, target_isr=reg.isr, usable=usable, target=lists)


def _cancel(name: str, topic: TopicImage, index: int, reg: PartitionRegistration, usable: Callable[[int], bool],
            unclean: bool) -> mr.PartitionChangeRecord | None:
    if not (reg.adding_replicas or reg.removing_replicas):
        raise KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE)
    revert = ReassignmentRevert.of(reg)
    if revert.unclean and not unclean:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for "
                         f"{name}:{index} because it would require an unclean leader election.")
    return change_record(topic.id, index, reg, target_isr=revert.isr, usable=usable, unclean=unclean,
                         target=ReassignmentReplicas(revert.replicas))


def validate_manual_assignment(image: MetadataImage, replicas: list[int]) -> None:
    """Kafka's validateManualPartitionAssignment: not empty, then in id order every broker
    registered and none twice."""
    if not replicas:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    previous = None
    for b in sorted(replicas):
        if b not in image.brokers:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                             f"broker {b}, but no such broker is registered.")
        if b == previous:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes the broker {b} more than once.")
        previous = b


def _check_replication_factor_unchanged(reg: PartitionRegistration, target: list[int]) -> None:
    """KIP-860 (AlterPartitionReassignments v1, allow_replication_factor_change=false): the target
    has as many replicas as the partition is headed for (Kafka:
    validatePartitionReplicationFactorUnchanged)."""
    if reg.adding_replicas or reg.removing_replicas:
        current = len((set(reg.replicas) | set(reg.adding_replicas)) - set(reg.removing_replicas))
    else:
        current = len(reg.replicas)
    if current != len(target):
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"The replication factor is changed from {current} to {len(target)}")


def list_partition_reassignments(image: MetadataImage, req: ListPartitionReassignmentsRequest
                                 ) -> ListPartitionReassignmentsResponse:
    """The ongoing reassignments among the partitions asked (all when `topics` is null); a topic or
    partition that does not exist is left out, as Kafka's controller leaves it out."""
    resp = lpr.RESPONSE(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
    wanted: dict[str, list[int] | None]
    if req.topics is None:
        wanted = {t.name: None for t in sorted(image.topics.values(), key=lambda t: t.name)}
    else:
        wanted = {t.name: list(t.partition_indexes) for t in req.topics}
    for name, indexes in wanted.items():
        topic = image.topic(name)
        if topic is None:
            continue
        ongoing = []
        for index in (sorted(topic.partitions) if indexes is None else indexes):
            reg = topic.partitions.get(index)
            if reg is not None and (reg.adding_replicas or reg.removing_replicas):
                ongoing.append(lpr.RESPONSE.OngoingPartitionReassignment(
                    partition_index=index, replicas=list(reg.replicas),
                    adding_replicas=list(reg.adding_replicas), removing_replicas=list(reg.removing_replicas)))
        if ongoing:
            resp.topics.append(lpr.RESPONSE.OngoingTopicReassignment(name=name, partitions=ongoing))
    return resp
