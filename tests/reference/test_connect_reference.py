"""Kafka Connect's distributed worker against minibroker and Kafka 4.4 (issue 35).

One worker per broker, both run at once (reference/connect_worker.py): the worker creates its
config, offset and status topics as Connect wants them (compacted; 1, 25 and 5 partitions), then
the FileStream source and sink connectors are driven through Connect's REST API as an operator
does: create, pause (nothing flows), resume, restart a task, read the connectors' offsets
(KIP-875), delete. The lines the sink wrote, the records of the topic and both connectors'
offsets are the same on the two brokers. Then MirrorMaker 2's three connectors (connect-mirror)
run in the same workers, each mirroring its broker to itself (src -> tgt): the mirrored records,
the group's checkpoint, the heartbeats' key, the connector states and the source connector's
offsets are the same on the two brokers, and pause, resume, task restart and delete work on them.
"""

from __future__ import annotations

import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minibroker_protocol.apis import describe_configs, metadata
from reference import connect_worker as cw
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient
from tests.reference.helpers import Pair

TOPIC = "connect-lines"
INTERNAL = {"connect-configs": 1, "connect-offsets": 25, "connect-status": 5}  # Connect's defaults
WAIT = 240.0  # a JVM worker joining its group on a loaded 2-core machine


def _until(what: str, pred: Callable[[], Any], log: Path, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise AssertionError(f"timed out waiting for {what}; worker log tail:\n{tail}")
        time.sleep(0.5)


class Worker:
    """One Connect worker process on `bootstrap`, its REST port, its files."""

    def __init__(self, name: str, bootstrap: str, tmp: Path):
        self.name, self.bootstrap, self.dir = name, bootstrap, tmp
        self.port = kr.free_port()
        self.log = tmp / "worker.log"
        self.source_file, self.sink_file = tmp / "in.txt", tmp / "out.txt"
        props = cw.worker_properties(tmp / "worker.properties", bootstrap, self.port, group=f"connect-{name}")
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(cw.command(props), stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return cw.rest(self.port, method, path, body)

    def until(self, what: str, pred: Callable[[], Any]) -> Any:
        def checked() -> Any:
            assert self.proc.poll() is None, f"the worker exited:\n{self.log.read_text(errors='replace')[-3000:]}"
            return pred()
        return _until(f"{self.name}: {what}", checked, self.log)

    def up(self) -> bool:
        try:
            return self.rest("GET", "/connectors")[0] == 200
        except OSError:
            return False

    def state(self, connector: str) -> tuple[str, list[str]] | None:
        code, body = self.rest("GET", f"/connectors/{connector}/status")
        if code != 200:
            return None
        return body["connector"]["state"], [t["state"] for t in body["tasks"]]

    def sink_lines(self) -> list[str]:
        return self.sink_file.read_text().splitlines() if self.sink_file.exists() else []

    def append(self, lines: list[str]) -> None:
        with self.source_file.open("a") as f:
            f.write("".join(line + "\n" for line in lines))


def _scenario(w: Worker) -> dict[str, Any]:
    """The whole REST session on one worker; what it saw, for comparing the two brokers."""
    seen: dict[str, Any] = {}
    w.until("the REST API", w.up)
    w.append([f"line-{i}" for i in range(20)])
    code, body = w.rest("POST", "/connectors", {"name": "file-source", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(w.source_file), "topic": TOPIC}})
    assert code == 201, body
    code, body = w.rest("POST", "/connectors", {"name": "file-sink", "config": {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(w.sink_file), "topics": TOPIC}})
    assert code == 201, body
    w.until("20 lines through source and sink", lambda: len(w.sink_lines()) >= 20)
    seen["running"] = [w.state("file-source"), w.state("file-sink")]

    assert w.rest("PUT", "/connectors/file-source/pause")[0] == 202
    w.until("the source paused", lambda: w.state("file-source") == ("PAUSED", ["PAUSED"]))
    w.append([f"paused-{i}" for i in range(10)])
    time.sleep(5)  # a paused source reads nothing: the sink must still hold 20 lines
    seen["while_paused"] = len(w.sink_lines())
    assert w.rest("PUT", "/connectors/file-source/resume")[0] == 202
    w.until("30 lines after resume", lambda: len(w.sink_lines()) >= 30)

    code, body = w.rest("POST", "/connectors/file-sink/tasks/0/restart")
    assert code in (200, 204), body
    w.until("the sink task running again", lambda: w.state("file-sink") == ("RUNNING", ["RUNNING"]))
    w.append([f"after-restart-{i}" for i in range(5)])
    w.until("35 lines after the task restart", lambda: len(w.sink_lines()) >= 35)

    def offsets(name: str, want: Callable[[Any], bool]) -> Any:
        def get() -> Any:
            code, body = w.rest("GET", f"/connectors/{name}/offsets")
            return body if code == 200 and want(body) else None
        return w.until(f"{name} offsets", get)

    size = w.source_file.stat().st_size
    src = offsets("file-source", lambda b: [o["offset"] for o in b["offsets"]] == [{"position": size}])
    sink = offsets("file-sink", lambda b: [o["offset"] for o in b["offsets"]] == [{"kafka_offset": 35}])
    seen["source_offsets"] = [{"partition": {"filename": "<in.txt>"}, "offset": o["offset"]} for o in src["offsets"]]
    seen["sink_offsets"] = sink["offsets"]
    seen["sink_lines"] = w.sink_lines()

    for name in ("file-source", "file-sink"):
        assert w.rest("DELETE", f"/connectors/{name}")[0] == 204
    w.until("no connectors", lambda: w.rest("GET", "/connectors") == (200, []))
    seen["internal_topics"] = _internal_topics(w.bootstrap)
    return seen


def _internal_topics(bootstrap: str) -> dict[str, tuple[int, str | None]]:
    """Connect's three topics: (partitions, cleanup.policy)."""
    with RawClient(bootstrap) as c:
        md = c.call(metadata.API, 12, metadata.REQUEST(
            topics=[metadata.REQUEST.MetadataRequestTopic(name=n) for n in INTERNAL],
            allow_auto_topic_creation=False)).to_dict()
        DC = describe_configs.REQUEST
        dc = c.call(describe_configs.API, 4, DC(resources=[
            DC.DescribeConfigsResource(resource_type=2, resource_name=n, configuration_keys=["cleanup.policy"])
            for n in INTERNAL], include_synonyms=False, include_documentation=False)).to_dict()
    policy = {r["resource_name"]: (r["configs"][0]["value"] if r["configs"] else None) for r in dc["results"]}
    return {t["name"]: (len(t["partitions"]), policy.get(t["name"])) for t in md["topics"]}


@pytest.fixture(scope="module")
def workers(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Worker, Worker]]:
    why = cw.missing_prerequisites()
    if why is not None:
        pytest.skip(f"KAFKA CONNECT UNAVAILABLE: {why}")
    cw.fetch()
    ws = (Worker("kafka", pair.kafka.bootstrap, tmp_path_factory.mktemp("connect-kafka")),
          Worker("minibroker", pair.mini.bootstrap, tmp_path_factory.mktemp("connect-mini")))
    try:
        yield ws
    finally:
        for w in ws:
            w.stop()


