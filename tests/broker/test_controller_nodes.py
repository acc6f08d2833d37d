"""Which controller a broker talks to in a quorum of several (minibroker/metadata/controller_nodes.py)
and when an answer means "not the active controller" (controller_channel.answers_not_controller)."""

from __future__ import annotations

import uuid

from minibroker.metadata.controller_channel import answers_not_controller
from minibroker.metadata.controller_nodes import ControllerNodeProvider
from minibroker_protocol.apis import broker_heartbeat, create_topics
from minibroker_protocol.errors import ErrorCode

A, B, C = ("h", 1), ("h", 2), ("h", 3)


def test_the_voters_in_turn_until_a_leader_is_named_then_the_leader() -> None:
    nodes = ControllerNodeProvider({100: A, 101: B, 102: C})
    assert nodes.several and nodes.target() == A
    nodes.on_failure(A)  # refused or NOT_CONTROLLER: the next voter
    assert nodes.target() == B
    g = nodes.generation
    nodes.on_leader(102)
    assert nodes.target() == C and nodes.leader_id == 102 and nodes.generation > g
    nodes.on_failure(B)  # a late failure of a channel still on B changes nothing
    assert nodes.target() == C
    nodes.on_failure(C)  # the leader died: forgotten, and the one after it is tried
    assert nodes.leader_id is None and nodes.target() == A


def test_bootstrap_servers_learn_the_leaders_address_from_the_fetch() -> None:
    nodes = ControllerNodeProvider({}, [A, B])
    nodes.on_leader(7)  # an id without an address: nothing to go to yet
    assert nodes.target() == A and nodes.leader_id is None
    nodes.on_leader(7, ("h", 9))  # KIP-853 NodeEndpoints named it
    assert nodes.target() == ("h", 9)


def test_a_single_controller_is_not_several() -> None:
    nodes = ControllerNodeProvider.single(*A)
    nodes.on_failure(A)
    assert not nodes.several and nodes.target() == A


def test_not_controller_anywhere_in_an_answer() -> None:
    hb = broker_heartbeat.RESPONSE(error_code=ErrorCode.NOT_CONTROLLER)
    assert answers_not_controller(hb)
    assert not answers_not_controller(broker_heartbeat.RESPONSE(error_code=ErrorCode.NONE))
    R = create_topics.RESPONSE
    per_topic = R(topics=[R.CreatableTopicResult(name="a", topic_id=uuid.uuid4(), error_code=0),
                          R.CreatableTopicResult(name="b", topic_id=uuid.uuid4(), error_code=ErrorCode.NOT_CONTROLLER)])
    assert answers_not_controller(per_topic)
    per_topic.topics[1].error_code = ErrorCode.TOPIC_ALREADY_EXISTS
    assert not answers_not_controller(per_topic)
