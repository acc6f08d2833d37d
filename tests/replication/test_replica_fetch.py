"""The leader's side of a replica Fetch and a follower's restart (issue 29): CLUSTER_ACTION,
zero-copy regions for followers, the follower's HW from `replication-offset-checkpoint`."""

from __future__ import annotations

import asyncio

import pytest

from minibroker.network.node_connection import NodeConnection
from minibroker.replica_manager import FetchPartition, FetchReplica
from minibroker.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minibroker.testing import AsyncBroker
from minibroker_protocol.apis import fetch
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_storage.checkpoint import OffsetCheckpointFile
from minibroker_storage.file_region import FileRegion

from .cluster_helpers import InProcessController, log_bytes, start_brokers, wait_until

pytestmark = pytest.mark.timeout(120)
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _batch(n: int) -> bytes:
    return build_batch([Record(offset_delta=i, value=b"v%d" % i) for i in range(n)], base_timestamp=1)


def _fetch(topic_id, replica_id: int, version: int = 17) -> fetch.FetchRequest:
    F = fetch.REQUEST
    req = F(replica_id=replica_id if version < 15 else -1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
            isolation_level=0, session_id=0, session_epoch=-1, topics=[F.FetchTopic(topic_id=topic_id, partitions=[
                F.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                 partition_max_bytes=1 << 20)])])
    if version >= 15:
        req.replica_state = F.ReplicaState(replica_id=replica_id, replica_epoch=7)
    return req


