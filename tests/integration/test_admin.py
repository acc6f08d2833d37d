"""DeleteRecords, DescribeCluster, DescribeLogDirs, OffsetForLeaderEpoch and DescribeTopicPartitions
through the admin clients that have them and over a raw socket at every version."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minibroker_protocol.apis import (
    delete_records,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
)
from minibroker_protocol.apis import offset_for_leader_epoch as ole
from minibroker_protocol.errors import ErrorCode

from .helpers import TIMEOUT, RawClient, confluent_consume, create_topic, module_broker, offsets, unique


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory, {"log.segment.bytes": 2048}) as broker:
        yield broker


def fill(b, topic: str, n: int, partition: int = 0) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%03d" % i + b"." * 60, partition=partition)
        if i % 10 == 9:
            p.flush(TIMEOUT)
    assert p.flush(TIMEOUT) == 0


# ------------------------------------------------------------------------------ DeleteRecords


def test_confluent_delete_records_then_consume_from_new_start(kafka_broker_module):
    t = unique("dr")
    create_topic(kafka_broker_module, t)
    fill(kafka_broker_module, t, 100)
    segments_before = kafka_broker_module.call(lambda br: br.get_log(t, 0).num_segments)
    a = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap})
    res = a.delete_records([TopicPartition(t, 0, 42)])
    deleted = next(iter(res.values())).result(TIMEOUT)
    assert deleted.low_watermark == 42
    assert offsets(kafka_broker_module, t) == (42, 100)
    assert kafka_broker_module.call(lambda br: br.get_log(t, 0).num_segments) < segments_before  # whole segments below 42 went
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    try:
        c.subscribe([t])
        msgs = confluent_consume(c, 58)
        assert [m.offset() for m in msgs] == list(range(42, 100))
        assert msgs[0].value().startswith(b"v042")
    finally:
        c.close()
    # -1 means the high watermark; an offset past it is OFFSET_OUT_OF_RANGE
    res = a.delete_records([TopicPartition(t, 0, -1)])
    assert next(iter(res.values())).result(TIMEOUT).low_watermark == 100
    res = a.delete_records([TopicPartition(t, 0, 500)])
    with pytest.raises(Exception) as e:
        next(iter(res.values())).result(TIMEOUT)
    assert "OFFSET_OUT_OF_RANGE" in str(e.value)


def test_kafka_python_delete_records_and_log_dirs(kafka_broker_module):
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    t = unique("dr-kp")
    create_topic(kafka_broker_module, t, partitions=2)
    fill(kafka_broker_module, t, 30, partition=1)
    a = KafkaAdminClient(bootstrap_servers=kafka_broker_module.bootstrap, request_timeout_ms=10000)
    try:
        out = a.delete_records({KTP(t, 1): 10})
        assert [v["low_watermark"] for v in out.values()] == [10]
        dirs = a.describe_log_dirs({t: [0, 1]})
        assert len(dirs) == 1 and dirs[0]["broker"] == 1
        (log_dir,) = dirs[0]["log_dirs"]
        assert log_dir["log_dir"] == str(kafka_broker_module.data_dir.resolve())
        (topic,) = log_dir["topics"]
        sizes = {p["partition_index"]: p for p in topic["partitions"]}
        want = kafka_broker_module.call(lambda br: [br.get_log(t, p).size_in_bytes() for p in (0, 1)])
        assert [sizes[0]["partition_size"], sizes[1]["partition_size"]] == want
        assert want[0] == 0 and want[1] > 0
        assert sizes[1]["offset_lag"] == 0 and not sizes[1]["is_future_key"]
        cluster = a.describe_cluster()
        assert cluster["controller_id"] == 1 and cluster["cluster_id"] == kafka_broker_module.call(lambda br: br.cluster_id)
        assert [br["broker_id"] for br in cluster["brokers"]] == [1]
    finally:
        a.close()


def test_aiokafka_delete_records(kafka_broker_module):
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
    from aiokafka.structs import TopicPartition as ATP

    t = unique("dr-aio")
    create_topic(kafka_broker_module, t)
    fill(kafka_broker_module, t, 20)

    async def go():
        a = AIOKafkaAdminClient(bootstrap_servers=kafka_broker_module.bootstrap)
        await a.start()
        try:
            return await a.delete_records({ATP(t, 0): RecordsToDelete(before_offset=15)})
        finally:
            await a.close()

    assert asyncio.run(go()) == {ATP(t, 0): 15}
    assert offsets(kafka_broker_module, t) == (15, 20)


def test_delete_records_versions_and_errors(kafka_broker_module):
    t = unique("dr-raw")
    create_topic(kafka_broker_module, t)
    compact = unique("dr-compact")
    create_topic(kafka_broker_module, compact, configs={"cleanup.policy": "compact"})
    fill(kafka_broker_module, t, 10)
    R = delete_records.REQUEST
    for version in range(3):
        req = R(topics=[R.DeleteRecordsTopic(name=t, partitions=[
                    R.DeleteRecordsPartition(partition_index=0, offset=version + 1),
                    R.DeleteRecordsPartition(partition_index=9, offset=1)]),
                R.DeleteRecordsTopic(name=compact, partitions=[R.DeleteRecordsPartition(partition_index=0, offset=0)])],
                timeout_ms=1000)
        with RawClient(kafka_broker_module.bootstrap) as c:
            resp = c.call(delete_records.API, version, req)
        got = [(p.partition_index, p.low_watermark, p.error_code) for tr in resp.topics for p in tr.partitions]
        assert got == [(0, version + 1, 0), (9, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                       (0, -1, ErrorCode.POLICY_VIOLATION)]


# ------------------------------------------------------------------------------ DescribeCluster


def test_describe_cluster(kafka_broker_module):
    a = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap})
    d = a.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert d.cluster_id == kafka_broker_module.call(lambda br: br.cluster_id) and d.controller.id == 1
    assert [(n.id, n.host, n.port) for n in d.nodes] == [(1, "127.0.0.1", int(kafka_broker_module.bootstrap.rsplit(":", 1)[1]))]
    R = describe_cluster.REQUEST
    for version in range(2):
        with RawClient(kafka_broker_module.bootstrap) as c:
            resp = c.call(describe_cluster.API, version,
                          R(include_cluster_authorized_operations=True, endpoint_type=1))
        assert resp.error_code == 0 and resp.controller_id == 1 and len(resp.brokers) == 1
        assert resp.cluster_authorized_operations & (1 << 7)  # ALTER on the cluster
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(describe_cluster.API, 1, R(include_cluster_authorized_operations=False, endpoint_type=2))
    assert resp.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE


# ------------------------------------------------------------------------------ DescribeLogDirs


@pytest.mark.parametrize("version", range(5))
def test_describe_log_dirs_every_version(kafka_broker_module, version):
    t = unique("ld")
    create_topic(kafka_broker_module, t, partitions=2)
    fill(kafka_broker_module, t, 40)
    R = describe_log_dirs.REQUEST
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(describe_log_dirs.API, version,
                      R(topics=[R.DescribableLogDirTopic(topic=t, partitions=[0, 1, 5])]))
        everything = c.call(describe_log_dirs.API, version, R(topics=None))
    (res,) = resp.results
    assert res.error_code == 0
    (topic,) = res.topics
    size0 = kafka_broker_module.call(lambda br: br.get_log(t, 0).size_in_bytes())
    assert [(p.partition_index, p.partition_size, p.offset_lag) for p in topic.partitions] == [(0, size0, 0), (1, 0, 0)]
    if version >= 4:
        assert res.total_bytes > 0 and 0 <= res.usable_bytes <= res.total_bytes
    assert t in {tp.name for tp in everything.results[0].topics}


# ------------------------------------------------------------------------------ OffsetForLeaderEpoch


@pytest.mark.parametrize("version", range(5))
def test_offset_for_leader_epoch_every_version(kafka_broker_module, version):
    t = unique("ole")
    create_topic(kafka_broker_module, t)
    fill(kafka_broker_module, t, 7)
    R = ole.REQUEST
    parts = [R.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0),
             R.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=5),
             R.OffsetForLeaderPartition(partition=3, current_leader_epoch=-1, leader_epoch=0)]
    if version >= 2:
        parts.append(R.OffsetForLeaderPartition(partition=0, current_leader_epoch=1, leader_epoch=0))
    with RawClient(kafka_broker_module.bootstrap) as c:
        resp = c.call(ole.API, version, R(replica_id=-1, topics=[R.OffsetForLeaderTopic(topic=t, partitions=parts)]))
    got = [(p.error_code, p.leader_epoch if version >= 1 else None, p.end_offset) for p in resp.topics[0].partitions]
    e, undefined = (0, -1) if version >= 1 else (None, None)
    # epoch 0 is the latest: it ends at the LEO; epoch 5 is unknown: (-1, -1) (Kafka: endOffsetFor)
    want = [(0, e, 7), (0, undefined, -1), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, undefined, -1)]
    if version >= 2:
        want.append((ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1))
    assert got == want


# ------------------------------------------------------------------------------ DescribeTopicPartitions


def test_describe_topic_partitions_paged(kafka_broker_module):
    t1, t2 = sorted([unique("dtp"), unique("dtp")])
    create_topic(kafka_broker_module, t1, partitions=3)
    create_topic(kafka_broker_module, t2, partitions=2)
    missing = unique("zz-missing")
    R = describe_topic_partitions.REQUEST
    seen: list[tuple[str, int]] = []
    cursor = None
    with RawClient(kafka_broker_module.bootstrap) as c:
        for _ in range(10):
            resp = c.call(describe_topic_partitions.API, 0, R(
                topics=[R.TopicRequest(name=n) for n in (t2, t1, missing)], response_partition_limit=2,
                cursor=cursor))
            for tp in resp.topics:
                if tp.name == missing:
                    assert tp.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                assert tp.error_code == 0 and tp.topic_id == kafka_broker_module.call(lambda br, n=tp.name: br.topics[n].topic_id)
                for p in tp.partitions:
                    assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) == (1, 0, [1], [1])
                    seen.append((tp.name, p.partition_index))
            if resp.next_cursor is None:
                break
            cursor = R.Cursor(topic_name=resp.next_cursor.topic_name, partition_index=resp.next_cursor.partition_index)
    assert seen == [(t1, 0), (t1, 1), (t1, 2), (t2, 0), (t2, 1)]
