"""The Kafka 4.x versions of Fetch (18), ListOffsets (11), Metadata (13), DescribeGroups (6),
DescribeCluster (2) and ListTransactions (2), over a raw socket.

Each test sends the new version over a raw socket and checks the fields it changed. Real clients
where one sends the version: kafka-python 3.0.12 (DescribeGroups v6, DescribeCluster v2,
ListTransactions v2; also Metadata v13 and ListOffsets v11 in its consumer) and confluent-kafka 2.16
(Metadata v13). None sends Fetch v18 (kafka-python fetches with v12, librdkafka with v16, the Java
client 3.9.1 stops at v17), so the raw socket is its only proof. EndTxn v5 and TxnOffsetCommit v5
are served with transaction.version 2 finalized (transactions v2: tests/reference/test_txn_v2_reference.py
and tests/reference/test_java_txn_v2.py); the ApiVersions test pins the levels down.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from minibroker_protocol.apis import (
    api_versions,
    describe_cluster,
    describe_groups,
    end_txn,
    fetch,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    produce,
    txn_offset_commit,
)
from minibroker_protocol.codec import encode
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import TIMEOUT, RawClient, create_topic, module_broker, records_batch, unique

E = ErrorCode
HW_NOT_SUPPORTED = (1 << 63) - 1


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def produce_values(raw: RawClient, topic: str, values: list[bytes]) -> None:
    R = produce.REQUEST
    resp = raw.call(produce.API, 9, R(transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[
        R.TopicProduceData(name=topic, partition_data=[R.PartitionProduceData(index=0,
                                                                             records=records_batch(values))])]))
    assert resp.responses[0].partition_responses[0].error_code == 0


def topic_id(mb, topic: str):
    return mb.call(lambda broker: broker.topics[topic].topic_id)


# ------------------------------------------------------------------------------------ ApiVersions
def test_api_versions_advertises_the_4x_versions_served(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                  client_software_version="1"))
    assert resp.error_code == 0
    top = {k.api_key: k.max_version for k in resp.api_keys}
    assert top[fetch.API.key] == 18
    assert top[list_offsets.API.key] == 11
    assert top[metadata.API.key] == 13
    assert top[describe_groups.API.key] == 6
    assert top[describe_cluster.API.key] == 2
    assert top[list_transactions.API.key] == 2
    # Transactions v2 (KIP-890 part 2): a client uses these with transaction.version >= 2
    # finalized, which this broker reports; TxnOffsetCommit v6 (KIP-1319's topic ids) as Kafka 4.4 (issue 35)
    assert top[end_txn.API.key] == 5
    assert top[txn_offset_commit.API.key] == 6
    assert {f.name: f.max_version_level for f in resp.finalized_features}["transaction.version"] == 2
    assert resp.finalized_features_epoch >= 0


# --------------------------------------------------------------------------------------- Metadata
def test_metadata_v13_has_a_top_level_error_code(kafka_broker_module):
    topic = unique("md13")
    create_topic(kafka_broker_module, topic, partitions=2)
    R = metadata.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(metadata.API, 13, R(topics=[R.MetadataRequestTopic(name=topic)],
                                            allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False))
    assert resp.error_code == 0
    [t] = resp.topics
    assert (t.error_code, t.name, t.topic_id) == (0, topic, topic_id(kafka_broker_module, topic))
    assert sorted(p.partition_index for p in t.partitions) == [0, 1]
    assert [b.node_id for b in resp.brokers] == [resp.controller_id]
    # The new field is two bytes at the end of the body, before the tag buffer.
    body13 = encode(metadata.RESPONSE, 13, resp).to_bytes()
    body12 = encode(metadata.RESPONSE, 12, resp).to_bytes()
    assert len(body13) == len(body12) + 2 and body13[-3:] == b"\x00\x00\x00"


# ---------------------------------------------------------------------------------- DescribeGroups
def test_describe_groups_v6_reports_a_missing_group(kafka_broker_module):
    gid = unique("no-group")
    R = describe_groups.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as raw:
        v6 = raw.call(describe_groups.API, 6, R(groups=[gid], include_authorized_operations=False))
        v5 = raw.call(describe_groups.API, 5, R(groups=[gid], include_authorized_operations=False))
    [g6], [g5] = v6.groups, v5.groups
    assert (g6.group_id, g6.error_code, g6.error_message, g6.group_state) == (
        gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.", "Dead")
    # Before v6 a missing group is a Dead group without an error (KIP-1043 changed only v6+).
    assert (g5.group_id, g5.error_code, g5.group_state) == (gid, 0, "Dead")


def test_describe_groups_v6_describes_an_existing_group(kafka_broker_module):
    topic, gid = unique("dg6"), unique("dg6-group")
    create_topic(kafka_broker_module, topic)
    C = offset_commit.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as raw:
        # A simple (generation -1) commit creates the group without members (state Empty).
        oc = raw.call(offset_commit.API, 8, C(group_id=gid, generation_id_or_member_epoch=-1, member_id="",
                                              group_instance_id=None, topics=[C.OffsetCommitRequestTopic(
                                                  name=topic, partitions=[C.OffsetCommitRequestPartition(
                                                      partition_index=0, committed_offset=0,
                                                      committed_metadata="")])]))
        assert oc.topics[0].partitions[0].error_code == 0
        resp = raw.call(describe_groups.API, 6, describe_groups.REQUEST(groups=[gid],
                                                                        include_authorized_operations=True))
    [g] = resp.groups
    assert (g.group_id, g.error_code, g.error_message, g.group_state, g.members) == (gid, 0, None, "Empty", [])
    assert g.authorized_operations > 0


# --------------------------------------------------------------------------------- DescribeCluster
@pytest.mark.parametrize("include_fenced", [False, True])
def test_describe_cluster_v2_lists_this_broker_unfenced(kafka_broker_module, include_fenced):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(describe_cluster.API, 2, describe_cluster.REQUEST(
            include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=include_fenced))
    assert (resp.error_code, resp.error_message, resp.endpoint_type) == (0, None, 1)
    [b] = resp.brokers
    host, port = kafka_broker_module.bootstrap.rsplit(":", 1)
    assert (b.broker_id, b.host, b.port, b.is_fenced) == (resp.controller_id, host, int(port), False)
    assert resp.cluster_id


def test_describe_cluster_v2_controller_endpoint_is_refused(kafka_broker_module):
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(describe_cluster.API, 2, describe_cluster.REQUEST(
            include_cluster_authorized_operations=False, endpoint_type=2, include_fenced_brokers=True))
    assert resp.error_code == E.MISMATCHED_ENDPOINT_TYPE
    assert resp.brokers == []


# -------------------------------------------------------------------------------- ListTransactions
@pytest.fixture(scope="module")
def two_txn_ids(kafka_broker_module):
    prefix = unique("ltx")
    ids = [f"{prefix}-alpha", f"{prefix}-beta"]
    producers = []
    for tid in ids:
        p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": tid})
        p.init_transactions(TIMEOUT)
        producers.append(p)
    yield prefix, ids
    for p in producers:
        p.flush(1)


def list_txns(mb, version: int, pattern: str | None) -> object:
    R = list_transactions.REQUEST
    with RawClient(mb.bootstrap) as raw:
        return raw.call(list_transactions.API, version, R(state_filters=[], producer_id_filters=[],
                                                         duration_filter=-1, transactional_id_pattern=pattern))


def test_list_transactions_v2_filters_by_pattern(kafka_broker_module, two_txn_ids):
    prefix, (alpha, beta) = two_txn_ids
    resp = list_txns(kafka_broker_module, 2, f"{prefix}-al.*")
    assert resp.error_code == 0
    assert [s.transactional_id for s in resp.transaction_states] == [alpha]
    assert resp.transaction_states[0].transaction_state == "Empty"
    both = list_txns(kafka_broker_module, 2, f"{prefix}-(alpha|beta)")
    assert sorted(s.transactional_id for s in both.transaction_states) == [alpha, beta]


@pytest.mark.parametrize("pattern", [None, ""])
def test_list_transactions_v2_without_pattern_lists_all(kafka_broker_module, two_txn_ids, pattern):
    _, ids = two_txn_ids
    resp = list_txns(kafka_broker_module, 2, pattern)
    assert resp.error_code == 0
    assert set(ids) <= {s.transactional_id for s in resp.transaction_states}


def test_list_transactions_v2_invalid_pattern(kafka_broker_module, two_txn_ids):
    resp = list_txns(kafka_broker_module, 2, "(unclosed")
    assert (resp.error_code, resp.transaction_states) == (E.INVALID_REGULAR_EXPRESSION, [])


# ------------------------------------------------------------------------------------- ListOffsets
def test_list_offsets_v11_earliest_pending_upload_without_remote_storage(kafka_broker_module):
    topic = unique("lo11")
    create_topic(kafka_broker_module, topic)
    R = list_offsets.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as raw:
        produce_values(raw, topic, [b"a", b"b", b"c"])

        def ask(ts: int) -> object:
            resp = raw.call(list_offsets.API, 11, R(replica_id=-1, isolation_level=0, timeout_ms=5_000, topics=[
                R.ListOffsetsTopic(name=topic, partitions=[R.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=-1, timestamp=ts)])]))
            return resp.topics[0].partitions[0]

        pending, tiered, latest, earliest = ask(-6), ask(-5), ask(-1), ask(-2)
    # KIP-1023: -6 asks for the earliest offset not yet uploaded to remote storage; without remote
    # storage Kafka's log answers "none", as it does for -5.
    for p in (pending, tiered):
        assert (p.error_code, p.timestamp, p.offset, p.leader_epoch) == (0, -1, -1, -1)
    assert (latest.error_code, latest.offset, latest.leader_epoch) == (0, 3, 0)
    assert (earliest.error_code, earliest.offset) == (0, 0)


# ------------------------------------------------------------------------------------------- Fetch
def fetch_v18(tid, offset: int, *, max_wait_ms: int, known_hw: int = HW_NOT_SUPPORTED) -> object:
    R = fetch.REQUEST
    return R(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
             session_epoch=-1, topics=[R.FetchTopic(topic_id=tid, partitions=[
                 R.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                                  high_watermark=known_hw)])],
             forgotten_topics_data=[], rack_id="")


def test_fetch_v18_high_watermark_is_a_tagged_request_field():
    tid = uuid.uuid4()
    base = encode(fetch.REQUEST, 18, fetch_v18(tid, 0, max_wait_ms=0)).to_bytes()
    tagged = encode(fetch.REQUEST, 18, fetch_v18(tid, 0, max_wait_ms=0, known_hw=5)).to_bytes()
    # tag 1, 8 bytes: one tagged-field count grows 0 -> 1 and tag + size + int64 are added.
    assert len(tagged) == len(base) + 1 + 1 + 8
    assert (5).to_bytes(8, "big") in tagged
    # Before v18 the field is not on the wire at all.
    assert encode(fetch.REQUEST, 17, fetch_v18(tid, 0, max_wait_ms=0, known_hw=5)).to_bytes() == \
        encode(fetch.REQUEST, 17, fetch_v18(tid, 0, max_wait_ms=0)).to_bytes()


@pytest.mark.parametrize(("known_hw", "waits"), [
    (HW_NOT_SUPPORTED, True),  # a consumer: long-polls as before
    (3, True),  # knows the current high watermark: nothing new to tell it
    (1, False),  # behind: answered at once (KIP-1166)
    (-1, False),  # does not know it: answered at once
])
def test_fetch_v18_a_fetcher_behind_on_the_high_watermark_does_not_wait(kafka_broker_module, known_hw, waits):
    topic = unique("f18")
    create_topic(kafka_broker_module, topic)
    tid = topic_id(kafka_broker_module, topic)
    wait_ms = 1500
    with RawClient(kafka_broker_module.bootstrap) as raw:
        produce_values(raw, topic, [b"x", b"y", b"z"])
        start = time.monotonic()
        resp = raw.call(fetch.API, 18, fetch_v18(tid, 3, max_wait_ms=wait_ms, known_hw=known_hw))
        took = time.monotonic() - start
    assert resp.error_code == 0
    [t] = resp.responses
    assert t.topic_id == tid
    [p] = t.partitions
    assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (0, 3, 3, 0)
    assert not p.records
    if waits:
        assert took >= wait_ms / 1000 * 0.9
    else:
        assert took < wait_ms / 1000 / 2


def test_fetch_v18_returns_records(kafka_broker_module):
    topic = unique("f18-data")
    create_topic(kafka_broker_module, topic)
    tid = topic_id(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        produce_values(raw, topic, [b"one", b"two"])
        resp = raw.call(fetch.API, 18, fetch_v18(tid, 0, max_wait_ms=0, known_hw=0))
    [p] = resp.responses[0].partitions
    assert (p.error_code, p.high_watermark) == (0, 2)
    assert b"one" in bytes(p.records) and b"two" in bytes(p.records)


# ------------------------------------------------------------------------- a real client: kafka-python
# kafka-python 3.0.12 ships Kafka 4.2's message definitions and picks the highest common version:
# against this broker it sends DescribeGroups v6, DescribeCluster v2, ListTransactions v2,
# Metadata v13 and ListOffsets v11 (its consumer fetches with v12).
@pytest.fixture(scope="module")
def kp_admin(kafka_broker_module):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_broker_module.bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    yield admin
    admin.close()


def test_kafka_python_describe_groups_sees_group_id_not_found(kafka_broker_module, kp_admin):
    missing = unique("kp-missing")
    got = kp_admin.describe_groups([missing])[missing]
    assert got["group_state"] == "Dead"
    assert "GroupIdNotFound" in got["error"] and f"Group {missing} not found." in got["error"]


def test_kafka_python_describe_cluster_reads_is_fenced(kafka_broker_module, kp_admin):
    got = kp_admin.describe_cluster()
    [b] = got["brokers"]
    assert (b["broker_id"], b["port"], b["is_fenced"]) == (got["controller_id"], int(kafka_broker_module.bootstrap.rsplit(":")[1]),
                                                           False)


def test_kafka_python_list_transactions_by_pattern(kafka_broker_module, kp_admin, two_txn_ids):
    prefix, (alpha, beta) = two_txn_ids
    listed = kp_admin.list_transactions(transactional_id_pattern=f"{prefix}-b.*")
    assert [(t.transactional_id, t.state.value) for ts in listed.values() for t in ts] == [(beta, "Empty")]


# ----------------------------------------------------------------------- a real client: confluent-kafka
class _Lines:
    """A librdkafka `logger`: keeps the debug lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: int, msg: str, *args: object) -> None:
        self.lines.append(msg % args if args else msg)


