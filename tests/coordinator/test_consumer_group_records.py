"""KIP-848 records: Kafka's bytes (a null tagged ClassicMemberMetadata is not written: Kafka 4.4's
kafka-dump-log failed on our first version that wrote it) and a round trip through the decoder."""

import uuid

from minibroker.coordinator.group import consumer_group_records as r


def test_member_metadata_golden_bytes_and_round_trip():
    k, v = r.member_metadata("g", "m", instance_id=None, rack_id=None, client_id="c1", client_host="/127.0.0.1",
                             topic_names=["t"], topic_regex=None, rebalance_timeout_ms=300000, server_assignor=None)
    assert k == bytes.fromhex("0005" "0001" "67" "0001" "6d")
    assert v == bytes.fromhex("0000" "00" "00" "0363 31" "0b2f3132372e302e302e31" "02 0274" "00" "000493e0" "00" "00"
                              .replace(" ", ""))
    got = r.decode_consumer_group_record(k, v)
    assert (got.type, got.group, got.sub_key, got.value.client_id, got.value.classic_member_metadata) == \
        (r.MEMBER_METADATA, "g", "m", "c1", None)


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