@pytest.mark.timeout(1200)  # two Connect JVMs start, join their groups and run the whole session
def test_file_connectors_through_rest(workers: tuple[Worker, Worker]) -> None:
    with ThreadPoolExecutor(2) as pool:
        k, m = pool.map(_scenario, workers)
    assert m["running"] == [("RUNNING", ["RUNNING"])] * 2
    assert m["while_paused"] == k["while_paused"] == 20
    assert m["sink_lines"] == k["sink_lines"]
    assert m["sink_lines"] == ([f"line-{i}" for i in range(20)] + [f"paused-{i}" for i in range(10)]
                               + [f"after-restart-{i}" for i in range(5)])
    assert m["source_offsets"] == k["source_offsets"]
    assert m["sink_offsets"] == k["sink_offsets"]
    assert m["internal_topics"] == k["internal_topics"] == {n: (p, "compact") for n, p in INTERNAL.items()}


# MirrorMaker 2's connectors inside the same workers (KIP-382 "running MM2 in a Connect cluster"):
# each worker mirrors its own broker to itself under the aliases src -> tgt, so that the run on
# minibroker (source and target) and the run on Kafka (source and target) are compared as a whole.
MM2_TOPIC, MM2_GROUP = "mm2-in", "mm2-group"
MM2_RECORDS, MM2_COMMITTED = 30, 20
MIRROR = "org.apache.kafka.connect.mirror."


