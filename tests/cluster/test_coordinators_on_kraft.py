"""The coordinators on a KRaft cluster of processes (issue 29): the metadata log's leadership
changes reach them through ReplicaManager.apply_delta (minibroker.coordinator_elections).

- the group coordinator's broker is killed with kill -9: the controller elects a new leader of the
  group's __consumer_offsets partition, that broker loads it, and the group goes on from the
  offsets committed before the kill (each acknowledged only once replicated);
- a transaction over partitions led by different brokers, committed and aborted: read_committed
  consumers see exactly the committed records (markers sent with WriteTxnMarkers, produce
  verified with AddPartitionsToTxn between brokers);
- GROUP configs outlive DeleteGroups on every broker, as on Kafka 4.4.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KNewTopic

from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.coordinator.share.share_coordinator_shard import coordinator_key
from minibroker_protocol.errors import ErrorCode
from tests.integration.group_config_helpers import (
    delete_group,
    dynamic_group_configs,
    make_consumer_group,
    make_share_group,
    set_group_configs,
)

from .cluster_helpers import MiniCluster, partitions_of, wait_until
from .share_state_helpers import read_state, share_coordinator, write_state


def _consume(c: Consumer, count: int, rounds: int = 300) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(rounds):
        if len(out) >= count:
            break
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m.value())
    return out


def _coordinator(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(30).coordinator.id


def test_group_coordinator_killed_the_group_goes_on_from_its_commits(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("cg", 1, 3)])["cg"].result(30)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce("cg", b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    conf = {"bootstrap.servers": c.bootstrap, "group.id": "kg", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000}
    first = Consumer(conf)
    try:
        first.subscribe(["cg"])
        assert _consume(first, 5) == [b"v%d" % i for i in range(5)]
        first.commit(asynchronous=False)
    finally:
        first.close()
    coordinator = _coordinator(c.bootstrap, "kg")
    offsets_partition = partition_for("kg", 50)
    assert partitions_of(c, coordinator, "__consumer_offsets")[offsets_partition][0] == coordinator
    c.kill(coordinator)
    others = [n for n in c.brokers if n != coordinator]
    wait_until(lambda: partitions_of(c, others[0], "__consumer_offsets")[offsets_partition][0] in others,
               "a new leader of the group's __consumer_offsets partition")
    bootstrap = ",".join(c.brokers[n].bootstrap for n in others)
    assert _coordinator(bootstrap, "kg") in others
    second = Consumer({**conf, "bootstrap.servers": bootstrap})
    try:
        second.subscribe(["cg"])
        # the commit made before the kill is there: the group goes on at offset 5
        assert _consume(second, 5) == [b"v%d" % i for i in range(5, 10)]
        second.commit(asynchronous=False)
        assert second.committed([TopicPartition("cg", 0)], 30)[0].offset == 10
    finally:
        second.close()


def _read_committed(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4()}", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[bytes] = []
        for _ in range(300):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191 and len(out) >= expected:  # _PARTITION_EOF at the LSO
                    return out
                continue
            out.append(m.value())
        return out
    finally:
        c.close()


def test_a_transaction_over_partitions_led_by_different_brokers(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    # two single-partition topics whose leaders differ (replica assignments placed by hand)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([KNewTopic("ta", -1, -1, replica_assignments={0: [1, 2, 3]}),
                             KNewTopic("tb", -1, -1, replica_assignments={0: [2, 3, 1]})])
    finally:
        admin.close()
    wait_until(lambda: partitions_of(c, 1, "ta")[0][0] == 1 and partitions_of(c, 1, "tb")[0][0] == 2,
               "ta led by broker 1, tb by broker 2")
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "kraft-tx", "linger.ms": 0})
    p.init_transactions(60)
    for outcome, tag in (("commit", b"1"), ("abort", b"x"), ("commit", b"2")):
        p.begin_transaction()
        p.produce("ta", b"a" + tag, partition=0)
        p.produce("tb", b"b" + tag, partition=0)
        assert p.flush(60) == 0
        if outcome == "commit":
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    assert _read_committed(c.bootstrap, "ta", 2) == [b"a1", b"a2"]
    assert _read_committed(c.bootstrap, "tb", 2) == [b"b1", b"b2"]


def test_share_coordinator_killed_the_state_is_read_from_the_new_one(mini_cluster: MiniCluster) -> None:
    """The share coordinator APIs between brokers (issue 29, KIP-932): the state a share-partition
    leader writes to the leader of the key's __share_group_state partition (RF 3) is read back
    from the broker that leads it after that leader is killed with kill -9; any other broker
    answers NOT_COORDINATOR."""
    c = mini_cluster
    group, tid = "sg-kraft", uuid.uuid4()
    key = coordinator_key((group, tid, 0))
    coordinator, address = wait_until(lambda: share_coordinator(c.bootstrap, key),
                                      "the share coordinator of the key")
    state_partition = partition_for(key, 50)
    wait_until(lambda: len(partitions_of(c, coordinator, "__share_group_state")[state_partition][2]) == 3 or None,
               "every replica of the state partition in its ISR")
    batches = [(0, 4, 2, 1), (5, 7, 1, 1)]  # 0-4 acknowledged, 5-7 acquired
    assert wait_until(lambda: write_state(address, group, tid, batches, 0) == ErrorCode.NONE or None,
                      "the first write (the coordinator loads the new partition)")
    other = next(n for n in c.brokers if n != coordinator)
    assert write_state(c.brokers[other].bootstrap, group, tid, batches, 0) == ErrorCode.NOT_COORDINATOR
    assert read_state(address, group, tid) == (ErrorCode.NONE, 0, batches)
    c.kill(coordinator)
    others = [n for n in c.brokers if n != coordinator]
    bootstrap = ",".join(c.brokers[n].bootstrap for n in others)

    def moved() -> tuple[int, str] | None:
        node, addr = share_coordinator(bootstrap, key)
        return (node, addr) if node in others else None

    new, new_address = wait_until(moved, "a new share coordinator of the key")
    # The new leader answers COORDINATOR_LOAD_IN_PROGRESS until it has replayed the partition, then
    # exactly what was written (Kafka's ShareCoordinator keeps the state as its share-partition
    # leader wrote it; that leader, on another broker, releases acquired records when it reloads)
    wait_until(lambda: read_state(new_address, group, tid) == (ErrorCode.NONE, 0, batches) or None,
               "the state read from the new coordinator")


def test_groups_map_to_partitions_by_the_clusters_partition_count_not_the_brokers(tmp_path) -> None:
    """With __consumer_offsets at replication factor 1, each broker holds only some of its
    partitions. A group's partition is its hash modulo the topic's partitions in the cluster, as
    FindCoordinator maps it: a broker that counted only its own partitions answered
    NOT_COORDINATOR for ever to the groups it was sent (issue 37: found under Kafka's controller,
    where a Java consumer group never got its partitions)."""
    partitions = 5
    cluster = MiniCluster(tmp_path, overrides={"offsets.topic.replication.factor": 1,
                                                "offsets.topic.num.partitions": partitions})
    cluster.start()
    try:
        topic = f"spread-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        groups = [f"spread-group-{i}" for i in range(10)]
        # the first lookup creates __consumer_offsets; then every broker holds some of its partitions
        wait_until(lambda: _coordinator(cluster.bootstrap, groups[0]) >= 0, "the group coordinator")
        leaders = {p: leader for p, (leader, _, _) in partitions_of(cluster, 1, "__consumer_offsets").items()}
        assert len(leaders) == partitions and len(set(leaders.values())) > 1, leaders  # spread over brokers
        for i, group in enumerate(groups):
            c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
            try:
                c.commit(offsets=[TopicPartition(topic, 0, 10 + i)], asynchronous=False)
                [tp] = c.committed([TopicPartition(topic, 0)], timeout=30)
                assert tp.offset == 10 + i, (group, tp)
            finally:
                c.close()
            # the coordinator clients found is the leader of the group's partition in the cluster
            assert _coordinator(cluster.bootstrap, group) == leaders[partition_for(group, partitions)], group

        # a KIP-848 consumer group is assigned every partition of a topic spread over the brokers,
        # not only those its coordinator holds a replica of (it got two of six)
        six = f"six-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(six, 6, 1)])[six].result(30)
        wait_until(lambda: len(partitions_of(cluster, 1, six)) == 6, "the topic's six partitions")
        assert len({leader for leader, _, _ in partitions_of(cluster, 1, six).values()}) > 1
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"six-{uuid.uuid4().hex[:8]}",
                      "group.protocol": "consumer"})
        try:
            c.subscribe([six])

            def assigned() -> bool:
                c.poll(0.2)
                return len(c.assignment()) == 6
            wait_until(assigned, "all six partitions assigned", timeout=60)
            assert sorted(p.partition for p in c.assignment()) == list(range(6))
        finally:
            c.close()
    finally:
        cluster.stop()


def test_group_configs_outlive_delete_groups_on_every_broker(mini_cluster: MiniCluster) -> None:
    """GROUP configs are ConfigRecords of the metadata log, which DeleteGroups leaves alone, as on
    Kafka 4.4 (GroupCoordinatorService.deleteGroups deletes records of __consumer_offsets and the
    share state only): after a consumer group and a share group are deleted, every broker still
    describes the configs they were given (the single broker: tests/integration/
    test_group_configs_after_delete.py)."""
    c = mini_cluster
    tag = uuid.uuid4().hex[:8]
    topic, consumer_group, share_group = f"gcd-{tag}", f"gcd-c-{tag}", f"gcd-s-{tag}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    make_consumer_group(c.bootstrap, consumer_group, topic)
    make_share_group(c.bootstrap, share_group, topic)
    expected = {consumer_group: {"consumer.session.timeout.ms": "50000"},
                share_group: {"share.auto.offset.reset": "earliest"}}
    for group, values in expected.items():
        set_group_configs(admin, group, values)
        delete_group(admin, group)
    assert not {g.group_id for g in admin.list_consumer_groups().result(30).valid} & set(expected)
    for node, broker in c.brokers.items():
        one = AdminClient({"bootstrap.servers": broker.bootstrap})
        wait_until(lambda one=one: all(dynamic_group_configs(one, g) == v for g, v in expected.items()) or None,
                   f"the deleted groups' configs on broker {node}")
