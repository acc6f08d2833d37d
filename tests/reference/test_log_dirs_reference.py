"""Several log directories (`log.dirs` with two paths) on Kafka 4.4 and on minibroker, through
Kafka's own tools: where new partitions go and what `kafka-log-dirs --describe` reports, a
partition moved to the other directory by `kafka-reassign-partitions --execute` (a JSON naming
`log_dirs`) while a producer keeps writing to it, `--verify`, every record readable afterwards and
the segment in the new directory read by `kafka-dump-log`. Then, on minibroker alone, a directory
that fails while the broker runs (replaced by a file): its partitions go offline with
KAFKA_STORAGE_ERROR as Kafka documents, the other directory keeps serving, nothing acknowledged
there is lost.

Both brokers are KRaft combined nodes (kafka-reassign-partitions needs the controller's
reassignment APIs), started once for the module; the failing directory uses an in-process
broker of its own (no JVM). The move test uses the topic the first test creates (run the module
whole)."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.crash_loop import Wire, fetch_all
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import metadata, produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import Record, build_batch
from reference.kafka_reference import KafkaReference, run_tool
from tests.helpers import BrokerProcess, free_port

TOPIC = "ld"
POOL = ThreadPoolExecutor(4)
TIMEOUT = 60.0


@dataclass
class Node:
    name: str
    bootstrap: str
    dirs: tuple[Path, Path]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Node]]:
    root = tmp_path_factory.mktemp("log-dirs")
    kdirs = (root / "kafka" / "a", root / "kafka" / "b")
    (root / "kafka").mkdir()
    kafka = KafkaReference(workdir=root / "kafka", jit=False,
                           overrides={"log.dirs": ",".join(map(str, kdirs))})
    port, cport = free_port(), free_port()
    mdirs = (root / "mini" / "a", root / "mini" / "b")
    mini = BrokerProcess(root / "mini" / "data", port=port, overrides={
        "process.roles": "broker,controller", "node.id": 1, "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        "controller.listener.names": "CONTROLLER", "log.dirs": ",".join(map(str, mdirs))})
    (root / "mini").mkdir()
    kafka.start()
    try:
        mini.start()
        try:
            yield {"kafka": Node("kafka", kafka.bootstrap, kdirs), "mini": Node("mini", mini.bootstrap, mdirs)}
        finally:
            assert mini.stop() == 0
    finally:
        kafka.stop()


def tool(name: str, *args: str) -> str:
    r = run_tool(name, list(args), timeout=120)
    assert r.returncode == 0, f"{name} {args}: {r.stdout}{r.stderr}"
    return str(r.stdout)


def create_and_fill(node: Node, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % 4)
    assert p.flush(30) == 0


def describe(node: Node) -> dict[str, dict[str, object]]:
    """kafka-log-dirs --describe as {directory: {partition: (size, lag, future)}}; paths as a/b."""
    out = tool("kafka-log-dirs", "--bootstrap-server", node.bootstrap, "--describe", "--topic-list", TOPIC)
    doc = json.loads(out.strip().splitlines()[-1])
    (broker,) = doc["brokers"]
    names = {str(d): d.name for d in node.dirs}
    return {names[ld["logDir"]]: {"error": ld["error"],
                                  "partitions": {p["partition"]: (p["offsetLag"], p["isFuture"])
                                                 for p in ld["partitions"]},
                                  "sizes": {p["partition"]: p["size"] for p in ld["partitions"]}}
            for ld in broker["logDirs"]}


def placement(described: dict[str, dict[str, object]]) -> list[list[str]]:
    """Which partitions share a directory (Kafka breaks ties between equally full directories in an
    order of its own, so the directories' names are left out)."""
    return sorted(sorted(d["partitions"]) for d in described.values())  # type: ignore[call-overload]


def masked_output(node: Node) -> str:
    """kafka-log-dirs --describe whole, sizes masked, each directory named after the first partition
    it holds (Kafka's tie-break between equally full directories is its own), directories sorted
    (Kafka lists them from a set)."""
    out = tool("kafka-log-dirs", "--bootstrap-server", node.bootstrap, "--describe", "--topic-list", TOPIC)
    *head, last = out.strip().splitlines()
    doc = json.loads(last)
    for broker in doc["brokers"]:
        for ld in broker["logDirs"]:
            ld["partitions"].sort(key=lambda p: p["partition"])
            ld["logDir"] = "<dir of " + ",".join(p["partition"] for p in ld["partitions"]) + ">"
            for p in ld["partitions"]:
                p["size"] = "<size>"
        broker["logDirs"].sort(key=lambda ld: ld["logDir"])
    return "\n".join([*head, json.dumps(doc, sort_keys=True)])


def test_new_partitions_spread_and_kafka_log_dirs_describe(nodes: dict[str, Node]) -> None:
    list(POOL.map(lambda n: create_and_fill(n, 40), nodes.values()))
    k_out, m_out = POOL.map(masked_output, (nodes["kafka"], nodes["mini"]))
    assert '"logDir": "<dir of ld-0,ld-2>"' in k_out
    assert m_out == k_out, f"\n--- Kafka:\n{k_out}\n--- minibroker:\n{m_out}"
    k, m = describe(nodes["kafka"]), describe(nodes["mini"])
    assert sorted(k) == sorted(m) == ["a", "b"]
    # the directory with the fewest partitions gets the next one: two each
    assert placement(k) == placement(m) == [["ld-0", "ld-2"], ["ld-1", "ld-3"]], (k, m)
    for side in (k, m):
        for d in side.values():
            assert d["error"] is None
            assert all(v == (0, False) for v in d["partitions"].values())  # type: ignore[attr-defined]
            assert all(size > 0 for size in d["sizes"].values())  # type: ignore[attr-defined]


def _dir_of(node: Node, partition: str) -> Path:
    return next(d for d in node.dirs if (d / partition).is_dir())


def _move_while_producing(node: Node, tmp: Path) -> tuple[str, int, Path]:
    """Move ld-0 to the other directory with kafka-reassign-partitions while a producer writes to
    it; (--verify's whole output once done, records acknowledged in all, the new directory)."""
    from confluent_kafka import Producer

    source = _dir_of(node, "ld-0")
    target = next(d for d in node.dirs if d != source)
    spec = tmp / f"{node.name}-move.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": [1], "log_dirs": [str(target)]}]}))
    acked = [10]  # create_and_fill put 10 records in ld-0
    stop = threading.Event()

    def produce() -> None:
        p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", "linger.ms": 5})
        i = 0
        while not stop.is_set():
            p.produce(TOPIC, key=b"m%d" % i, value=b"moving-%d" % i, partition=0,
                      on_delivery=lambda err, _m: acked.__setitem__(0, acked[0] + (err is None)))
            p.poll(0.01)
            i += 1
        assert p.flush(30) == 0

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    try:
        time.sleep(0.5)
        out = tool("kafka-reassign-partitions", "--bootstrap-server", node.bootstrap, "--execute",
                   "--reassignment-json-file", str(spec))
        assert f"Successfully started moving log directory to {target} for replica ld-0 with broker 1" in out, out
        deadline = time.monotonic() + TIMEOUT
        while True:
            r = run_tool("kafka-reassign-partitions", ["--bootstrap-server", node.bootstrap, "--verify",
                                                       "--reassignment-json-file", str(spec)], timeout=120)
            status = str(r.stdout)
            if "completed successfully" in status:
                assert r.returncode == 0, f"{r.stdout}{r.stderr}"  # the throttles cleared too
                break
            assert time.monotonic() < deadline, f"{r.stdout}{r.stderr}"
            time.sleep(0.5)
    finally:
        stop.set()
        writer.join(60)
    return status.replace(str(target), "<target>"), acked[0], target


