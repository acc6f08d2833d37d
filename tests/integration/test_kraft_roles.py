"""Nodes started with Kafka's own keys (process.roles, node.id, controller.quorum.voters, controller.listener.names):
a controller process and broker processes that register with it and follow its metadata log, a SIGTERM that
runs a controlled shutdown, and a combined broker+controller node that clients use as before."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kafka.admin import KafkaAdminClient

from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.image import MetadataImage
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker_protocol.metadata_serde import read_metadata_batches
from minibroker_storage.checkpoint import read_properties
from tests.helpers import ROOT, BrokerProcess, free_port

TIMEOUT = 60.0


def node(tmp_path: Path, name: str, port: int, overrides: dict[str, object]) -> BrokerProcess:
    p = BrokerProcess(tmp_path / name / "data", port=port, overrides={"broker.heartbeat.interval.ms": 200,
                                                                         **overrides})
    (tmp_path / name).mkdir()
    return p


def observe(controller_port: int, cluster_id: str, check: Callable[[MetadataImage], bool], what: str) -> None:
    """Follow the controller's metadata log as an observer until `check(image)` holds."""
    async def run() -> None:
        loader = MetadataLoader(ControllerChannel("127.0.0.1", controller_port, client_id="test-observer"),
                                node_id=-1, cluster_id=cluster_id)
        deadline = time.monotonic() + TIMEOUT
        try:
            while not check(loader.image):
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {loader.image.brokers}"
                try:
                    await loader.fetch_once(max_wait_ms=200)
                except ConnectionError:
                    await asyncio.sleep(0.1)
        finally:
            await loader.channel.close()
    asyncio.run(run())


def test_a_controller_and_two_brokers_in_their_own_processes(tmp_path: Path) -> None:
    cport = free_port()
    voters = f"3000@127.0.0.1:{cport}"
    controller = node(tmp_path, "controller", cport, {
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": voters,
        "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER",
        "broker.session.timeout.ms": 3000})
    controller.start()
    cluster_id = read_properties(controller.data_dir / "meta.properties")["cluster.id"]
    brokers = {}
    try:
        for i in (1, 2):
            b = node(tmp_path, f"broker{i}", free_port(), {
                "process.roles": "broker", "node.id": i, "controller.quorum.voters": voters,
                "controller.listener.names": "CONTROLLER", "cluster.id": cluster_id})
            b.start()
            brokers[i] = b
        observe(cport, cluster_id, lambda im: {1, 2} <= im.brokers.keys()
                and not any(im.brokers[i].fenced for i in (1, 2)), "both brokers unfenced")
        admin = KafkaAdminClient(bootstrap_servers=brokers[1].bootstrap, request_timeout_ms=10000)
        try:
            assert admin.describe_cluster()["cluster_id"] == cluster_id  # the broker serves clients as before
        finally:
            admin.close()
        assert brokers[2].stop(60) == 0  # SIGTERM: a controlled shutdown (slow on a loaded machine), then the end
        observe(cport, cluster_id, lambda im: 2 in im.brokers and im.brokers[2].fenced
                and im.brokers[2].in_controlled_shutdown, "broker 2 shut down through the controller")
        brokers[1].kill()  # no goodbye: fenced when its session runs out
        observe(cport, cluster_id, lambda im: 1 in im.brokers and im.brokers[1].fenced,
                "broker 1 fenced by the session timeout")
        assert "controlled shutdown completed" in brokers[2].log_text()
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.kill()
        controller.stop()
    segment = controller.data_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    kinds = [type(r.message).__name__ for b in read_metadata_batches(segment.read_bytes()) if not b.is_control
             for r in b.records]
    assert kinds.count("RegisterBrokerRecord") == 2 and "BrokerRegistrationChangeRecord" in kinds