async def test_replica_fetch_needs_cluster_action(tmp_path):
    """Kafka's KafkaApis: a follower's fetch needs CLUSTER_ACTION on the cluster, else every
    partition is TOPIC_AUTHORIZATION_FAILED; a consumer's needs READ on the topic."""
    b = AsyncBroker(tmp_path / "b", overrides={"authorizer.class.name": AUTHORIZER,
                                               "allow.everyone.if.no.acl.found": True})
    await b.start()
    try:
        topic = b.broker.topics.create("acl", 1)
        # an ACL on the cluster for someone else: ANONYMOUS may not CLUSTER_ACTION; the topic has none
        b.broker.authorizer.create([AclBinding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, "User:admin",
                                               "*", AclOperation.CLUSTER_ACTION, AclPermissionType.ALLOW)])
        host, port = b.bootstrap.rsplit(":", 1)
        conn = NodeConnection(host, int(port), "acl-test")
        await conn.connect()
        try:
            for version in (17, 14):
                resp = await conn.request(fetch.API, version, _fetch(topic.topic_id, 2, version))
                assert resp.responses[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            resp = await conn.request(fetch.API, 17, _fetch(topic.topic_id, -1))
            assert resp.responses[0].partitions[0].error_code == 0
        finally:
            await conn.close()
    finally:
        await b.stop()


@pytest.fixture
async def cluster(tmp_path):
    brokers = await start_brokers(tmp_path, 2)
    try:
        yield InProcessController(brokers)
    finally:
        for b in brokers.values():
            await b.stop()


async def test_follower_reads_to_the_leo_from_file_regions_and_moves_the_hw(cluster):
    cluster.create_topic("zc", 1, [1, 2])
    rm1 = cluster.brokers[1].broker.replica_manager
    rm2 = cluster.brokers[2].broker.replica_manager
    assert rm2.fetcher_manager is not None
    await rm2.fetcher_manager.pause()
    leader = cluster.partition(1, "zc")
    leader.append_records_to_leader(_batch(3))
    assert (leader.log_end_offset, leader.high_watermark) == (3, 0)
    consumer = rm1.read_from_local_log([FetchPartition("zc", 0, 0, 1 << 20)], 1 << 20, 0)[0][0]
    assert consumer.records is None and consumer.high_watermark == 0  # a consumer stops at the HW
    # a follower reads to the LEO, from the segment file (sendfile), and says where it is
    got, _ = rm1.read_from_local_log([FetchPartition("zc", 0, 0, 1 << 20, log_start_offset=0)], 1 << 20, 0,
                                     FetchReplica(2, 102))
    assert isinstance(got[0].records, FileRegion) and got[0].records.size == leader.log.size_in_bytes()
    assert got[0].high_watermark == 0  # follower 2 is at 0: the HW waits
    got, _ = rm1.read_from_local_log([FetchPartition("zc", 0, 3, 1 << 20, log_start_offset=0)], 1 << 20, 0,
                                     FetchReplica(2, 102))
    assert got[0].records is None and got[0].high_watermark == 3  # its fetch offset moved the HW
    assert leader.remote_replicas[2].state.log_end_offset == 3
    # a fetch of an earlier incarnation of broker 2 (a smaller broker epoch) is refused
    stale, _ = rm1.read_from_local_log([FetchPartition("zc", 0, 3, 1 << 20)], 1 << 20, 0, FetchReplica(2, 101))
    assert stale[0].error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # a "replica" that is not assigned (a client sending replica_id 7) gets no records but
    # UNKNOWN_LEADER_EPOCH, as Kafka 4.4 answers (tests/reference/test_inter_broker_bad_input.py)
    other, _ = rm1.read_from_local_log([FetchPartition("zc", 0, 0, 1 << 20)], 1 << 20, 0, FetchReplica(7, 1))
    assert other[0].error == ErrorCode.UNKNOWN_LEADER_EPOCH and other[0].records is None
    assert 7 not in leader.remote_replicas
    rm2.fetcher_manager.resume()


async def test_a_restarted_follower_starts_from_its_checkpointed_hw_and_catches_up(cluster):
    cluster.create_topic("rs", 1, [1, 2])
    leader = cluster.partition(1, "rs")
    leader.append_records_to_leader(_batch(4))
    await wait_until(lambda: cluster.partition(2, "rs").high_watermark == 4, "follower has the HW")
    b2 = cluster.brokers[2]
    await b2.stop()  # clean: the checkpoints are written
    ckpt_file = OffsetCheckpointFile(b2.data_dir / "replication-offset-checkpoint")
    assert ckpt_file.read()[("rs", 0)] == 4
    # as if the broker had died before its last checkpoint: the file says 2
    ckpt_file.write({("rs", 0): 2})
    leader.append_records_to_leader(_batch(2))
    await b2.start()
    cluster.publish(cluster.topics["rs"])  # the metadata as the restarted broker replays it
    f = cluster.partition(2, "rs")
    assert f.from_metadata and not f.is_leader
    # a follower starts from the checkpointed HW, not from its LEO (Kafka: Partition.createLog)
    assert (f.log_end_offset, f.high_watermark) == (4, 2)
    await wait_until(lambda: f.log_end_offset == 6 and f.high_watermark == 6, "the follower catches up")
    assert log_bytes(f) == log_bytes(leader)


async def test_a_fenced_broker_does_not_join_the_isr(cluster):
    """Kafka: Partition.isReplicaIsrEligible (KIP-841): a caught-up follower on a fenced broker
    stays out of the ISR, and the HW does not wait for it; unfenced, it joins."""
    cluster.fenced.add(2)
    cluster.create_topic("fence", 1, [1, 2], isr=[1])
    leader = cluster.partition(1, "fence")
    leader.append_records_to_leader(_batch(3))
    assert leader.high_watermark == 3  # the ISR is the leader: committed at once
    await wait_until(lambda: leader.remote_replicas[2].state.log_end_offset == 3, "follower 2 fetched it all")
    await asyncio.sleep(0.2)
    assert leader.isr == (1,) and cluster.alter_requests == []
    cluster.fenced.discard(2)
    cluster.publish(cluster.topics["fence"])
    await wait_until(lambda: leader.isr == (1, 2), "the unfenced follower joins the ISR")
    assert [(t, p, r.isr) for t, p, r in cluster.alter_requests] == [("fence", 0, (1, 2))]


async def test_a_new_leader_knows_the_idempotent_producers_from_replication(cluster):
    """The follower's producer state comes from the leader's batches (append_as_follower), so after
    a failover the new leader takes the producer's next sequence and recognises a retry of its
    last batch as a duplicate (Kafka: the follower's ProducerStateManager, KIP-98)."""
    cluster.create_topic("idem", 1, [1, 2])
    p1 = cluster.partition(1, "idem")

    def idempotent_batch(seq: int, n: int) -> bytes:
        return build_batch([Record(offset_delta=i, value=b"s%d" % (seq + i)) for i in range(n)], base_timestamp=1,
                           producer_id=4242, producer_epoch=0, base_sequence=seq)

    p1.append_records_to_leader(idempotent_batch(0, 3))
    p1.append_records_to_leader(idempotent_batch(3, 2))
    await wait_until(lambda: p1.high_watermark == 5, "replicated")
    cluster.change("idem", 0, leader_id=2, isr=(2, 1))
    p2 = cluster.partition(2, "idem")
    assert p2.is_leader and p2.producers()[4242].last_seq == 4
    retry = p2.append_records_to_leader(idempotent_batch(3, 2))  # the producer retries its last batch
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (3, 4)
    info = p2.append_records_to_leader(idempotent_batch(5, 1))
    assert (info.first_offset, info.duplicate) == (5, False)
    with pytest.raises(KafkaError) as e:
        p2.append_records_to_leader(idempotent_batch(9, 1))  # a gap
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    await wait_until(lambda: p1.log_end_offset == 6, "the old leader follows")
    assert log_bytes(p1) == log_bytes(p2)


async def test_delete_records_on_the_leader_moves_the_followers_log_start(cluster):
    """DeleteRecords goes to the leader (a follower answers NOT_LEADER_OR_FOLLOWER); the followers
    take the leader's log start offset from its fetch answers once their HW passed it (Kafka:
    ReplicaFetcherThread.processPartitionData -> maybeIncrementLogStartOffset)."""
    cluster.create_topic("del", 1, [1, 2])
    p1, p2 = cluster.partition(1, "del"), cluster.partition(2, "del")
    p1.append_records_to_leader(_batch(5))
    await wait_until(lambda: p2.high_watermark == 5, "replicated")
    with pytest.raises(KafkaError) as e:
        cluster.brokers[2].broker.replica_manager.delete_records("del", 0, 3)
    assert e.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    rm1 = cluster.brokers[1].broker.replica_manager
    # DelayedDeleteRecords: answered once the follower's log start (from its fetches) reached 3
    assert await rm1.delete_records_and_wait("del", 0, 3, 30_000) == 3
    assert p2.log_start_offset == 3 and p1.remote_replicas[2].state.log_start_offset == 3
    # a follower that does not fetch: the leader moves, the answer times out
    fm2 = cluster.brokers[2].broker.replica_manager.fetcher_manager
    assert fm2 is not None
    await fm2.pause()
    with pytest.raises(KafkaError) as e:
        await rm1.delete_records_and_wait("del", 0, 4, 300)
    assert e.value.code == ErrorCode.REQUEST_TIMED_OUT and p1.log_start_offset == 4
    fm2.resume()
    await wait_until(lambda: p2.log_start_offset == 4, "the follower's log start follows the leader's")


async def test_apply_delta_stops_replicas_moved_away_and_deleted(tmp_path):
    brokers = await start_brokers(tmp_path, 3)
    cluster = InProcessController(brokers)
    try:
        cluster.create_topic("mv", 1, [1, 2, 3])
        cluster.create_topic("gone", 1, [1, 3])
        fm3 = brokers[3].broker.replica_manager.fetcher_manager
        assert fm3 is not None and set(fm3.fetchers[1].partitions) == {("mv", 0), ("gone", 0)}
        # a reassignment takes broker 3 out of "mv": it stops being a replica (its fetcher lets go)
        cluster.change("mv", 0, replicas=(1, 2), isr=(1, 2))
        assert brokers[3].broker.replica_manager.get_partition("mv", 0) is None
        assert set(fm3.fetchers[1].partitions) == {("gone", 0)}
        # the topic is deleted: every broker drops it, and broker 3's idle fetcher goes
        image = cluster.topics.pop("gone")
        for b in brokers.values():
            b.broker.replica_manager.apply_delta([], cluster.endpoints(), deleted=[image])
        assert all(b.broker.replica_manager.get_partition("gone", 0) is None for b in brokers.values())
        assert fm3.fetchers == {}
        assert cluster.partition(1, "mv").remote_replicas.keys() == {2}
    finally:
        for b in brokers.values():
            await b.stop()