def _consume_partition_0(node: Node) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": f"ld-check-{node.name}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    empty = 0
    while empty < 5:
        msgs = c.consume(500, 1.0)
        empty = 0 if msgs else empty + 1
        values += [m.value() for m in msgs if m.error() is None]
    c.close()
    return values


def test_move_between_log_dirs_with_kafka_reassign_partitions(nodes: dict[str, Node], tmp_path: Path) -> None:
    # both sides at once: the tool's JVM starts are most of the time
    results = dict(zip(nodes, POOL.map(lambda n: _move_while_producing(n, tmp_path), nodes.values()), strict=True))
    k_status, m_status = results["kafka"][0], results["mini"][0]
    assert m_status == k_status, f"\n--- Kafka:\n{k_status}\n--- minibroker:\n{m_status}"
    for name, node in nodes.items():
        _, acked, target = results[name]
        assert _dir_of(node, "ld-0") == target
        values = _consume_partition_0(node)
        assert len(values) == acked and len(set(values)) == acked, (name, len(values), acked)
        described = describe(node)
        assert "ld-0" in described[target.name]["partitions"]  # type: ignore[operator]
        # Kafka's dump tool reads the moved segment: offsets 0.. without a gap
        segments = sorted((target / "ld-0").glob("*.log"))
        dumped = tool("kafka-dump-log", "--files", ",".join(map(str, segments)))
        offsets = [int(o) for o in re.findall(r"lastOffset: (\d+)", dumped)]
        assert offsets and offsets[-1] == acked - 1, (name, offsets[-3:], acked)