def test_a_combined_node_serves_clients_and_keeps_its_metadata_log(tmp_path: Path) -> None:
    port, cport = free_port(), free_port()
    combined = node(tmp_path, "combined", port, {
        "process.roles": "broker,controller", "node.id": 1, "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        "controller.listener.names": "CONTROLLER"})
    combined.start()
    try:
        cluster_id = read_properties(combined.data_dir / "meta.properties")["cluster.id"]
        observe(cport, cluster_id, lambda im: 1 in im.brokers and not im.brokers[1].fenced, "the node unfenced")
        admin = KafkaAdminClient(bootstrap_servers=combined.bootstrap, request_timeout_ms=10000)
        try:
            assert admin.describe_cluster()["cluster_id"] == cluster_id
            assert "__cluster_metadata" not in admin.list_topics()
        finally:
            admin.close()
    finally:
        assert combined.stop() == 0


def test_a_controller_without_its_listener_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "minibroker", "--data-dir", str(tmp_path / "d"), "--override", "process.roles=controller",
         "--override", "node.id=3000", "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "minibroker: process.roles includes controller, but no listener is named in controller.listener.names")




def test_a_controller_killed_and_started_again_keeps_its_brokers(tmp_path: Path) -> None:
    cport = free_port()
    voters = f"3000@127.0.0.1:{cport}"
    controller = node(tmp_path, "controller", cport, {
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": voters,
        "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER"})
    controller.start()
    cluster_id = read_properties(controller.data_dir / "meta.properties")["cluster.id"]
    broker = node(tmp_path, "broker", free_port(), {
        "process.roles": "broker", "node.id": 1, "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER", "cluster.id": cluster_id})
    broker.start()
    try:
        observe(cport, cluster_id, lambda im: 1 in im.brokers and not im.brokers[1].fenced, "the broker unfenced")
        epoch = (controller.data_dir / "__cluster_metadata-0" / "quorum-state").read_text()
        assert '"leaderEpoch":1' in epoch
        controller.kill()  # kill -9, then the same command on the same data dir
        controller.start()
        quorum = (controller.data_dir / "__cluster_metadata-0" / "quorum-state").read_text()
        assert '"leaderEpoch":2' in quorum and read_properties(controller.data_dir / "meta.properties")[
            "cluster.id"] == cluster_id
        # the broker keeps its registration and heartbeats on: unfenced in the new epoch, no new registration
        observe(cport, cluster_id, lambda im: 1 in im.brokers and not im.brokers[1].fenced and im.epoch == 2,
                "the broker in the controller's new epoch")
        segment = controller.data_dir / "__cluster_metadata-0" / "00000000000000000000.log"
        kinds = [type(r.message).__name__ for b in read_metadata_batches(segment.read_bytes()) if not b.is_control
                 for r in b.records]
        assert kinds.count("RegisterBrokerRecord") == 1
    finally:
        broker.kill()
        controller.stop()


def test_a_sigterm_while_the_broker_starts_stops_it_once_started(tmp_path: Path) -> None:
    """SIGTERM is handled from the process's first moment (minibroker.cli.serve): one that comes
    while a KRaft broker still waits for its controller stops it once it has started, instead of
    being lost (a broker that then ignored SIGTERM for good: seen in CI)."""
    cport = free_port()
    voters = f"3000@127.0.0.1:{cport}"
    controller = node(tmp_path, "controller", cport, {
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": voters,
        "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER"})
    controller.start()
    cluster_id = read_properties(controller.data_dir / "meta.properties")["cluster.id"]
    assert controller.stop() == 0
    broker = node(tmp_path, "broker", free_port(), {
        "process.roles": "broker", "node.id": 1, "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER", "cluster.id": cluster_id})
    broker.start()  # its listener is bound; it waits for the controller to register
    try:
        deadline = time.monotonic() + TIMEOUT
        while "registration failed" not in broker.log_text():
            assert time.monotonic() < deadline, broker.log_text()
            time.sleep(0.05)
        assert broker.proc is not None
        broker.proc.send_signal(signal.SIGTERM)
        controller.start()
        assert broker.proc.wait(TIMEOUT) == 0
        assert "shutting down" in broker.log_text()
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.kill()
        controller.stop()