def test_confluent_kafka_sends_metadata_v13_and_reads_the_answer(kafka_broker_module):
    topic = unique("cf-md13")
    create_topic(kafka_broker_module, topic, partitions=3)
    logs = _Lines()
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "debug": "protocol", "logger": logs})
    try:
        md = p.list_topics(topic, timeout=TIMEOUT)
    finally:
        p.flush(1)
    assert md.topics[topic].error is None
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    assert any("Sent MetadataRequest (v13" in line for line in logs.lines), "librdkafka did not use v13"


def test_api_versions_leaves_out_share_groups_when_they_are_off(tmp_path):
    """group.share.enable=false: the share-group APIs are not served, so not advertised (v0 and
    v3 answers; before issue 22's handler table they were advertised and then refused)."""
    from minibroker.handlers.api_table import API_TABLE
    from minibroker.testing import BrokerThread

    # KIP-932's APIs: ShareGroupHeartbeat/Describe, ShareFetch/Acknowledge, the share-group offsets
    SHARE_GROUP_APIS = {76, 77, 78, 79, 90, 91, 92}
    assert {key for key, served in API_TABLE.items() if served.share_group} == SHARE_GROUP_APIS

    b = BrokerThread(tmp_path, overrides={"group.share.enable": "false"})
    b.start()
    try:
        with RawClient(b.bootstrap) as raw:
            for v in (0, 3):
                body = (api_versions.REQUEST(client_software_name="it-raw", client_software_version="1")
                        if v >= 3 else api_versions.REQUEST())
                resp = raw.call(api_versions.API, v, body)
                keys = {k.api_key for k in resp.api_keys}
                assert resp.error_code == 0 and fetch.API.key in keys
                assert not keys & SHARE_GROUP_APIS, sorted(keys & SHARE_GROUP_APIS)
    finally:
        b.stop()