def test_a_failed_log_dir_goes_offline_and_the_other_keeps_serving(tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    a, b = tmp_path / "a", tmp_path / "b"
    broker = BrokerThread(tmp_path, overrides={"log.dirs": f"{a},{b}", "log.flush.offset.checkpoint.interval.ms": 100})
    broker.start()
    try:
        broker.create_topic(TOPIC, 2)
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        for i in range(20):
            p.produce(TOPIC, value=b"before-%d" % i, partition=i % 2)
        assert p.flush(30) == 0
        failing = _dir_of(Node("mini", broker.bootstrap, (a, b)), "ld-1")
        healthy_partition = 0 if failing == b else 1
        # the directory is replaced by a file under the running broker
        failing.rename(tmp_path / "gone")
        failing.write_text("not a directory any more")
        port = int(broker.bootstrap.rsplit(":", 1)[1])
        wire = Wire(port, timeout=10)
        R = produce.REQUEST

        def produce_to(partition: int, value: bytes) -> int:
            resp = wire.call(produce.API, 9, R(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                R.TopicProduceData(name=TOPIC, partition_data=[R.PartitionProduceData(
                    index=partition, records=build_batch([Record(key=None, value=value)], base_timestamp=0))])]))
            return int(resp.responses[0].partition_responses[0].error_code)

        deadline = time.monotonic() + TIMEOUT
        while produce_to(1 - healthy_partition, b"after") != ErrorCode.KAFKA_STORAGE_ERROR:
            assert time.monotonic() < deadline, "the failed directory never went offline"
            time.sleep(0.1)
        assert produce_to(healthy_partition, b"after") == 0
        with pytest.raises(RuntimeError, match=f"error {int(ErrorCode.KAFKA_STORAGE_ERROR)}"):
            fetch_all(port, TOPIC, 1 - healthy_partition, timeout=10)  # reads answer it too
        md = wire.call(metadata.API, 12, metadata.REQUEST(topics=[metadata.REQUEST.MetadataRequestTopic(
            name=TOPIC)], allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        parts = {x.partition_index: x for x in md.topics[0].partitions}
        assert parts[1 - healthy_partition].offline_replicas == [1]
        assert parts[1 - healthy_partition].error_code == ErrorCode.LEADER_NOT_AVAILABLE
        assert parts[healthy_partition].offline_replicas == [] and parts[healthy_partition].leader_id == 1
        wire.close()
        out = tool("kafka-log-dirs", "--bootstrap-server", broker.bootstrap, "--describe")
        dirs = {ld["logDir"]: ld for ld in json.loads(out.strip().splitlines()[-1])["brokers"][0]["logDirs"]}
        assert dirs[str(failing)]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
        healthy = dirs[str(a if failing == b else b)]
        assert healthy["error"] is None and [x["partition"] for x in healthy["partitions"]] == [f"ld-{healthy_partition}"]
        # what was acknowledged on the healthy directory is all there, with the new record
        values = broker.values(TOPIC, healthy_partition)
        assert values == [b"before-%d" % i for i in range(healthy_partition, 20, 2)] + [b"after"]
        AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)  # the broker still answers
    finally:
        broker.stop()
        shutil.rmtree(tmp_path / "gone", ignore_errors=True)
