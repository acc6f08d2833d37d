"""AlterPartitionReassignments at the controller, for a new order of the same replicas (Kafka:
ReplicationControlManager.alterPartitionReassignments, changePartitionReassignment).

Kafka's tools move a partition's leadership to a named broker in two steps: reorder its replicas so
that broker comes first (kafka-reassign-partitions with the same replica set), then a preferred
leader election (kafka-leader-election --election-type PREFERRED). The first step changes no
replica set, so no data moves: the controller writes one PartitionChangeRecord with the new
`replicas` and keeps the leader (it is still in the ISR and the replicas; Kafka's
PartitionChangeBuilder keeps an acceptable leader). A reassignment that adds or removes replicas
(Kafka: adding replicas, catching up, then removing) is not built here: it is answered
INVALID_REPLICA_ASSIGNMENT with a message saying so; a cancellation (null replicas) finds no
reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS), as Kafka answers when none is.

ListPartitionReassignments reads the image as Kafka's controller does
(ReplicationControlManager.listPartitionReassignments): a partition is being reassigned while its
registration names adding or removing replicas (a Kafka controller in the same metadata log may
have written them); the reorders above complete in one record, so they are never listed.
"""

from __future__ import annotations

from minibroker.metadata.image import MetadataImage
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
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

PARTITION_CHANGE_RECORD_VERSION = 2


def alter_partition_reassignments(image: MetadataImage, req: AlterPartitionReassignmentsRequest
                                  ) -> tuple[list[ApiMessageAndVersion], AlterPartitionReassignmentsResponse]:
    resp = apr.RESPONSE(throttle_time_ms=0, allow_replication_factor_change=req.allow_replication_factor_change,
                        error_code=0, error_message=None, responses=[])
    records: list[ApiMessageAndVersion] = []
    for t in req.topics:
        out = apr.RESPONSE.ReassignableTopicResponse(name=t.name, partitions=[])
        resp.responses.append(out)
        topic = image.topic(t.name)
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            reg = topic.partitions.get(p.partition_index) if topic is not None else None
            if topic is None or reg is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            elif p.replicas is None:
                code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
            elif len(set(p.replicas)) != len(p.replicas):
                code, message = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Duplicate replica ids in partition reassignment replica list: {p.replicas}")
            elif unknown := [b for b in p.replicas if b not in image.brokers]:
                code, message = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {unknown[0]}, but no such "
                                 "broker is registered.")
            elif set(p.replicas) != set(reg.replicas):
                code, message = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "minibroker's controller reorders a partition's replicas only: adding or "
                                 f"removing replicas ({list(reg.replicas)} -> {p.replicas}) is not supported")
            elif tuple(p.replicas) != tuple(reg.replicas):
                records.append(ApiMessageAndVersion(mr.PARTITION_CHANGE_RECORD(
                    partition_id=p.partition_index, topic_id=topic.id, replicas=list(p.replicas)),
                    PARTITION_CHANGE_RECORD_VERSION))
            out.partitions.append(apr.RESPONSE.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=code, error_message=message))
    return records, resp


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