def _mm2_config(bootstrap: str) -> dict[str, str]:
    return {"source.cluster.alias": "src", "target.cluster.alias": "tgt",
            "source.cluster.bootstrap.servers": bootstrap, "target.cluster.bootstrap.servers": bootstrap,
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "tasks.max": "1", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
            "sync.topic.acls.enabled": "false", "offset.lag.max": "0",
            "emit.checkpoints.interval.seconds": "1", "emit.heartbeats.interval.seconds": "1",
            "refresh.groups.interval.seconds": "2", "refresh.topics.interval.seconds": "600",
            "sync.group.offsets.enabled": "false"}


def _read_all(bootstrap: str, topic: str, until: Callable[[list[Any]], bool], log: Path) -> list[Any]:
    """The records of `topic` (key, value) from the beginning up to its high watermark when read
    (heartbeats never stop coming), read again until `until` holds."""
    def read() -> list[Any] | None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            try:
                _, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            except Exception:  # the topic is not there yet
                return None
            c.assign([TopicPartition(topic, 0, 0)])
            got: list[Any] = []
            deadline = time.monotonic() + 30
            while len(got) < end and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append((m.key(), m.value()))
        finally:
            c.close()
        return got if until(got) else None
    return _until(f"records of {topic}", read, log)


def _checkpoint(value: bytes) -> dict[str, Any]:
    """A checkpoint's value: Checkpoint in connect-mirror-client writes a version (int16), then
    the upstream and downstream offsets (int64) and the metadata (a string, int16 length)."""
    version, upstream, downstream, n = struct.unpack_from(">hqqh", value)
    return {"version": version, "upstream": upstream, "downstream": downstream,
            "metadata": value[20:20 + n]}


