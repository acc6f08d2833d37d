"""KIP-848 records: Kafka's bytes and a round trip through the decoder. A null tagged
ClassicMemberMetadata is written as Kafka 4.4 writes it: tag 0, size 1, varint marker 0 (our first
version wrote a byte -1, which Kafka's kafka-dump-log could not read; the second left the tag out,
which Kafka reads as an empty classic member, and could not read Kafka's marker: issue 37, a
KIP-848 member unknown to minibroker after the coordinator moved from Kafka)."""

import uuid

from minibroker.coordinator.group import consumer_group_records as r
from minibroker.coordinator.group.consumer_group_replay import replay


def test_member_metadata_golden_bytes_and_round_trip():
    k, v = r.member_metadata("g", "m", instance_id=None, rack_id=None, client_id="c1", client_host="/127.0.0.1",
                             topic_names=["t"], topic_regex=None, rebalance_timeout_ms=300000, server_assignor=None)
    assert k == bytes.fromhex("0005" "0001" "67" "0001" "6d")
    assert v == bytes.fromhex("0000" "00" "00" "0363 31" "0b2f3132372e302e302e31" "02 0274" "00" "000493e0" "00"
                              "01 00 01 00".replace(" ", ""))
    got = r.decode_consumer_group_record(k, v)
    assert (got.type, got.group, got.sub_key, got.value.client_id, got.value.classic_member_metadata) == \
        (r.MEMBER_METADATA, "g", "m", "c1", None)


def test_member_metadata_as_kafka_4_4_wrote_it():
    """A confluent-kafka member's record from Kafka 4.4's __consumer_offsets (kafka-dump-log:
    subscribedTopicRegex "", serverAssignor null, classicMemberMetadata null)."""
    k = bytes.fromhex("0005000b636f6f72642d67726f75700016576f495745455a6e546971434758674769567a4b6767")
    v = bytes.fromhex("000000000872646b61666b610b2f3132372e302e302e31020c636f6f72642d6d6f76657301000493e000"
                      "01000100")
    got = r.decode_consumer_group_record(k, v)
    assert (got.group, got.sub_key, got.value.client_id, got.value.subscribed_topic_names,
            got.value.rebalance_timeout_ms, got.value.classic_member_metadata) == \
        ("coord-group", "WoIWEEZnTiqCGXgGiVzKgg", "rdkafka", ["coord-moves"], 300000, None)
    assert r.member_metadata("coord-group", "WoIWEEZnTiqCGXgGiVzKgg", instance_id=None, rack_id=None,
                             client_id="rdkafka", client_host="/127.0.0.1", topic_names=["coord-moves"],
                             topic_regex="", rebalance_timeout_ms=300000, server_assignor=None) == (k, v)


def test_classic_member_metadata_round_trip():
    k, v = r.member_metadata("g", "m", instance_id=None, rack_id=None, client_id="c1", client_host="h",
                             topic_names=["t"], topic_regex=None, rebalance_timeout_ms=1000, server_assignor=None,
                             classic=(45000, [("range", b"\x00\x01")]))
    cm = r.decode_consumer_group_record(k, v).value.classic_member_metadata
    assert (cm.session_timeout_ms, [(p.name, bytes(p.metadata)) for p in cm.supported_protocols]) == \
        (45000, [("range", b"\x00\x01")])


def test_current_assignment_round_trip():
    tid = uuid.uuid4()
    k, v = r.current_member_assignment("g", "m", epoch=3, previous_epoch=1, state=1, assigned={tid: {0, 1}},
                                       pending_revocation={tid: {2}})
    got = r.decode_consumer_group_record(k, v)
    assert (got.value.member_epoch, got.value.previous_member_epoch, got.value.state) == (3, 1, 1)
    assert r.assignment_of(got.value.assigned_partitions) == {tid: {0, 1}}
    assert r.assignment_of(got.value.partitions_pending_revocation) == {tid: {2}}


def test_current_assignment_carries_assignment_epochs_and_old_records_default_to_the_member_epoch():
    tid = uuid.uuid4()
    k, v = r.current_member_assignment("g", "m", epoch=5, previous_epoch=4, state=0, assigned={tid: {0, 1}},
                                       pending_revocation={tid: {2}}, epochs={(tid, 0): 3, (tid, 1): 5, (tid, 2): 4})
    got = r.decode_consumer_group_record(k, v).value
    assert [(tp.partitions, tp.assignment_epochs) for tp in got.assigned_partitions] == [([0, 1], [3, 5])]
    assert r.assignment_epochs_of(got.partitions_pending_revocation, 5) == {(tid, 2): 4}
    # a record written without them (before Kafka 4.3, or by minibroker before them): the member
    # epoch, never below 0; a list of the wrong length is ignored the same way
    T = type(got.assigned_partitions[0])
    assert r.assignment_epochs_of([T(topic_id=tid, partitions=[0, 1], assignment_epochs=None)], 7) == \
        {(tid, 0): 7, (tid, 1): 7}
    assert r.assignment_epochs_of([T(topic_id=tid, partitions=[0, 1], assignment_epochs=[2])], -2) == \
        {(tid, 0): 0, (tid, 1): 0}


def test_a_member_record_without_the_tag_replays_as_a_consumer_protocol_member():
    """minibroker before issue 37 left the null tag out; the decoder then gives Kafka's empty
    struct, which the replay takes for "not classic" (a classic member has a session timeout)."""
    k, _ = r.member_metadata("g", "m", instance_id=None, rack_id=None, client_id="c1", client_host="/127.0.0.1",
                             topic_names=["t"], topic_regex=None, rebalance_timeout_ms=300000, server_assignor=None)
    old = bytes.fromhex("0000" "00" "00" "036331" "0b2f3132372e302e302e31" "020274" "00" "000493e0" "00" "00")
    groups: dict = {}
    replay(groups, k, old)
    assert groups["g"].members["m"].classic is None
