"""An Apache Kafka 4.4 broker whose KRaft controller is minibroker's (process.roles=controller): the broker
registers, follows our metadata log until the controller unfences it, forwards a client's CreateTopics to us
(Envelope), leads the partitions our PartitionRecords give it, serves produce and fetch, and leaves through
our controlled shutdown on SIGTERM. The wire between brokers and controller is Kafka's own: a proxy in
between keeps every request Kafka's broker sent, and each one decodes with our schemas and encodes
back to the same bytes (golden bytes for BrokerRegistration, BrokerHeartbeat, Fetch, Envelope...)."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.image import MetadataImage
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker.security.principal_serde import deserialize, serialize
from minibroker.testing import SCRAM_JAAS
from minibroker_protocol import apis
from minibroker_protocol.apis import envelope
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.headers import decode_request_header, encode_request_header
from reference import kafka_reference as kr
from tests.helpers import BrokerProcess, free_port
from tests.reference import token_helpers

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TIMEOUT = 90.0
TOKEN_SECRET = "token-secret"  # delegation.token.secret.key: the same on the broker and the controller
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-pw" user_alice="alice-pw";')


def observe(port: int, check: Callable[[MetadataImage], bool], what: str) -> MetadataImage:
    async def run() -> MetadataImage:
        loader = MetadataLoader(ControllerChannel("127.0.0.1", port, client_id="observer"), node_id=-1,
                                cluster_id=CLUSTER)
        deadline = time.monotonic() + TIMEOUT
        try:
            while not check(loader.image):
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {loader.image.brokers}"
                await loader.fetch_once(max_wait_ms=200)
            return loader.image
        finally:
            await loader.channel.close()
    return asyncio.run(run())


class RecordingProxy:
    """127.0.0.1:port -> target, keeping each request frame the client sends (without its size)."""

    def __init__(self, target: int):
        self.target = target
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            except OSError:
                break
            buf += data
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                size = struct.unpack(">i", buf[:4])[0]
                self.requests.append(buf[4:4 + size])
                buf = buf[4 + size:]
        for sock in (src, dst):
            sock.close()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            sock.close()

    def close(self) -> None:
        self.listener.close()


def reencoded(frame: bytes) -> tuple[str, int, bytes | None]:
    """(api, version, header + body encoded again by our codec) of one request frame; None for a
    version our schema does not have (the controller answered it UNSUPPORTED_VERSION)."""
    header, pos = decode_request_header(frame)
    api = apis.api(header.api_key)
    assert api is not None, f"api key {header.api_key}"
    if header.api_version not in api.request.valid:
        return api.name, header.api_version, None
    body = decode(api.request, header.api_version, frame, pos)
    out = bytearray()
    encode_request_header(out, header)
    encode(api.request, header.api_version, body, out)  # type: ignore[arg-type]
    return api.name, header.api_version, bytes(out)


def forwarded(frame: bytes) -> tuple[str, int, bytes | None, bytes]:
    """The request inside an Envelope frame: (api, version, re-encoded, as Kafka wrote it)."""
    header, pos = decode_request_header(frame)
    inner = bytes(decode(envelope.REQUEST, header.api_version, frame, pos).request_data)
    return (*reencoded(inner), inner)


def test_a_kafka_broker_runs_under_our_controller(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    cport, kport, sport = free_port(), free_port(), free_port()
    voters = f"3000@127.0.0.1:{cport}"
    (tmp_path / "controller").mkdir()
    controller = BrokerProcess(tmp_path / "controller" / "data", port=cport, overrides={
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": voters, "cluster.id": CLUSTER,
        "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER",
        "delegation.token.secret.key": TOKEN_SECRET})
    controller.start()
    proxy = RecordingProxy(cport)
    conf = tmp_path / "broker.properties"
    conf.write_text("\n".join([
        "process.roles=broker", "node.id=1", f"controller.quorum.voters=3000@127.0.0.1:{proxy.port}",
        "controller.listener.names=CONTROLLER",
        f"listeners=PLAINTEXT://127.0.0.1:{kport},SASL_PLAINTEXT://127.0.0.1:{sport}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}",
        f"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_JAAS}",
        f"delegation.token.secret.key={TOKEN_SECRET}",
        "inter.broker.listener.name=PLAINTEXT", f"log.dirs={tmp_path / 'kafka-data'}",
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "share.coordinator.state.topic.replication.factor=1", ""]))
    fmt = kr.run_tool("kafka-storage", ["format", "-t", CLUSTER, "-c", str(conf)], timeout=120)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    log = open(tmp_path / "kafka.log", "wb")
    kafka = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="512m", jit=False), stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        image = observe(cport, lambda im: 1 in im.brokers and not im.brokers[1].fenced, "Kafka's broker unfenced")
        assert image.brokers[1].endpoints[0].port == kport
        deadline = time.monotonic() + TIMEOUT
        while not kr.api_versions_answered("127.0.0.1", kport):
            assert time.monotonic() < deadline and kafka.poll() is None, (tmp_path / "kafka.log").read_text()
            time.sleep(0.5)
        bootstrap = f"127.0.0.1:{kport}"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        try:
            created = admin.create_topics([NewTopic("orders", 3, 1)])
            assert [t["error_code"] for t in created["topics"]] == [0]
            image = observe(cport, lambda im: im.topic("orders") is not None, "the topic in our metadata log")
            topic = image.topic("orders")
            assert topic is not None and all(p.leader == 1 for p in topic.partitions.values())
            deadline = time.monotonic() + TIMEOUT
            while True:  # Kafka's broker serves the topic once it has replayed our records
                (described,) = admin.describe_topics(["orders"])
                if described["error_code"] == 0 and len(described["partitions"]) == 3:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert {p["leader_id"] for p in described["partitions"]} == {1}
        finally:
            admin.close()
        # idempotent: Kafka's broker takes a producer id block from our controller (AllocateProducerIds)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        for i in range(6):
            producer.send("orders", b"v%d" % i, partition=i % 3).get(30)
        producer.close()
        consumer = KafkaConsumer("orders", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                 consumer_timeout_ms=10000)
        assert sorted(m.value for m in consumer) == [b"v%d" % i for i in range(6)]
        consumer.close()
        # a delegation token (KIP-48): Kafka's broker forwards CreateDelegationToken to us in an
        # Envelope with alice's principal; the DelegationTokenRecord we write is the one Kafka's
        # broker publishes to its token cache, so a SCRAM login with the token succeeds there
        sasl = f"127.0.0.1:{sport}"
        code, out = token_helpers.tokens_tool(sasl, token_helpers.plain_config(tmp_path / "alice.properties", "alice", "alice-pw"),
                                "--create", "--max-life-time-period", "-1")
        assert code == 0, out
        token_id, hmac_b64 = token_helpers.created(out)
        image = observe(cport, lambda im: token_id in im.delegation_tokens, "the token in our metadata log")
        assert (image.delegation_tokens[token_id].owner, image.delegation_tokens[token_id].requester) == (
            "User:alice", "User:alice")
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                token_helpers.token_login(sasl, token_id, base64.b64decode(hmac_b64)).close()
                break
            except AssertionError:  # Kafka's broker has not published the record yet
                assert time.monotonic() < deadline, "Kafka's broker never accepted the token"
                time.sleep(0.5)
        # Kafka's tools through Kafka's broker, which forwards to our controller (Envelope)
        server = ["--bootstrap-server", bootstrap]
        more = kr.run_tool("kafka-topics", [*server, "--alter", "--topic", "orders", "--partitions", "5"], timeout=120)
        assert more.returncode == 0, more.stdout + more.stderr
        observe(cport, lambda im: (t := im.topic("orders")) is not None and len(t.partitions) == 5, "5 partitions")
        configs = kr.run_tool("kafka-configs", [*server, "--entity-type", "topics", "--entity-name", "orders",
                                                "--alter", "--add-config", "retention.ms=12345"], timeout=120)
        assert configs.returncode == 0, configs.stdout + configs.stderr
        observe(cport, lambda im: im.configs.get((2, "orders"), {}).get("retention.ms") == "12345", "the config")
        election = kr.run_tool("kafka-leader-election", [*server, "--election-type", "preferred",
                                                         "--all-topic-partitions"], timeout=120)
        assert "Valid replica already elected for partitions" in election.stdout, election.stdout + election.stderr
        gone = kr.run_tool("kafka-topics", [*server, "--delete", "--topic", "orders"], timeout=120)
        assert gone.returncode == 0, gone.stdout + gone.stderr
        observe(cport, lambda im: im.topic("orders") is None and im.offset > 0, "the topic deleted")
        kafka.send_signal(signal.SIGTERM)  # Kafka's controlled shutdown, answered by our controller
        assert kafka.wait(TIMEOUT) in (0, 128 + signal.SIGTERM)  # the JVM exits 143 after its shutdown hooks
        image = observe(cport, lambda im: 1 in im.brokers and im.brokers[1].fenced,
                        "Kafka's broker fenced after its shutdown")
        assert image.brokers[1].in_controlled_shutdown
        seen, unsupported = set(), set()
        for frame in list(proxy.requests):
            name, version, again = reencoded(frame)
            if again is None:
                unsupported.add((name, version))
                continue
            assert again == frame, f"{name} v{version}: our codec does not give Kafka's bytes back"
            seen.add((name, version))
        # Kafka 4.4 opens with ApiVersions v5, our schema stops at v4: answered in v0 (KIP-511), it retries in v4
        assert unsupported <= {("ApiVersions", 5)}, unsupported
        assert {n for n, _ in seen} >= {"ApiVersions", "BrokerRegistration", "BrokerHeartbeat", "Fetch", "Envelope",
                                        "AllocateProducerIds"}, seen
        inner = [forwarded(f) for f in proxy.requests if decode_request_header(f)[0].api_key == envelope.API.key]
        for name, version, again, frame in inner:
            assert again == frame, f"{name} v{version} in an Envelope: not Kafka's bytes back"
        assert {n for n, *_ in inner} >= {"CreateTopics", "CreatePartitions", "ElectLeaders", "DeleteTopics",
                                          "IncrementalAlterConfigs", "CreateDelegationToken"}, inner
        # the Envelope's principal as Kafka's DefaultKafkaPrincipalBuilder serializes it (golden bytes)
        principals = {bytes(p) for f in proxy.requests if decode_request_header(f)[0].api_key == envelope.API.key
                      if (p := decode(envelope.REQUEST, 0, f, decode_request_header(f)[1]).request_principal)}
        assert principals and all(serialize(deserialize(p)) == p for p in principals), principals
        assert any(deserialize(p).principal == "User:alice" for p in principals), principals
    finally:
        if kafka.poll() is None:
            os.kill(kafka.pid, signal.SIGKILL)
            kafka.wait(20)
        log.close()
        proxy.close()
        controller.stop()


def test_a_kafka_broker_joining_late_loads_our_snapshot(tmp_path: Path) -> None:
    """The controller's log no longer starts at 0 (small segments, snapshots, retention): Kafka's broker is
    sent to the snapshot, reads it with FetchSnapshot, follows the log after it and is unfenced."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    cport, kport = free_port(), free_port()
    (tmp_path / "controller").mkdir()
    controller = BrokerProcess(tmp_path / "controller" / "data", port=cport, overrides={
        "process.roles": "controller", "node.id": 3000, "controller.quorum.voters": f"3000@127.0.0.1:{cport}",
        "cluster.id": CLUSTER, "listeners": f"CONTROLLER://127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER",
        "metadata.log.segment.bytes": 4096, "metadata.max.retention.bytes": 1,
        "metadata.log.max.record.bytes.between.snapshots": 500, "metadata.max.idle.interval.ms": 50})
    controller.start()
    proxy = RecordingProxy(cport)
    conf = tmp_path / "broker.properties"
    conf.write_text("\n".join([
        "process.roles=broker", "node.id=1", f"controller.quorum.voters=3000@127.0.0.1:{proxy.port}",
        "controller.listener.names=CONTROLLER", f"listeners=PLAINTEXT://127.0.0.1:{kport}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT", f"log.dirs={tmp_path / 'kafka-data'}", ""]))
    fmt = kr.run_tool("kafka-storage", ["format", "-t", CLUSTER, "-c", str(conf)], timeout=120)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    deadline = time.monotonic() + TIMEOUT
    while "the log starts at" not in controller.log_text():  # NoOpRecords fill segments; a snapshot drops them
        assert time.monotonic() < deadline, controller.log_text()
        time.sleep(0.2)
    log = open(tmp_path / "kafka.log", "wb")
    kafka = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="512m", jit=False), stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        observe(cport, lambda im: 1 in im.brokers and not im.brokers[1].fenced, "Kafka's broker unfenced")
        sent = [reencoded(f) for f in list(proxy.requests)]
        snapshots = [(n, v) for n, v, again in sent if n == "FetchSnapshot"]
        assert snapshots, {(n, v) for n, v, _ in sent}
        for (name, version, again), frame in zip(sent, list(proxy.requests), strict=False):
            assert again is None or again == frame, f"{name} v{version}"
    finally:
        if kafka.poll() is None:
            os.kill(kafka.pid, signal.SIGKILL)
            kafka.wait(20)
        log.close()
        proxy.close()
        controller.stop()
