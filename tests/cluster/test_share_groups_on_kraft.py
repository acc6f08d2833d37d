"""Share groups (KIP-932) on a KRaft cluster of three minibroker processes, RF 3 topics, with
librdkafka's ShareConsumer (confluent-kafka): the share partitions live on their topic partitions'
leaders, which keep the delivery state with the share coordinator of each key (the leader of its
__share_group_state partition) through Initialize/Read/WriteShareGroupState, and the group's
membership with the __consumer_offsets leader.

- two consumers of one group share a three-partition topic: every record delivered once;
- kill -9 of a share-partition leader: the new leader reads the state from the share coordinator;
  what was accepted is not delivered again, what was held (acquired) is delivered again (its
  acquisition was never written: KIP-932's "memory of the in-flight delivery will be lost");
- kill -9 of the share coordinator's broker: the state is read from the new one and the group
  goes on from what was accepted;
- kill -9 of the group coordinator's broker: the new group coordinator knows the share group (its
  epochs, members and assignments) from its records in __consumer_offsets, before any member
  heartbeats again;
- kill -9 of the group coordinator's broker after the members left: kafka-share-groups
  --describe --offsets lists the same share partitions and offsets (the group's
  ShareGroupStatePartitionMetadata, replayed), and --reset-offsets, a second failover,
  --delete-offsets and --delete work from it;
- two of Kafka 4.4's KafkaShareConsumer (kafka-console-share-consumer) get every record once;
- Kafka's kafka-share-groups (--describe, --reset-offsets, --delete-offsets, --delete) on a group
  whose coordinator is not its share partition's leader: the group coordinator reads and writes the
  state through the share coordinator, and the leader's next consumer sees what it wrote;
- a rejected record goes to the group's dead-letter queue (KIP-1191) whose partition is led by
  another broker than the share partition's (a Produce with acks=all from the share-partition leader).
"""

from __future__ import annotations

import base64
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.coordinator.share.share_coordinator_shard import coordinator_key
from reference import kafka_reference as kr
from tests.reference.share_clients import accept, ack_type, consumer, produce

from .cluster_helpers import MiniCluster, partitions_of, wait_until
from .share_state_helpers import group_coordinator, read_state, share_coordinator

pytestmark = pytest.mark.timeout(300)


def _topic(c: MiniCluster, name: str, partitions: int) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    for p in range(partitions):
        wait_until(lambda p=p: len(partitions_of(c, 1, name)[p][2]) == 3 or None, f"{name}-{p} fully replicated")
    md = admin.describe_topics(TopicCollection([name]))[name].result(30)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(str(md.topic_id) + "=="))  # Kafka's base64 form


def _poll(c: Any, seen: list[tuple[int, int, int]], timeout: float = 1.0, ack: bool = True) -> int:
    msgs = c.poll(timeout)
    for m in msgs:
        assert m.error() is None, m.error()
        seen.append((m.partition(), m.offset(), m.delivery_count()))
        if ack:
            c.acknowledge(m, accept(m))
    if msgs and ack:
        c.commit_sync(30)
    return len(msgs)


