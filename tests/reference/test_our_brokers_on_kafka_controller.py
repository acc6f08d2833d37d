"""Two minibroker brokers (process.roles=broker) under Apache Kafka 4.4's own KRaft controller (issue 37's
first step): they register (with their data dir's directory id), follow Kafka's metadata log, forward a
client's CreateTopics to it, get producer id blocks from it (AllocateProducerIds), replicate a topic of
replication factor 2 the partitions Kafka's controller placed, and serve an idempotent producer and a
consumer. Kafka's controller is formatted with share.version, streams.version and
eligible.leader.replicas.version at 0: minibroker's brokers do not claim those features."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testing import SCRAM_JAAS
from minibroker_protocol.apis import create_delegation_token
from reference import kafka_reference as kr
from tests.cluster.cluster_helpers import wait_until
from tests.helpers import BrokerProcess, free_port
from tests.reference.helpers import sasl_plain_client
from tests.reference.token_helpers import token_login

TIMEOUT = 120.0
TOKEN_SECRET = "token-secret"  # delegation.token.secret.key, the same on Kafka's controller and our brokers
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-pw" user_alice="alice-pw";')


@pytest.fixture
def kafka_controller(tmp_path: Path):  # type: ignore[no-untyped-def]
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    if not kr.jars_ready():
        kr.fetch()
    port, cluster_id = free_port(), kr.random_cluster_id()
    props = {"process.roles": "controller", "node.id": 3000, "controller.quorum.voters": f"3000@127.0.0.1:{port}",
             "listeners": f"CONTROLLER://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
             "log.dirs": str(tmp_path / "kafka-controller"), "delegation.token.secret.key": TOKEN_SECRET}
    conf = tmp_path / "controller.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log4j = tmp_path / "log4j2.properties"
    log4j.write_text(kr._BROKER_LOG4J.format(log=tmp_path / "controller.log"))
    features = ["share.version=0", "streams.version=0", "eligible.leader.replicas.version=0"]
    fmt = subprocess.run(kr.java_command("kafka.tools.StorageTool", ["format", "-t", cluster_id, "-c", str(conf),
                                                                     *(a for f in features for a in ("--feature", f))]),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    with open(tmp_path / "controller.stdout", "ab") as out:
        proc = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="256m", log4j=log4j, jit=False),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is None and kr.api_versions_answered("127.0.0.1", port), "Kafka's controller",
                   TIMEOUT)
        yield port, cluster_id
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_minibroker_brokers_replicate_under_kafkas_controller(tmp_path: Path, kafka_controller: tuple[int, str]) -> None:
    port, cluster_id = kafka_controller
    brokers = {}
    ports = {n: (free_port(), free_port()) for n in (1, 2)}  # PLAINTEXT, SASL_PLAINTEXT
    for n, (plain, sasl) in ports.items():
        (tmp_path / f"b{n}").mkdir()
        brokers[n] = BrokerProcess(tmp_path / f"b{n}" / "data", port=plain, overrides={
            "process.roles": "broker", "node.id": n, "cluster.id": cluster_id,
            "controller.quorum.voters": f"3000@127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
            "broker.heartbeat.interval.ms": 500,
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
            "delegation.token.secret.key": TOKEN_SECRET})
        brokers[n].start()
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    try:
        admin = AdminClient({"bootstrap.servers": brokers[1].bootstrap})
        wait_until(lambda: set(admin.list_topics(timeout=10).brokers) == {1, 2}, "both brokers registered", TIMEOUT)
        admin.create_topics([NewTopic("under-kafka", 2, 2)])["under-kafka"].result(60)
        md = admin.list_topics("under-kafka", timeout=10).topics["under-kafka"]
        assert sorted(md.partitions) == [0, 1]
        assert all(sorted(p.replicas) == [1, 2] for p in md.partitions.values())
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(100):
            producer.produce("under-kafka", value=b"%03d" % i, partition=i % 2)
        assert producer.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "under-kafka", "enable.auto.commit": False})
        consumer.assign([TopicPartition("under-kafka", p, 0) for p in (0, 1)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 100 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        consumer.close()
        assert sorted(got) == [b"%03d" % i for i in range(100)]

        def logs(n: int, p: int) -> bytes:
            return b"".join(f.read_bytes() for f in sorted((brokers[n].data_dir / f"under-kafka-{p}").glob("*.log")))

        wait_until(lambda: all(logs(1, p) == logs(2, p) for p in (0, 1)), "the replicas' logs are identical")

        # a delegation token made through broker 1: our broker forwards CreateDelegationToken to
        # Kafka's controller in an Envelope with alice's principal (DefaultPrincipalData), Kafka's
        # controller writes the DelegationTokenRecord, and broker 2's cache (built from Kafka's
        # metadata log) accepts a SCRAM login with the token
        made = sasl_plain_client(f"127.0.0.1:{ports[1][1]}", "alice", "alice-pw", client_id="dt")
        R = create_delegation_token.REQUEST
        token = made.call(create_delegation_token.API, 3, R(owner_principal_type=None, owner_principal_name=None,
                                                             renewers=[], max_lifetime_ms=-1))
        made.close()
        assert token.error_code == 0 and token.principal_name == "alice", token

        def logs_in() -> bool:
            try:
                token_login(f"127.0.0.1:{ports[2][1]}", token.token_id, token.hmac).close()
            except AssertionError:
                return False
            return True
        wait_until(logs_in, "the token accepted by broker 2", TIMEOUT)
    finally:
        for b in brokers.values():
            b.stop(40)
