"""Error responses built from requests (minibroker.faults.error_response): every API's, at every
version, encodes; the error lands on the entries the request names (Kafka's getErrorResponse)."""

from __future__ import annotations

import uuid

import pytest

from minibroker.faults import error_response as er
from minibroker_protocol.apis import (
    APIS,
    fetch,
    find_coordinator,
    join_group,
    metadata,
    offset_fetch,
    produce,
)
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID(int=7)


def resolve(topic_id: uuid.UUID) -> str | None:
    return "t" if topic_id == TOPIC_ID else None


def _produce_request():
    R = produce.REQUEST
    return R(acks=-1, timeout_ms=1000, topic_data=[
        R.TopicProduceData(name="t", topic_id=TOPIC_ID, partition_data=[
            R.PartitionProduceData(index=p, records=b"") for p in (0, 1, 2)]),
        R.TopicProduceData(name="u", partition_data=[R.PartitionProduceData(index=0, records=b"")])])


@pytest.mark.parametrize("key", sorted(APIS))
def test_every_api_error_response_encodes_at_every_version(key):
    api = APIS[key]
    for version in api.versions:
        resp = er.error_response(api.response.cls, api.request(), version, ErrorCode.NOT_COORDINATOR, resolve)
        body = encode(api.response, version, resp)
        again = decode(api.response, version, bytes(body))
        codes = list(er.iter_codes(again, version))
        if codes:  # an API with an error field carries the error somewhere
            assert ErrorCode.NOT_COORDINATOR in codes, (api.name, version)


@pytest.mark.parametrize("version", [3, 9, 13])
def test_produce_error_on_every_partition(version):
    resp = er.error_response(produce.RESPONSE.cls, _produce_request(), version, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             resolve)
    got = {(t.name if version < 13 else resolve(t.topic_id), p.index): (p.error_code, p.base_offset)
           for t in resp.responses for p in t.partition_responses}
    names = {("t", 0), ("t", 1), ("t", 2), ("u", 0)} if version < 13 else {("t", 0), ("t", 1), ("t", 2), (None, 0)}
    assert set(got) == names
    assert set(got.values()) == {(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}


def test_a_partition_filter_selects_one_partition_and_prune_leaves_the_rest():
    select = lambda path: dict(path).get("topic") == "t" and dict(path).get("partition") == 1  # noqa: E731
    req = _produce_request()
    resp = er.error_response(produce.RESPONSE.cls, req, 9, ErrorCode.REQUEST_TIMED_OUT, resolve, select)
    assert [(t.name, [p.index for p in t.partition_responses]) for t in resp.responses] == [("t", [1])]
    rest = er.copy_message(req)
    assert er.prune(rest, 9, resolve, select)
    assert [(t.name, [p.index for p in t.partition_data]) for t in rest.topic_data] == [("t", [0, 2]), ("u", [0])]
    assert [p.index for p in req.topic_data[0].partition_data] == [0, 1, 2]  # the copy was pruned, not the request
    # the handled rest's answer gets the error entry back, in its topic
    R = produce.RESPONSE
    real = R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
        R.PartitionProduceResponse(index=0, base_offset=10), R.PartitionProduceResponse(index=2, base_offset=20)]),
        R.TopicProduceResponse(name="u", partition_responses=[R.PartitionProduceResponse(index=0, base_offset=5)])])
    er.merge(real, resp, 9)
    assert [(t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in real.responses] == [
        ("t", [(0, 0), (2, 0), (1, ErrorCode.REQUEST_TIMED_OUT)]), ("u", [(0, 0)])]


def test_fetch_partition_error_leaves_the_top_alone_and_request_errors_go_on_top():
    R = fetch.REQUEST
    req = R(topics=[R.FetchTopic(topic="t", topic_id=TOPIC_ID, partitions=[R.FetchPartition(partition=0),
                                                                           R.FetchPartition(partition=1)])])
    resp = er.error_response(fetch.RESPONSE.cls, req, 12, ErrorCode.OFFSET_OUT_OF_RANGE, resolve)
    assert resp.error_code == 0
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in resp.responses[0].partitions] == [
        (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1), (1, ErrorCode.OFFSET_OUT_OF_RANGE, -1)]
    resp = er.error_response(fetch.RESPONSE.cls, req, 12, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, resolve)
    assert resp.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND  # and on every partition, as Kafka's
    assert {p.error_code for p in resp.responses[0].partitions} == {ErrorCode.FETCH_SESSION_ID_NOT_FOUND}
    # v13+ names the topic by id: the filter still finds it
    assert er.entries(req, 13, resolve) == [(("topic", "t"), ("partition", 0)), (("topic", "t"), ("partition", 1))]


def test_offset_fetch_v8_group_and_partitions_from_plain_partition_indexes():
    R = offset_fetch.REQUEST
    req = R(groups=[R.OffsetFetchRequestGroup(group_id="g", topics=[
        R.OffsetFetchRequestTopics(name="t", partition_indexes=[0, 3])])])
    resp = er.error_response(offset_fetch.RESPONSE.cls, req, 8, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, resolve)
    (g,) = resp.groups
    assert (g.group_id, g.error_code) == ("g", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert [(p.partition_index, p.error_code) for p in g.topics[0].partitions] == [
        (0, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), (3, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]


def test_find_coordinator_v4_one_entry_per_key_and_v3_on_top():
    R = find_coordinator.REQUEST
    resp = er.error_response(find_coordinator.RESPONSE.cls, R(key_type=1, coordinator_keys=["a", "b"]), 4,
                             ErrorCode.COORDINATOR_NOT_AVAILABLE, resolve)
    assert [(c.key, c.error_code, c.node_id) for c in resp.coordinators] == [
        ("a", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1), ("b", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)]
    resp = er.error_response(find_coordinator.RESPONSE.cls, R(key="g"), 3, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             resolve)
    assert (resp.error_code, resp.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)


def test_metadata_error_per_topic_and_join_group_on_top():
    R = metadata.REQUEST
    resp = er.error_response(metadata.RESPONSE.cls, R(topics=[R.MetadataRequestTopic(name="t")]), 12,
                             ErrorCode.LEADER_NOT_AVAILABLE, resolve)
    assert [(t.name, t.error_code, t.partitions) for t in resp.topics] == [("t", ErrorCode.LEADER_NOT_AVAILABLE, [])]
    J = join_group.REQUEST
    req = J(group_id="g", protocol_type="consumer", protocols=[J.JoinGroupRequestProtocol(name="range")])
    resp = er.error_response(join_group.RESPONSE.cls, req, 9, ErrorCode.REBALANCE_IN_PROGRESS, resolve)
    assert (resp.error_code, resp.members) == (ErrorCode.REBALANCE_IN_PROGRESS, [])


def test_entries_carry_the_requests_own_keys():
    from minibroker_protocol.apis import consumer_group_heartbeat

    req = consumer_group_heartbeat.REQUEST(group_id="g", member_id="m", topic_partitions=[])
    assert er.entries(req, 0, resolve) == [(("group", "g"),)]
    req = _produce_request()
    req.transactional_id = "tx"
    assert er.entries(req, 9, resolve)[0] == (("transactional_id", "tx"), ("topic", "t"), ("partition", 0))