def test_two_share_consumers_get_every_record_once(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    _topic(c, "sq3", 3)
    c1 = consumer(c.bootstrap, "sg3", "sq3", 10)
    c2 = consumer(c.bootstrap, "sg3", "sq3", 10)
    try:
        # both members join first; share.auto.offset.reset is latest, so records come after
        seen: list[tuple[int, int, int]] = []
        for _ in range(10):
            _poll(c1, seen, 0.5)
            _poll(c2, seen, 0.5)
        produce(c.bootstrap, "sq3", [f"v{i}" for i in range(60)])
        for _ in range(120):
            if len(seen) >= 60:
                break
            _poll(c1, seen, 0.5)
            _poll(c2, seen, 0.5)
        keys = [(p, o) for p, o, _ in seen]
        assert len(keys) == 60 and len(set(keys)) == 60, sorted(keys)
        assert all(d == 1 for _, _, d in seen)
    finally:
        c1.close()
        c2.close()


def test_share_partition_leader_killed_held_records_come_back(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    tid = _topic(c, "sqk", 1)
    leader = partitions_of(c, 1, "sqk")[0][0]
    # a group whose share coordinator of sqk-0 is on another broker than the share-partition leader:
    # only the leader dies here (both at once is not tested)
    group = next(g for g in (f"sgk{i}" for i in range(50))
                 if share_coordinator(c.bootstrap, coordinator_key((g, tid, 0)))[0] != leader)
    first = consumer(c.bootstrap, group, "sqk", 5)
    seen: list[tuple[int, int, int]] = []
    try:
        for _ in range(6):
            _poll(first, seen, 0.5)
        produce(c.bootstrap, "sqk", [f"v{i}" for i in range(10)])
        wait_until(lambda: _poll(first, seen, 1.0) and len(seen) >= 5 or None, "the first five records accepted")
        accepted = {o for _, o, _ in seen}
        held: list[tuple[int, int, int]] = []
        wait_until(lambda: _poll(first, held, 1.0, ack=False) or None, "records acquired and held")
        held_offsets = {o for _, o, _ in held}
        assert held_offsets and not held_offsets & accepted
        assert partitions_of(c, 1, "sqk")[0][0] == leader
        coordinator, address = share_coordinator(c.bootstrap, coordinator_key((group, tid, 0)))
        before = read_state(address, group, tid)  # what the share coordinator holds at the kill
        c.kill(leader)
    finally:
        first.close()
    others = [n for n in c.brokers if n != leader]
    wait_until(lambda: partitions_of(c, others[0], "sqk")[0][0] in others, "a new leader of sqk-0")
    bootstrap = ",".join(c.brokers[n].bootstrap for n in others)
    second = consumer(bootstrap, group, "sqk", 10)
    after: list[tuple[int, int, int]] = []
    try:
        wait_until(lambda: _poll(second, after, 1.0) is not None and len({o for _, o, _ in after}) >= 10 - len(accepted)
                   or None, f"every record not accepted, from the new leader ({accepted}, {held}, {before})",
                   timeout=120)
    finally:
        second.close()
    offsets = [o for _, o, _ in after]
    assert sorted(offsets) == sorted(set(range(10)) - accepted), (accepted, after)
    # KIP-932: "the Acquired state is not recorded because it's transient ... In the unlikely event
    # of a share-partition leader crash, memory of the in-flight delivery will be lost": nothing was
    # written after the held records were acquired, so they come back as first deliveries
    assert all(d == 1 for _, _, d in after), after
    assert coordinator != leader


def test_share_coordinator_killed_the_group_goes_on(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    tid = _topic(c, "sqc", 1)
    group = "sgc"
    key = coordinator_key((group, tid, 0))
    coordinator, _ = share_coordinator(c.bootstrap, key)
    state_partition = partition_for(key, 50)
    first = consumer(c.bootstrap, group, "sqc", 5)
    seen: list[tuple[int, int, int]] = []
    try:
        for _ in range(6):
            _poll(first, seen, 0.5)
        wait_until(lambda: len(partitions_of(c, coordinator, "__share_group_state")[state_partition][2]) == 3
                   or None, "the state partition fully replicated")
        produce(c.bootstrap, "sqc", [f"v{i}" for i in range(10)])
        wait_until(lambda: _poll(first, seen, 1.0) and len(seen) >= 5 or None, "the first records accepted")
    finally:
        first.close()
    accepted = {o for _, o, _ in seen}
    c.kill(coordinator)
    others = [n for n in c.brokers if n != coordinator]
    bootstrap = ",".join(c.brokers[n].bootstrap for n in others)
    wait_until(lambda: (share_coordinator(bootstrap, key)[0] in others) or None, "a new share coordinator")
    second = consumer(bootstrap, group, "sqc", 10)
    after: list[tuple[int, int, int]] = []
    try:
        wait_until(lambda: _poll(second, after, 1.0) is not None and len({o for _, o, _ in after}) >= 10 - len(accepted)
                   or None, "every record not accepted", timeout=120)
    finally:
        second.close()
    assert sorted(o for _, o, _ in after) == sorted(set(range(10)) - accepted), (accepted, after)


def _describe(address: str, group: str) -> tuple[int, str, int, int, dict[str, tuple[int, list[int]]]]:
    """ShareGroupDescribe of `group` at `address`: (error, state, group epoch, assignment epoch,
    {member id: (member epoch, partitions)})."""
    from minibroker_protocol.apis import share_group_describe
    from tests.integration.helpers import RawClient

    with RawClient(address) as raw:
        resp = raw.call(share_group_describe.API, 1, share_group_describe.REQUEST(
            group_ids=[group], include_authorized_operations=False))
    g = resp.groups[0]
    return g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, {
        m.member_id: (m.member_epoch, sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions))
        for m in g.members}


def test_group_coordinator_killed_the_new_one_knows_the_share_group(mini_cluster: MiniCluster) -> None:
    c = mini_cluster
    _topic(c, "sgk", 2)
    group = "sgk-group"
    coordinator = group_coordinator(c.bootstrap, group)
    consumers = [consumer(c.bootstrap, group, "sgk", 5) for _ in range(2)]
    address = c.brokers[coordinator].bootstrap

    def settled() -> bool | None:
        for x in consumers:
            x.poll(0.3)
        d = _describe(address, group)
        parts = [m[1] for m in d[4].values()]
        return (len(parts) == 2 and all(parts) and d[2] == d[3] and all(m[0] == d[3] for m in d[4].values())) or None

    try:
        wait_until(settled, "two members with their share partitions", timeout=60)
        offsets = partition_for(group, 50)
        wait_until(lambda: len(partitions_of(c, coordinator, "__consumer_offsets")[offsets][2]) == 3 or None,
                   "the group's __consumer_offsets partition fully replicated")
        before = _describe(address, group)
        c.kill(coordinator)
        others = [n for n in c.brokers if n != coordinator]
        bootstrap = ",".join(c.brokers[n].bootstrap for n in others)
        wait_until(lambda: (group_coordinator(bootstrap, group) in others) or None, "a new group coordinator")
        after = _describe(c.brokers[group_coordinator(bootstrap, group)].bootstrap, group)
        assert after == before, (before, after)
    finally:
        for x in consumers:
            x.close()


def test_java_share_consumers_get_every_record_once(mini_cluster: MiniCluster, tmp_path: Path) -> None:
    """Kafka 4.4's KafkaShareConsumer (kafka-console-share-consumer, two at once) on the cluster.
    The group starts at latest (GROUP config resources are not served by a KRaft broker yet), so
    records are produced while the consumers start, until both have received some (each has share
    partitions: the SimpleAssignor spreads three partitions over two members) and 3 s more: on each
    partition, every record from the first one consumed on is consumed, and no record twice."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    c = mini_cluster
    _topic(c, "jq3", 3)
    # each consumer exits 8 s after its last record
    args = ["--bootstrap-server", c.bootstrap, "--topic", "jq3", "--group", "jsg", "--timeout-ms", "8000"]
    errs = [tmp_path / f"consumer{i}.err" for i in range(2)]
    procs = [subprocess.Popen(kr.tool_command("kafka-console-share-consumer", args), text=True,
                              stdout=subprocess.PIPE, stderr=err.open("w"), stdin=subprocess.DEVNULL)
             for err in errs]
    got: list[list[int]] = [[], []]

    def read(i: int) -> None:
        stdout = procs[i].stdout
        assert stdout is not None
        got[i].extend(int(line[1:]) for line in stdout if line.startswith("j"))

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(2)]
    for r in readers:
        r.start()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "acks": "all"})
    produced = 0
    deadline, stop_at = time.monotonic() + 90, None
    while time.monotonic() < (stop_at or deadline):
        for _ in range(3):
            p.produce("jq3", value=f"j{produced}".encode(), partition=produced % 3)
            produced += 1
        assert p.flush(30) == 0
        if stop_at is None and all(got):
            stop_at = time.monotonic() + 3
        time.sleep(0.5)
    for pr in procs:
        pr.wait(timeout=120)
    for r in readers:
        r.join(timeout=30)
    why = [e.read_text()[-2000:] for e in errs]
    assert stop_at is not None, ("a consumer received nothing in 90 s", [len(g) for g in got], why)
    every = got[0] + got[1]
    assert len(every) == len(set(every)), "a record delivered twice"
    for part in range(3):
        mine = sorted(i for i in every if i % 3 == part)
        assert mine, (part, why)
        assert mine == list(range(mine[0], produced, 3)), (part, mine)


def _share_groups_tool(bootstrap: str, *args: str) -> str:
    r = kr.run_tool("kafka-share-groups", ["--bootstrap-server", bootstrap, *args], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_share_group_admin_tool_on_the_group_coordinator(mini_cluster: MiniCluster) -> None:
    """kafka-share-groups on a group whose coordinator (FindCoordinator GROUP) is not the leader of
    its share partition: describe, reset to earliest, delete the topic's offsets, delete the group,
    each through the share coordinator (ReadShareGroupStateSummary, InitializeShareGroupState,
    DeleteShareGroupState), and a new consumer on the leader starts where the tool put it."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    c = mini_cluster
    tid = _topic(c, "sqa", 1)
    leader = partitions_of(c, 1, "sqa")[0][0]
    group = next(g for g in (f"sga{i}" for i in range(100)) if group_coordinator(c.bootstrap, g) != leader)
    first = consumer(c.bootstrap, group, "sqa", 4)
    seen: list[tuple[int, int, int]] = []
    try:
        for _ in range(6):
            _poll(first, seen, 0.5)
        produce(c.bootstrap, "sqa", [f"v{i}" for i in range(10)])
        wait_until(lambda: _poll(first, seen, 1.0) and len(seen) >= 4 or None, "four records accepted")
    finally:
        first.close()
    accepted = sorted(o for _, o, _ in seen)
    assert accepted == list(range(len(accepted))), accepted
    # the start offset and the lag come from the share coordinator (the lag from a replica's HW:
    # a follower's may trail the leader's for a fetch round)
    row = rf"^{group}\s+sqa\s+0\s+{len(accepted)}\s+{10 - len(accepted)}\s*$"

    def described() -> str | None:
        o = _share_groups_tool(c.bootstrap, "--describe", "--offsets", "--group", group)
        return o if re.search(row, o, re.M) else None

    out = wait_until(described, "the group's start offset and lag described", timeout=60)
    assert "sqa" in out
    reset = _share_groups_tool(c.bootstrap, "--reset-offsets", "--group", group, "--topic", "sqa", "--to-earliest",
                               "--execute")
    assert re.search(rf"^{group}\s+sqa\s+0\s+0\s*$", reset, re.M), reset
    out = _share_groups_tool(c.bootstrap, "--describe", "--offsets", "--group", group)
    assert re.search(rf"^{group}\s+sqa\s+0\s+0\s+10\s*$", out, re.M), out
    # the share-partition leader reads the reset state: every record comes again, as a first delivery
    second = consumer(c.bootstrap, group, "sqa", 10)
    again: list[tuple[int, int, int]] = []
    try:
        wait_until(lambda: _poll(second, again, 1.0) is not None and len(again) >= 10 or None,
                   "every record after the reset", timeout=120)
    finally:
        second.close()
    assert sorted(o for _, o, _ in again) == list(range(10)), again
    assert all(d == 1 for _, _, d in again), again
    coordinator, address = share_coordinator(c.bootstrap, coordinator_key((group, tid, 0)))
    assert read_state(address, group, tid)[:2] == (0, 10)
    deleted = _share_groups_tool(c.bootstrap, "--delete-offsets", "--group", group, "--topic", "sqa")
    assert re.search(r"^sqa\s+Successful", deleted, re.M), deleted
    assert read_state(address, group, tid)[0] == 3  # UNKNOWN_TOPIC_OR_PARTITION: the state is gone
    out = _share_groups_tool(c.bootstrap, "--describe", "--offsets", "--group", group)
    assert not re.search(rf"^{group}\s+sqa\s", out, re.M), out
    # DeleteGroups: the state written since goes too
    third = consumer(c.bootstrap, group, "sqa", 10)
    try:
        wait_until(lambda: _poll(third, [], 0.5) is not None and read_state(address, group, tid)[0] == 0 or None,
                   "the third consumer's share partition initialized")
    finally:
        third.close()
    out = _share_groups_tool(c.bootstrap, "--delete", "--group", group)
    assert "successful" in out.lower(), out
    assert read_state(address, group, tid)[0] == 3
    assert group not in _share_groups_tool(c.bootstrap, "--list").split()
    assert group_coordinator(c.bootstrap, group) != leader


def _offset_rows(bootstrap: str, group: str) -> list[list[str]]:
    """kafka-share-groups --describe --offsets: the group's rows (group, topic, partition, start offset, lag)."""
    out = _share_groups_tool(bootstrap, "--describe", "--offsets", "--group", group)
    return sorted(line.split() for line in out.splitlines() if line.split()[:1] == [group])


def test_share_group_offsets_after_a_group_coordinator_failover(mini_cluster: MiniCluster) -> None:
    """The admin APIs read a share group's partitions from its ShareGroupStatePartitionMetadata
    (Kafka: initializedShareGroupPartitions), which the new group coordinator replays: after the
    members left and the coordinator was killed, kafka-share-groups --describe --offsets lists the
    same partitions and offsets with no member back; --reset-offsets (initialising, then
    initialised), a second failover, --delete-offsets (to deleting and out) and --delete work from
    the replayed record."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    c = mini_cluster
    _topic(c, "sgf", 2)
    group = "sgf-group"
    first = consumer(c.bootstrap, group, "sgf", 10)
    seen: list[tuple[int, int, int]] = []
    try:
        for _ in range(6):  # joined, assigned both partitions, initialised at latest (0)
            _poll(first, seen, 0.5)
        p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0, "acks": "all"})
        for i in range(6):
            p.produce("sgf", value=f"v{i}".encode(), partition=i % 2)
        assert p.flush(30) == 0
        wait_until(lambda: _poll(first, seen, 1.0) is not None and len(seen) >= 6 or None, "six records accepted")
    finally:
        first.close()  # the member leaves: nobody heartbeats the group again
    want = [[group, "sgf", "0", "3", "0"], [group, "sgf", "1", "3", "0"]]
    before = wait_until(lambda: (rows := _offset_rows(c.bootstrap, group)) == want and rows or None,
                        "both share partitions described", timeout=60)
    coordinator = group_coordinator(c.bootstrap, group)
    offsets = partition_for(group, 50)
    wait_until(lambda: len(partitions_of(c, coordinator, "__consumer_offsets")[offsets][2]) == 3 or None,
               "the group's __consumer_offsets partition fully replicated")
    c.kill(coordinator)
    others = [n for n in c.brokers if n != coordinator]
    bootstrap = ",".join(c.brokers[n].bootstrap for n in others)
    wait_until(lambda: group_coordinator(bootstrap, group) in others or None, "a new group coordinator")
    after = wait_until(lambda: _offset_rows(bootstrap, group) or None, "the group described again", timeout=60)
    assert after == before, (before, after)
    reset = _share_groups_tool(bootstrap, "--reset-offsets", "--group", group, "--topic", "sgf:1", "--to-earliest",
                               "--execute")
    assert re.search(rf"^{group}\s+sgf\s+1\s+0\s*$", reset, re.M), reset
    # a second failover: the altered partition is in the record the next coordinator replays
    c.restart(coordinator)
    second = group_coordinator(bootstrap, group)
    wait_until(lambda: len(partitions_of(c, second, "__consumer_offsets")[offsets][2]) == 3 or None,
               "the restarted broker back in the ISR of the group's __consumer_offsets partition", timeout=90)
    c.kill(second)
    bootstrap = ",".join(c.brokers[n].bootstrap for n in c.brokers if n != second)
    wait_until(lambda: group_coordinator(bootstrap, group) != second or None, "a third group coordinator")
    want = [[group, "sgf", "0", "3", "0"], [group, "sgf", "1", "0", "3"]]
    wait_until(lambda: _offset_rows(bootstrap, group) == want or None, "the reset offset described", timeout=60)
    deleted = _share_groups_tool(bootstrap, "--delete-offsets", "--group", group, "--topic", "sgf")
    assert re.search(r"^sgf\s+Successful", deleted, re.M), deleted
    assert _offset_rows(bootstrap, group) == []
    gone = _share_groups_tool(bootstrap, "--delete", "--group", group)
    assert "successful" in gone.lower(), gone
    assert group not in _share_groups_tool(bootstrap, "--list").split()


def _group_configs(c: MiniCluster, group: str, configs: dict[str, str]) -> None:
    """The group's share configs, set with Kafka's kafka-configs (GROUP config resources are the
    metadata log's on a cluster, as in Kafka: every broker applies them)."""
    r = kr.run_tool("kafka-configs", ["--bootstrap-server", c.bootstrap, "--alter", "--entity-type", "groups",
                                      "--entity-name", group, "--add-config",
                                      ",".join(f"{k}={v}" for k, v in configs.items())], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_dlq_partition_led_by_another_broker(mini_cluster: MiniCluster) -> None:
    """KIP-1191 on a cluster: the share-partition leader of sqd-0 holds no replica of the DLQ
    topic, whose one partition another broker leads; the record a consumer rejects is written
    there with Kafka's headers (a Produce, acks=all, from the share-partition leader)."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    c = mini_cluster
    leader, dlq_leader = 1, 2
    group = "sgdlq"
    _group_configs(c, group, {"share.auto.offset.reset": "earliest",
                                      "errors.deadletterqueue.topic.name": "dlq.sqd"})
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic("sqd", num_partitions=1, replica_assignment=[[leader, 2, 3]]),
                                  NewTopic("dlq.sqd", num_partitions=1, replica_assignment=[[dlq_leader]],
                                           config={"errors.deadletterqueue.group.enable": "true"})]).values():
        f.result(30)
    wait_until(lambda: partitions_of(c, leader, "sqd").get(0, (0,))[0] == leader
               and partitions_of(c, leader, "dlq.sqd").get(0, (0,))[0] == dlq_leader or None, "the topics' leaders")
    produce(c.bootstrap, "sqd", [f"v{i}" for i in range(3)])
    sc = consumer(c.bootstrap, group, "sqd", 10)
    seen: list[int] = []
    try:
        def poll() -> bool:
            for m in sc.poll(1.0):
                assert m.error() is None, m.error()
                seen.append(m.offset())
                sc.acknowledge(m, ack_type("reject") if m.offset() == 0 else accept(m))
            sc.commit_sync(30)
            return len(seen) >= 3

        wait_until(poll, "the three records delivered", timeout=90)
    finally:
        sc.close()
    reader = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "sgdlq-reader", "enable.auto.commit": False})
    reader.assign([TopicPartition("dlq.sqd", 0, 0)])
    got: list[Any] = []
    try:
        def read() -> bool:
            m = reader.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
            return bool(got)

        wait_until(read, "the rejected record in the DLQ", timeout=60)
    finally:
        reader.close()
    headers = {k: v.decode() for k, v in got[0].headers() or []}
    assert headers == {"__dlq.errors.topic": "sqd", "__dlq.errors.partition": "0", "__dlq.errors.offset": "0",
                       "__dlq.errors.group": group, "__dlq.errors.delivery.count": "1",
                       "__dlq.errors.message": "Offset rejected by client."}, headers
    assert len(got) == 1 and sorted(seen) == [0, 1, 2], (got, seen)