def _mm2_scenario(w: Worker) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    w.until("the REST API", w.up)  # as in _move_scenario
    p = Producer({"bootstrap.servers": w.bootstrap})
    for i in range(MM2_RECORDS):
        p.produce(MM2_TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": w.bootstrap, "group.id": MM2_GROUP, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(MM2_TOPIC, 0, MM2_COMMITTED)], asynchronous=False)
    c.close()

    cfg = _mm2_config(w.bootstrap)
    for name, extra in (("mirror-source", {"topics": MM2_TOPIC}), ("mirror-checkpoint", {"groups": MM2_GROUP}),
                        ("mirror-heartbeat", {})):
        cls = MIRROR + {"mirror-source": "MirrorSourceConnector", "mirror-checkpoint": "MirrorCheckpointConnector",
                        "mirror-heartbeat": "MirrorHeartbeatConnector"}[name]
        code, body = w.rest("POST", "/connectors", {"name": name, "config": {"connector.class": cls, **cfg, **extra}})
        assert code == 201, body
    names = ("mirror-source", "mirror-checkpoint", "mirror-heartbeat")
    w.until("the MM2 connectors running",
            lambda: all(w.state(n) == ("RUNNING", ["RUNNING"]) for n in names))
    seen["states"] = [w.state(n) for n in names]
    seen["mirrored"] = _read_all(w.bootstrap, f"src.{MM2_TOPIC}", lambda r: len(r) >= MM2_RECORDS, w.log)
    # A checkpoint's key is (group, topic, partition) and its value (upstream, downstream offsets,
    # metadata), Checkpoint in connect-mirror-client: the last one for our group says where the
    # group would resume on the target.
    seen["checkpoint"] = _read_all(w.bootstrap, "src.checkpoints.internal",
                                   lambda r: any(MM2_GROUP.encode() in (k or b"") for k, _ in r), w.log)[-1]
    hb = _read_all(w.bootstrap, "heartbeats", lambda r: len(r) >= 2, w.log)
    seen["heartbeat_keys"] = sorted({k for k, _ in hb})

    def offsets() -> Any:
        code, body = w.rest("GET", "/connectors/mirror-source/offsets")
        if code != 200:
            return None
        got = [o for o in body["offsets"] if o["partition"].get("topic") == MM2_TOPIC]
        return got if got and got[0]["offset"].get("offset") == MM2_RECORDS - 1 else None
    seen["source_offsets"] = w.until("mirror-source offsets", offsets)

    assert w.rest("PUT", "/connectors/mirror-source/pause")[0] == 202
    w.until("mirror-source paused", lambda: w.state("mirror-source") == ("PAUSED", ["PAUSED"]))
    assert w.rest("PUT", "/connectors/mirror-source/resume")[0] == 202
    code, body = w.rest("POST", "/connectors/mirror-source/tasks/0/restart")
    assert code in (200, 204), body
    w.until("mirror-source running again", lambda: w.state("mirror-source") == ("RUNNING", ["RUNNING"]))
    for n in names:
        assert w.rest("DELETE", f"/connectors/{n}")[0] == 204
    w.until("no connectors", lambda: w.rest("GET", "/connectors") == (200, []))
    return seen


@pytest.mark.timeout(1200)  # three MM2 connectors per worker, their topics created and filled
def test_mirror_maker_connectors_through_rest(workers: tuple[Worker, Worker]) -> None:
    with ThreadPoolExecutor(2) as pool:
        k, m = pool.map(_mm2_scenario, workers)
    assert m["states"] == k["states"] == [("RUNNING", ["RUNNING"])] * 3
    want = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(MM2_RECORDS)]
    assert m["mirrored"] == k["mirrored"] == want
    # The key, the version, the upstream offset and the metadata are the same; the downstream
    # offset is a translation through the offset syncs MirrorSourceTask happened to emit (it drops
    # syncs while ten are outstanding, and OffsetSyncStore keeps a sparse set), so Kafka's own
    # value varies from run to run (10 in one CI run, 17 on minibroker): it must only never pass
    # the group's true position on the target.
    (mk, mv), (kk, kv) = m["checkpoint"], k["checkpoint"]
    assert mk == kk
    m_cp, k_cp = _checkpoint(mv), _checkpoint(kv)
    assert m_cp["upstream"] == k_cp["upstream"] == MM2_COMMITTED
    assert (m_cp["version"], m_cp["metadata"]) == (k_cp["version"], k_cp["metadata"])
    assert 0 <= m_cp["downstream"] <= MM2_COMMITTED and 0 <= k_cp["downstream"] <= MM2_COMMITTED
    assert m["heartbeat_keys"] == k["heartbeat_keys"] and len(m["heartbeat_keys"]) == 1
    assert m["source_offsets"] == k["source_offsets"]


# MirrorMaker 2 between the two brokers, as docs/migrating.md moves a group to Kafka: each worker
# runs on its target (MM2's advice for a Connect cluster) and mirrors the other broker into its
# own, with group offset sync on. The group's committed offset arrives on the target translated,
# and a consumer of the group there resumes without losing a record.
MOVE_TOPIC, MOVE_GROUP, MOVE_RECORDS, MOVE_COMMITTED = "mm2-move", "mm2-move-group", 30, 20
MOVE_FIRST = 5  # records written before the connectors start


def _move_scenario(w: Worker, source: str, aliases: tuple[str, str]) -> dict[str, Any]:
    """Mirror `source` into `w`'s broker under `aliases` (source, target); what the target holds."""
    src_alias, tgt_alias = aliases
    # the worker ran the two tests before; its REST API answering (or its log, if it exited) first:
    # a POST that met a refused connection said nothing of why
    w.until("the REST API", w.up)
    p = Producer({"bootstrap.servers": source})

    def produce(first: int, end: int) -> None:
        for i in range(first, end):
            p.produce(MOVE_TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
        assert p.flush(60) == 0

    def commit(offset: int) -> None:
        c = Consumer({"bootstrap.servers": source, "group.id": MOVE_GROUP, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(MOVE_TOPIC, 0, offset)], asynchronous=False)
        c.close()

    # The topic with its first records and the group before the connectors (MirrorSourceConnector
    # lists topics at start), the rest and the commit to translate once both run, so that their
    # offset syncs are emitted while MirrorCheckpointTask runs. With every record mirrored before
    # the checkpoint task came up, a loaded CI machine once saw the group never synced to
    # minibroker in 240 s, MM2 logging nothing: OffsetSyncStore keeps a sparse set of the syncs it
    # reads while starting, and when none of them is at or below the committed offset it cannot
    # translate it (our reading of MM2 4.x; the test passed in 16 s alone on the same commit).
    produce(0, MOVE_FIRST)
    commit(0)  # the group exists (MirrorCheckpointConnector gives tasks only to existing groups)
    cfg = {**_mm2_config(source), "source.cluster.alias": src_alias, "target.cluster.alias": tgt_alias,
           "target.cluster.bootstrap.servers": w.bootstrap, "sync.group.offsets.enabled": "true",
           "sync.group.offsets.interval.seconds": "1"}
    names = {"move-source": ("MirrorSourceConnector", {"topics": MOVE_TOPIC}),
             "move-checkpoint": ("MirrorCheckpointConnector", {"groups": MOVE_GROUP})}
    for name, (cls, extra) in names.items():
        code, body = w.rest("POST", "/connectors", {"name": name, "config": {"connector.class": MIRROR + cls,
                                                                             **cfg, **extra}})
        assert code == 201, body
    w.until("the MM2 connectors running", lambda: all(w.state(n) == ("RUNNING", ["RUNNING"]) for n in names))
    remote = f"{src_alias}.{MOVE_TOPIC}"
    _read_all(w.bootstrap, remote, lambda r: len(r) >= MOVE_FIRST, w.log)
    produce(MOVE_FIRST, MOVE_RECORDS)
    commit(MOVE_COMMITTED)
    seen: dict[str, Any] = {"mirrored": _read_all(w.bootstrap, remote, lambda r: len(r) >= MOVE_RECORDS, w.log)}

    def synced() -> int | None:
        g = Consumer({"bootstrap.servers": w.bootstrap, "group.id": MOVE_GROUP, "enable.auto.commit": False})
        try:
            got = g.committed([TopicPartition(remote, 0)], timeout=10)[0].offset
        finally:
            g.close()
        return got if got >= 0 else None
    seen["synced"] = w.until("the group's offset synced to the target", synced)
    # The group resumes on the target from the synced offset and reads to the end.
    g = Consumer({"bootstrap.servers": w.bootstrap, "group.id": MOVE_GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    g.subscribe([remote])
    resumed: list[bytes] = []
    deadline = time.monotonic() + 60
    while (not resumed or resumed[-1] != f"k{MOVE_RECORDS - 1}".encode()) and time.monotonic() < deadline:
        m = g.poll(0.5)
        if m is not None and m.error() is None:
            resumed.append(m.key())
    g.close()
    seen["resumed"] = resumed
    for n in names:
        assert w.rest("DELETE", f"/connectors/{n}")[0] == 204
    return seen


@pytest.mark.timeout(1200)
def test_mirror_maker_moves_a_topic_and_its_group_between_the_brokers(workers: tuple[Worker, Worker]) -> None:
    kafka_w, mini_w = workers
    with ThreadPoolExecutor(2) as pool:
        to_kafka = pool.submit(_move_scenario, kafka_w, mini_w.bootstrap, ("mini", "kafka"))
        to_mini = pool.submit(_move_scenario, mini_w, kafka_w.bootstrap, ("kafka", "mini"))
        k, m = to_kafka.result(), to_mini.result()
    want = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(MOVE_RECORDS)]
    assert k["mirrored"] == m["mirrored"] == want
    for seen in (k, m):
        # At least once: the translated offset never passes the group's position (offset syncs are
        # sparse, so it may lag it), and the group reads every record from there on.
        assert 0 < seen["synced"] <= MOVE_COMMITTED
        assert seen["resumed"] == [f"k{i}".encode() for i in range(seen["synced"], MOVE_RECORDS)]
