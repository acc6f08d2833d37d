"""A partition moved by reassignment from minibroker brokers to an Apache Kafka 4.4 broker running
under minibroker's controller (issues 29 and 37): `kafka-reassign-partitions --execute` moves a
replicated partition from [1, 2] (minibroker) to [1, 3] (3: Kafka's broker); Kafka's broker
creates the replica, fetches it from minibroker's leader, joins the ISR, our controller completes
the move; broker 2 deletes its replica; the `.log` segment Kafka's broker wrote is byte for byte
the leader's, and every record is read back by a client bootstrapped at Kafka's broker."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.cluster_testing import poll
from minibroker.testing import Cluster
from reference import kafka_reference as kr
from tests.helpers import free_port

TIMEOUT = 120.0


def segments(d: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.glob("*.log"))}


def test_a_partition_moves_from_minibroker_brokers_to_a_kafka_broker(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    with Cluster(2, overrides={"log.segment.delete.delay.ms": 500, "log.retention.check.interval.ms": 500}) as c:
        assert c.controller is not None
        kport = free_port()
        conf = tmp_path / "broker.properties"
        kafka_data = tmp_path / "kafka-data"
        conf.write_text("\n".join([
            "process.roles=broker", "node.id=3", f"controller.quorum.voters={c.controller.node_id}@127.0.0.1:"
            f"{c.controller.port}", "controller.listener.names=CONTROLLER", f"listeners=PLAINTEXT://127.0.0.1:{kport}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT", f"log.dirs={kafka_data}", "offsets.topic.replication.factor=2",
            "transaction.state.log.replication.factor=2", "share.coordinator.state.topic.replication.factor=2",
            "broker.heartbeat.interval.ms=500", ""]))
        fmt = kr.run_tool("kafka-storage", ["format", "-t", c.cluster_id, "-c", str(conf)], timeout=120)
        assert fmt.returncode == 0, fmt.stdout + fmt.stderr
        log = open(tmp_path / "kafka.log", "wb")
        kafka = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="512m", jit=False), stdout=log,
                                 stderr=subprocess.STDOUT)
        try:
            poll(lambda: kr.api_versions_answered("127.0.0.1", kport) or None, "Kafka's broker serving", TIMEOUT)
            admin = AdminClient({"bootstrap.servers": c.bootstrap})
            poll(lambda: 3 in {b.id for b in admin.list_topics(timeout=10).brokers.values()} or None,
                 "Kafka's broker 3 in the metadata", TIMEOUT)
            topic = f"mixed-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])])[topic].result(30)
            c.wait_for_isr(topic, 0, [1, 2])
            values = [b"v%d" % i for i in range(500)]
            p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True})
            for v in values[:300]:
                p.produce(topic, value=v, partition=0)
            assert p.flush(60) == 0
            plan = tmp_path / "plan.json"
            plan.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": topic, "partition": 0, "replicas": [1, 3]}]}))
            out = kr.run_tool("kafka-reassign-partitions", ["--bootstrap-server", c.bootstrap, "--reassignment-json-file",
                                                            str(plan), "--execute"], timeout=120)
            assert out.returncode == 0, out.stdout + out.stderr
            for v in values[300:]:
                p.produce(topic, value=v, partition=0)
            assert p.flush(60) == 0
            poll(lambda: c.partition(topic).replicas == (1, 3) and c.isr(topic, 0) == [1, 3] or None,
                 f"{topic}-0 on [1, 3]", TIMEOUT)
            # broker 2 no longer holds it; Kafka's broker 3 holds the leader's bytes
            poll(lambda: not any(d.name.startswith(f"{topic}-0") for d in c.brokers[2].data_dir.iterdir()) or None,
                 "broker 2's replica deleted", 60)
            leader = c.brokers[1].data_dir / f"{topic}-0"
            ours = poll(lambda: (s := segments(leader)) and s == segments(kafka_data / f"{topic}-0") and s or None,
                        "the segments byte for byte", 60)
            assert ours
            print("segments of", topic, "on minibroker's leader and Kafka's broker:",
                  {n: (f"{(leader / n).stat().st_size} bytes", digest) for n, digest in ours.items()})
            consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{kport}", "group.id": f"g-{uuid.uuid4()}",
                                 "enable.auto.commit": False})
            consumer.assign([TopicPartition(topic, 0, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(got) < len(values) and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
            consumer.close()
            assert got == values
        finally:
            if kafka.poll() is None:
                os.kill(kafka.pid, signal.SIGKILL)
                kafka.wait(20)
            log.close()
