"""The request checks of KIP-848 consumer groups (group/consumer_group_validation.py), without a
coordinator: each refusal is Kafka's error code and message (GroupMetadataManager's
throwIfConsumerGroupHeartbeatRequestIsInvalid / throwIfMemberEpochIsInvalid), and the
ListTransactions filter of txn/transaction_metadata.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from minibroker.coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupMember
from minibroker.coordinator.group.consumer_group_validation import (
    check_member_epoch,
    validate_heartbeat,
    validate_offset_fetch,
)
from minibroker.coordinator.txn.transaction_metadata import (
    TransactionMetadata,
    TransactionState,
    list_transaction_states,
)
from minibroker_protocol.apis import consumer_group_heartbeat
from minibroker_protocol.errors import ErrorCode, KafkaError

HB = consumer_group_heartbeat.REQUEST
ASSIGNORS = ("uniform", "range")


def join(**changes: Any) -> Any:
    req = HB(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=30_000,
             subscribed_topic_names=["t"], topic_partitions=[])
    for k, v in changes.items():
        setattr(req, k, v)
    return req


def refusal(req: Any, version: int = 1) -> tuple[int, str | None]:
    with pytest.raises(KafkaError) as e:
        validate_heartbeat(req, version, ASSIGNORS)
    return e.value.code, e.value.message


def test_a_well_formed_join_passes() -> None:
    validate_heartbeat(join(), 1, ASSIGNORS)
    validate_heartbeat(join(member_id=""), 0, ASSIGNORS)  # v0: the coordinator names the member


@pytest.mark.parametrize("changes, message", [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"group_id": ""}, "GroupId can't be empty."),
    ({"rack_id": " "}, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"topic_partitions": None}, "TopicPartitions must be empty when (re-)joining."),
    ({"subscribed_topic_names": None}, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."),
    ({"member_epoch": -2, "instance_id": None}, "InstanceId can't be null."),
    ({"member_epoch": -3}, "MemberEpoch is invalid: -3"),
])
def test_invalid_requests_are_refused_with_kafkas_message(changes: dict[str, Any], message: str) -> None:
    assert refusal(join(**changes)) == (ErrorCode.INVALID_REQUEST, message)


def test_unknown_assignor_and_bad_regex() -> None:
    code, message = refusal(join(server_assignor="sticky"))
    assert code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    code, message = refusal(join(subscribed_topic_names=None, subscribed_topic_regex="("))
    assert code == ErrorCode.INVALID_REGULAR_EXPRESSION and message is not None
    assert message.startswith("SubscribedTopicRegex `(` is not a valid regular expression: ")


def test_member_epoch_rules() -> None:
    tid = uuid.uuid4()
    g = ConsumerGroup("g")
    m = ConsumerGroupMember("m")
    g.add_member(m)
    g.update_current(m, epoch=5, state=m.state, assigned={tid: {0, 1}}, pending={})
    m.previous_member_epoch = 4
    check_member_epoch(m, 5, None)
    check_member_epoch(m, 4, {tid: {0}})  # a lost response retried: it owns a subset of its partitions
    for epoch, owned in ((6, None), (4, None), (4, {tid: {2}}), (3, {tid: {0}})):
        with pytest.raises(KafkaError) as e:
            check_member_epoch(m, epoch, owned)
        assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH
    assert validate_offset_fetch(g, "m", 5) == ErrorCode.NONE
    assert validate_offset_fetch(g, "m", 4) == ErrorCode.STALE_MEMBER_EPOCH
    assert validate_offset_fetch(g, "x", 5) == ErrorCode.UNKNOWN_MEMBER_ID
    assert validate_offset_fetch(g, None, -1) == ErrorCode.NONE
    assert validate_offset_fetch(None, "m", 5) == ErrorCode.NONE


def test_list_transaction_states_filters() -> None:
    def md(txn_id: str, pid: int, state: TransactionState, start: int) -> TransactionMetadata:
        return TransactionMetadata(txn_id, pid, producer_epoch=0, txn_timeout_ms=60_000, state=state,
                                   txn_start_timestamp=start)

    txns = [md("a", 1, TransactionState.ONGOING, 100), md("b", 2, TransactionState.EMPTY, -1),
            md("c", 3, TransactionState.DEAD, 100)]
    unknown, out = list_transaction_states(txns, [], [], -1, now=1_000)
    assert unknown == [] and [t.transactional_id for t in out] == ["a", "b"]  # Dead ones never listed
    unknown, out = list_transaction_states(txns, ["Ongoing", "Nope"], [], -1, now=1_000)
    assert unknown == ["Nope"] and [t.transactional_id for t in out] == ["a"]
    assert [t.transactional_id for t in list_transaction_states(txns, [], [2], -1, 1_000)[1]] == ["b"]
    assert [t.transactional_id for t in list_transaction_states(txns, ["Ongoing"], [], 900, 1_000)[1]] == []
    assert [t.transactional_id for t in list_transaction_states(txns, ["Ongoing"], [], 899, 1_000)[1]] == ["a"]
