"""Three minibroker brokers under minibroker's KRaft controller, each its own process, driven by
real clients: topics come from the metadata log, replicate, and survive a leader's kill -9."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType as KConfigResourceType
from kafka.admin import NewTopic as KNewTopic

from tests.helpers import BrokerProcess, free_port

from .cluster_helpers import MiniCluster, consume_all, log_files, partitions_of, wait_until


def test_a_topic_created_through_any_broker_replicates_on_three(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    admin = KafkaAdminClient(bootstrap_servers=c.brokers[2].bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([KNewTopic("orders", 3, 3)])
    finally:
        admin.close()
    # the broker that forwarded CreateTopics answered once its image had the topic; the others
    # follow within a metadata fetch, and every broker's Metadata agrees
    assert len(partitions_of(c, 2, "orders")) == 3
    views = wait_until(lambda: (v := {n: partitions_of(c, n, "orders") for n in c.brokers})[1] == v[2] == v[3] and v,
                       "every broker's Metadata agrees")
    assert len(views[1]) == 3
    assert {leader for leader, _, _ in views[1].values()} == {1, 2, 3}  # leaders spread
    assert all(set(r) == {1, 2, 3} for _, r, _ in views[1].values())
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(300):
        producer.produce("orders", value=b"v%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    got = consume_all(c.bootstrap, "orders", 3, 300)
    assert sorted(v for _, _, v in got) == sorted(b"v%d" % i for i in range(300))
    # the followers caught up: every replica's .log files are the same bytes
    wait_until(lambda: all(len({log_files(c, n, "orders", p) for n in c.brokers}) == 1 for p in range(3)),
               "the replicas' logs are identical")


def test_min_insync_with_paused_followers(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("minisr", 1, 3, config={"min.insync.replicas": "2"})])["minisr"].result(30)
    leader, replicas, _ = partitions_of(c, 1, "minisr")[0]
    followers = [n for n in replicas if n != leader]
    producer = Producer({"bootstrap.servers": c.brokers[leader].bootstrap, "acks": "all", "retries": 0,
                         "message.timeout.ms": 20000})
    errors: list[str] = []

    def send(value: bytes) -> None:
        producer.produce("minisr", value=value, on_delivery=lambda err, m: errors.append(err.name() if err else ""))
        producer.flush(30)

    send(b"all-in")
    assert errors == [""]
    c.pause(followers[0])
    try:
        wait_until(lambda: len(partitions_of(c, leader, "minisr")[0][2]) == 2, "the ISR shrinks to 2", 30)
        send(b"one-paused")
        assert errors[-1] == "", errors
        c.pause(followers[1])
        wait_until(lambda: len(partitions_of(c, leader, "minisr")[0][2]) == 1, "the ISR shrinks to 1", 30)
        send(b"two-paused")
        assert errors[-1] == "NOT_ENOUGH_REPLICAS", errors
    finally:
        c.resume(followers[0])
        c.resume(followers[1])
    wait_until(lambda: len(partitions_of(c, leader, "minisr")[0][2]) == 3, "the ISR is whole again", 60)


def test_leader_killed_nothing_lost_nothing_duplicated(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("failover", 1, 3, config={"min.insync.replicas": "2"})])["failover"].result(30)
    leader, _, isr = partitions_of(c, 1, "failover")[0]
    wait_until(lambda: len(partitions_of(c, 1, "failover")[0][2]) == 3, "the ISR is whole")
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 60000})
    acked: list[bytes] = []

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.value())  # type: ignore[attr-defined]

    for i in range(500):
        producer.produce("failover", value=b"%05d" % i, on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    c.kill(leader)
    for i in range(500, 1000):
        producer.produce("failover", value=b"%05d" % i, on_delivery=delivered)
        producer.poll(0)
        if i % 100 == 0:
            time.sleep(0.2)
    assert producer.flush(90) == 0
    others = [n for n in c.brokers if n != leader]
    # the controller fenced the killed broker after broker.session.timeout.ms: Metadata leaves it out
    wait_until(lambda: c.metadata_brokers(others[0]) == set(others), "the killed broker is fenced")
    new_leader = wait_until(lambda: (p := partitions_of(c, others[0], "failover")[0])[0] in others and p[0],
                            "a new leader")
    got = consume_all(c.brokers[new_leader].bootstrap, "failover", 1, len(acked))
    values = [v for _, _, v in got]
    assert values == sorted(values) and len(values) == len(set(values)), "order kept, nothing duplicated"
    assert set(acked) <= set(values), "nothing acknowledged lost"
    assert len(acked) == 1000
    # the killed broker comes back on its data dir, catches up and rejoins the ISR
    c.restart(leader)
    wait_until(lambda: leader in partitions_of(c, new_leader, "failover")[0][2], "the old leader rejoins the ISR", 90)
    wait_until(lambda: len({log_files(c, n, "failover", 0) for n in c.brokers}) == 1, "identical logs", 60)
    # ElectLeaders (forwarded to the controller): the preferred replica, the restarted broker, leads again
    preferred = partitions_of(c, new_leader, "failover")[0][1][0]
    assert preferred == leader  # the first leader was the preferred replica
    elect = AdminClient({"bootstrap.servers": c.brokers[new_leader].bootstrap})
    elect.elect_leaders(ElectionType.PREFERRED, [TopicPartition("failover", 0)]).result(30)
    assert partitions_of(c, new_leader, "failover")[0][0] == preferred  # its answer waited for its image
    wait_until(lambda: all(partitions_of(c, n, "failover")[0][0] == preferred for n in c.brokers), "all agree")


def test_delete_add_partitions_alter_config(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    admin = AdminClient({"bootstrap.servers": c.brokers[3].bootstrap})
    admin.create_topics([NewTopic("admin-t", 2, 3)])["admin-t"].result(30)
    admin.create_partitions([NewPartitions("admin-t", 5)])["admin-t"].result(30)
    assert len(partitions_of(c, 3, "admin-t")) == 5  # the broker that answered has it already
    wait_until(lambda: all(len(partitions_of(c, n, "admin-t")) == 5 for n in c.brokers), "every broker has 5")
    assert all((c.brokers[n].data_dir / "admin-t-4").is_dir() for n in c.brokers)
    res = ConfigResource("topic", "admin-t", incremental_configs=[
        ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(30)
    for n in c.brokers:
        on_n = AdminClient({"bootstrap.servers": c.brokers[n].bootstrap})  # held: its futures die with it
        described = on_n.describe_configs([ConfigResource("topic", "admin-t")])
        (cfg,) = [f.result(30) for f in described.values()]
        assert cfg["retention.ms"].value == "123456", n
    # the legacy AlterConfigs (kafka-python's alter_configs) replaces the topic's whole config
    kadmin = KafkaAdminClient(bootstrap_servers=c.brokers[1].bootstrap, request_timeout_ms=30000)
    try:
        kadmin.alter_configs([KConfigResource(KConfigResourceType.TOPIC, "admin-t", configs={"segment.ms": "7777777"})])
    finally:
        kadmin.close()
    # each broker's own dynamic config (librdkafka sends it to that broker, which forwards it):
    # its effective topic configs follow it
    for n in c.brokers:
        res = ConfigResource("broker", str(n), incremental_configs=[
            ConfigEntry("log.retention.bytes", "4444444", incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([res]).values():
            f.result(30)

    def topic_config(n: int) -> dict[str, str]:
        on_n = AdminClient({"bootstrap.servers": c.brokers[n].bootstrap})
        (cfg,) = [f.result(30) for f in on_n.describe_configs([ConfigResource("topic", "admin-t")]).values()]
        return {k: e.value for k, e in cfg.items()}

    wait_until(lambda: all(topic_config(n)["segment.ms"] == "7777777" and topic_config(n)["retention.bytes"] == "4444444"
                           for n in c.brokers), "the new configs on every broker")
    admin.delete_topics(["admin-t"])["admin-t"].result(30)
    assert "admin-t" not in admin.list_topics(timeout=10).topics  # the broker that answered: at once

    def gone(n: int) -> bool:  # all topics listed (a Metadata naming it would auto-create it again)
        on_n = AdminClient({"bootstrap.servers": c.brokers[n].bootstrap})
        return "admin-t" not in on_n.list_topics(timeout=10).topics and not (
            c.brokers[n].data_dir / "admin-t-0").exists()

    wait_until(lambda: all(gone(n) for n in c.brokers), "the topic gone from every broker")


def test_kafka_python_clients_and_a_consumer_group(mini_cluster: MiniCluster) -> None:
    """kafka-python's producer, and a consumer group whose coordinator is the leader of its
    __consumer_offsets partition (auto-created through the controller by FindCoordinator)."""
    c = mini_cluster
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([KNewTopic("kp", 3, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all")
    for i in range(90):
        producer.send("kp", value=b"k%d" % i, partition=i % 3)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer("kp", bootstrap_servers=c.bootstrap, group_id="kp-group", auto_offset_reset="earliest",
                             consumer_timeout_ms=30000, enable_auto_commit=False)
    seen: list[bytes] = []
    try:
        for m in consumer:
            seen.append(m.value)
            if len(seen) == 90:
                break
        consumer.commit()
    finally:
        consumer.close()
    assert sorted(seen) == sorted(b"k%d" % i for i in range(90))
    views = {n: partitions_of(c, n, "__consumer_offsets") for n in c.brokers}
    assert views[1] and views[1] == views[2] == views[3]


def test_a_topic_deleted_and_created_again_while_a_broker_was_down(mini_cluster_fresh: MiniCluster) -> None:
    """The broker comes back with the old topic's logs on disk: they go (the metadata has another
    topic id for the name, on other brokers). On a cluster of its own: on the module's shared one,
    after the other tests, its produce to the topic made again timed out (2 runs of 2, not yet
    understood)."""
    c = mini_cluster_fresh
    admin = AdminClient({"bootstrap.servers": c.brokers[1].bootstrap})
    admin.create_topics([NewTopic("again", 1, 3)])["again"].result(30)
    producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    producer.produce("again", value=b"old")
    assert producer.flush(30) == 0
    wait_until(lambda: len({log_files(c, n, "again", 0) for n in c.brokers}) == 1, "replicated")
    c.brokers[3].stop()
    admin.delete_topics(["again"])["again"].result(30)
    admin.create_topics([NewTopic("again", 1, 2)])["again"].result(30)  # on brokers 1 and 2: 3 is fenced
    wait_until(lambda: "again" in admin.list_topics(timeout=10).topics
               and admin.list_topics(timeout=10).topics["again"].error is None, "created again")
    producer.produce("again", value=b"new-1")
    producer.produce("again", value=b"new-2")
    assert producer.flush(60) == 0
    c.restart(3)
    # broker 3 holds no replica of the new topic: its old logs go, its Metadata has the new topic
    wait_until(lambda: not (c.brokers[3].data_dir / "again-0").exists(), "broker 3 dropped the old topic's log")
    wait_until(lambda: set(partitions_of(c, 3, "again")[0][1]) == {1, 2}, "broker 3 sees the new topic")
    wait_until(lambda: log_files(c, 1, "again", 0) == log_files(c, 2, "again", 0), "the new replicas agree")
    errors: list[str] = []
    got = consume_all(c.bootstrap, "again", 1, 2, errors=errors)
    # it read nothing for 60 s once, in one fresh CI of many (session 16): what the consumer and the
    # replicas said, for the next time
    assert [v for _, _, v in got] == [b"new-1", b"new-2"], (
        errors[-10:], partitions_of(c, 1, "again"), {n: c.brokers[n].log_text()[-3000:] for n in (1, 2, 3)})


def test_a_combined_broker_and_controller_keeps_its_topics_across_a_restart(tmp_path: Path) -> None:
    cport, bport = free_port(), free_port()
    node = BrokerProcess(tmp_path / "node" / "data", port=bport, overrides={
        "process.roles": "broker,controller", "node.id": 1, "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{bport},CONTROLLER://127.0.0.1:{cport}"})
    (tmp_path / "node").mkdir()
    node.start()
    try:
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        wait_until(lambda: set(admin.list_topics(timeout=10).brokers) == {1}, "registered")
        admin.create_topics([NewTopic("combined", 2, 1)])["combined"].result(30)
        producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", "enable.idempotence": True})
        producer.produce("combined", value=b"kept", partition=1)
        assert producer.flush(30) == 0
        node.stop()
        node.start()
        got = consume_all(node.bootstrap, "combined", 2, 1)
        assert [(p, v) for p, _, v in got] == [(1, b"kept")]
        assert (node.data_dir / "__cluster_metadata-0").is_dir()  # the metadata log is no topic's stray
    finally:
        node.stop()
