"""The checks a consumer group makes of its requests (Kafka: GroupMetadataManager's
throwIfConsumerGroupHeartbeatRequestIsInvalid and throwIfMemberEpochIsInvalid, and
ConsumerGroup.validateOffsetCommit / validateOffsetFetch).

Theory of operation: each check raises (or, for OffsetFetch, returns) the error Kafka gives, with
Kafka's message, before the request changes anything; the heartbeat then runs its steps knowing
the request is well formed and the member's epoch is one it may use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.group.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
)
from minibroker_protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minibroker_protocol.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest


class InvalidRequest(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_REQUEST, message)


def validate_heartbeat(req: ConsumerGroupHeartbeatRequest, version: int, assignors: tuple[str, ...]) -> None:
    """Kafka: throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    if version >= 1 and not req.member_id:
        raise InvalidRequest("MemberId can't be empty.")
    if not req.group_id:
        raise InvalidRequest("GroupId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        raise InvalidRequest("RackId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        raise InvalidRequest("InstanceId can't be empty.")
    if req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not req.member_id:
            raise InvalidRequest("MemberId can't be empty.")
    elif req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise InvalidRequest("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise InvalidRequest("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise InvalidRequest("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not req.member_id:
            raise InvalidRequest("MemberId can't be empty.")
        if req.instance_id is None:
            raise InvalidRequest("InstanceId can't be null.")
    else:
        raise InvalidRequest(f"MemberEpoch is invalid: {req.member_epoch}")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                         f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                         f"{', '.join(assignors)}.")
    if req.subscribed_topic_regex is not None:
        try:
            re.compile(req.subscribed_topic_regex)
        except re.error as e:
            raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                             f"expression: {e}.") from None


def check_member_epoch(m: ConsumerGroupMember, epoch: int, owned: Assignment | None) -> None:
    """Kafka: throwIfMemberEpochIsInvalid."""
    if epoch > m.member_epoch:
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                         f"The consumer group member has a greater member epoch ({epoch}) than the one "
                         f"known by the group coordinator ({m.member_epoch}). The member must abandon "
                         f"all its partitions and rejoin.")
    if epoch < m.member_epoch:
        subset = owned is not None and all(ps <= m.assigned.get(t, set()) for t, ps in owned.items())
        if epoch != m.previous_member_epoch or not subset:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a smaller member epoch ({epoch}) than the "
                             f"one known by the group coordinator ({m.member_epoch}). The member must "
                             f"abandon all its partitions and rejoin.")


def validate_offset_commit(g: ConsumerGroup, member_id: str, epoch: int, api_version: int, transactional: bool,
                           instance_id: str | None, partitions: Iterable[tuple[str, int]],
                           topics: TopicsMetadata | None) -> ConsumerGroupMember | None:
    """Kafka 4.4: ConsumerGroup.validateOffsetCommit. A commit at the member's epoch passes; one
    at an older epoch passes only when every partition in `partitions` (topic name, index) is
    the member's (owned or being revoked) since that epoch or before; a newer epoch never does.
    A refused partition refuses the whole request, as in Kafka (OffsetMetadataManager). The
    member, whose session the commit restarts, or None when the commit names none."""
    if epoch < 0 and not g.members:
        return None  # an admin, or a consumer without group management, on an empty group
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return None  # a transactional producer that names no member (Kafka 4.4: same)
    m = g.members.get(member_id)
    if m is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
    if not transactional and api_version < 9 and m.classic is None:
        # a classic-protocol member commits with its generation (= member epoch) at any version
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by "
                                                        "members using the consumer group protocol")
    # a classic-protocol member hears ILLEGAL_GENERATION; so does TxnOffsetCommit up to v5,
    # which has no STALE_MEMBER_EPOCH (Kafka: OffsetMetadataManager maps it)
    stale = (ErrorCode.ILLEGAL_GENERATION if transactional or m.classic is not None
             else ErrorCode.STALE_MEMBER_EPOCH)
    if epoch > m.member_epoch:
        raise KafkaError(stale, f"Received member epoch {epoch} is newer than current member epoch "
                                f"{m.member_epoch}.")
    if epoch < m.member_epoch:
        for name, p in partitions:
            topic = topics.get(name) if topics is not None else None
            assigned = m.assignment_epoch(topic.topic_id, p) if topic is not None else None
            if assigned is None:
                raise KafkaError(stale, f"Partition {name}-{p} is not assigned or pending revocation for member.")
            if epoch < assigned:
                raise KafkaError(stale, f"Received member epoch {epoch} is older than assignment epoch "
                                        f"{assigned} for partition {name}-{p}.")
    return m


def validate_offset_fetch(g: ConsumerGroup | None, member_id: str | None, epoch: int) -> int:
    """OffsetFetch v9+ from a member (ConsumerGroup.validateOffsetFetch): a request naming a
    member id must come from a member of the group, at its epoch; without a member id (an
    admin, a consumer without group management), or with epoch -1 on an empty group, it may
    read. Kafka 4.4 answers ("", -1) on a group with members UNKNOWN_MEMBER_ID too."""
    if g is None or member_id is None or (epoch < 0 and not g.members):
        return ErrorCode.NONE
    m = g.members.get(member_id)
    if m is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if epoch != m.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE
