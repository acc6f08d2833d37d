"""`python -m minibroker cluster`'s contract (minibroker.cluster_launcher): cluster.json, ports P+i,
Kafka's keys in each node.properties, one cluster id, SIGTERM stops everything with exit 0, a node
killed with kill -9 restarted alone by its documented command, a second launcher refused by the
data dir's lock, start-up errors in one line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from minibroker.cluster_control import read_node_properties
from minibroker.testing import Cluster

ROOT = Path(__file__).resolve().parents[2]
BROKERS = 3
FAST = ["--override", "broker.session.timeout.ms=3000", "--override", "broker.heartbeat.interval.ms=500"]


def free_base(n: int) -> int:
    """A port P with P+1 .. P+n+1 free (the brokers and the controller)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n + 1 > 65000:
            continue
        try:
            socks = []
            for p in range(base + 1, base + n + 2):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def launch(data_dir: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "minibroker", "cluster", "--brokers", str(BROKERS), "--host",
                             "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir), *FAST, *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_cluster_json(data_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 240.0) -> dict:
    deadline = time.monotonic() + timeout
    path = data_dir / "cluster.json"
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "cluster.json never written"
        time.sleep(0.1)
    return json.loads(path.read_text())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


def cluster_id_of(data_dir: Path) -> str:
    meta = dict(line.split("=", 1) for line in data_dir.joinpath("meta.properties").read_text().splitlines()
                if "=" in line and not line.startswith("#"))
    return meta["cluster.id"]


def stop(proc: subprocess.Popen[bytes], timeout: float = 180.0) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_cli_contract(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    base = free_base(BROKERS)
    proc = launch(d, base)
    try:
        doc = wait_cluster_json(d, proc)
        # cluster.json: every node, broker i on P+i, the controller on P+N+1
        assert [(b["node_id"], b["host"], b["port"]) for b in doc["brokers"]] == [
            (i, "127.0.0.1", base + i) for i in range(1, BROKERS + 1)]
        assert (doc["controller"]["node_id"], doc["controller"]["port"]) == (3000, base + BROKERS + 1)
        pids = [b["pid"] for b in doc["brokers"]] + [doc["controller"]["pid"]]
        assert all(alive(p) for p in pids)
        # each node's node.properties: Kafka's keys; the command that restarts it
        props = read_node_properties(d / "broker-2" / "node.properties")
        assert props["process.roles"] == "broker" and props["node.id"] == "2"
        assert props["controller.quorum.voters"] == f"3000@127.0.0.1:{base + BROKERS + 1}"
        assert props["controller.listener.names"] == "CONTROLLER"
        assert props["listeners"] == f"PLAINTEXT://127.0.0.1:{base + 2}"
        assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        assert read_node_properties(d / "controller" / "node.properties")["process.roles"] == "controller"
        cmdline = Path(f"/proc/{doc['brokers'][1]['pid']}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:4] == [b"-m", b"minibroker", b"--config"] and cmdline[4].endswith(b"broker-2/node.properties")
        # one cluster id, in every node's meta.properties (Kafka's StorageTool format)
        ids = {cluster_id_of(d / n / "data") for n in ("controller", "broker-1", "broker-2", "broker-3")}
        assert ids == {doc["cluster_id"]}
        # every broker is serving: a topic of replication factor 3 at once, from any broker
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{base + 3}", request_timeout_ms=30000)
        try:
            admin.create_topics([NewTopic("rf3", 3, 3)])
            described = admin.describe_cluster()
        finally:
            admin.close()
        assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2, 3]
        # a second launcher on the same directory: refused by its lock, one line, exit 2
        second = launch(d, free_base(BROKERS))
        out, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1 and ".lock" in lines[0] and "another `minibroker cluster`" in lines[0], lines
        assert all(alive(p) for p in pids)  # the running cluster untouched
    finally:
        rc = stop(proc)
    assert rc == 0, proc.communicate()
    assert not any(alive(p) for p in pids)
    assert not (d / "cluster.json").exists()
    # started again on its data dir: the same cluster id, the topic still there
    proc = launch(d, base)
    try:
        again = wait_cluster_json(d, proc)
        assert again["cluster_id"] == doc["cluster_id"]
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{base + 1}", request_timeout_ms=30000)
        try:
            assert "rf3" in admin.list_topics()
        finally:
            admin.close()
    finally:
        assert stop(proc) == 0


def test_kill_9_then_restart_alone_by_its_command(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    proc = launch(d, 0)
    try:
        doc = wait_cluster_json(d, proc)
        victim = doc["brokers"][1]
        os.kill(victim["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while alive(victim["pid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(victim["pid"])
        assert proc.poll() is None  # the launcher restarts nothing and goes on
        # the documented command, alone (no launcher involved)
        with open(d / "broker-2" / "node.log", "ab") as log:
            alone = subprocess.Popen([sys.executable, "-m", "minibroker", "--config",
                                      str(d / "broker-2" / "node.properties")], cwd=ROOT, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        admin = None
        deadline = time.monotonic() + 120
        while True:
            try:
                admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{victim['port']}", request_timeout_ms=10000)
                if sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == [1, 2, 3]:
                    break
            except Exception:  # noqa: BLE001 - not serving yet
                pass
            finally:
                if admin is not None:
                    admin.close()
                    admin = None
            assert alone.poll() is None, (d / "broker-2" / "node.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the restarted broker never served"
            time.sleep(0.2)
        assert cluster_id_of(d / "broker-2" / "data") == doc["cluster_id"]
    finally:
        rc = stop(proc)
    # the launcher stopped the broker it had not started too (the holder of its data dir lock)
    assert rc == 0
    alone.wait(30)
    assert alone.returncode == 0  # a clean stop (SIGTERM), not a kill


def test_start_up_errors_are_one_line(tmp_path: Path) -> None:
    base = free_base(BROKERS)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 2))
        taken.listen()
        proc = launch(tmp_path / "c", base)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and f"broker-2 cannot listen on 127.0.0.1:{base + 2}" in lines[0], lines
    (tmp_path / "file").write_text("x")
    proc = launch(tmp_path / "file", base)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.decode().strip().splitlines()) == 1, err


def test_the_cluster_object(tmp_path: Path) -> None:
    """minibroker.testing.Cluster's operations on its own cluster (the module-shared fixture is in
    test_cluster_fixture.py)."""
    with Cluster(3, data_dir=tmp_path / "c") as c:
        assert sorted(c.brokers) == [1, 2, 3] and c.controller is not None
        assert len(c.bootstrap.split(",")) == 3
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
        try:
            admin.create_topics([NewTopic("obj", 1, 3)])
        finally:
            admin.close()
        c.wait_for_isr("obj", 0, [1, 2, 3])
        leader = c.wait_for_leader("obj", 0)
        other = next(n for n in c.brokers if n != leader)
        c.move_leader("obj", 0, other)
        assert c.leader("obj") == other and c.partition("obj").replicas[0] == other
        c.stop_broker(other)  # controlled shutdown: leadership leaves it first
        assert not c.running(other)
        assert c.wait_for_leader("obj", 0, lambda n: n != other) != other
        c.start_broker(other)
        assert c.serves(other)
        c.wait_for_isr("obj", 0, [1, 2, 3])
    assert not (tmp_path / "c" / "cluster.json").exists()
    with pytest.raises(KeyError):
        c.brokers[4]  # noqa: B018
