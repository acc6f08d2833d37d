"""ACLs enforced alike for every client: Apache Kafka 4.4 and minibroker configured the same way
(tests/reference/acl_helpers.py: StandardAuthorizer, PLAIN users alice and bob over
SASL_PLAINTEXT), the same ACLs, and the same steps through kafka-python, aiokafka, kafkajs, kcat,
the Java client (tools/java/AclCheck.java) and Kafka's console producer and consumer: the outcomes
(allowed, or the client's authorization error) must be equal on both brokers, and equal to what
Kafka is known to answer.

KIP-430 with an authorizer: the operations confluent-kafka's AdminClient and the Java admin
client report (describe_topics, describe_cluster, describe_consumer_groups with
include_authorized_operations) are the sets computed from the ACLs, the same on both brokers.

The ACLs: alice may WRITE and READ cl-a, READ groups prefixed cl-g, DESCRIBE the cluster and
ALTER_CONFIGS cl-a; everyone may READ cl-b but alice is denied it. Bob may do nothing else.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from reference import kafka_reference as kr
from tests.helpers import ROOT
from tests.reference.acl_helpers import client_conf, password, raw_as
from tests.reference.helpers import java_available

JS = ROOT / "tests" / "js"
Brokers = dict[str, tuple[str, str]]
# the steps every client takes, as (user, action, topic, group suffix)
STEPS = [("alice", "produce", "cl-a"), ("bob", "produce", "cl-a"), ("alice", "consume", "cl-a"),
         ("bob", "consume", "cl-b"), ("alice", "consume", "cl-b")]
DESCRIBED_GROUP = "cl-g-described"
LOADING = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}


def _acls() -> list[AclBinding]:
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY

    def acl(rtype: ResourceType, name: str, principal: str, op: AclOperation, perm: AclPermissionType = allow,
            pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
        return AclBinding(rtype, name, pattern, principal, "*", op, perm)

    return [
        acl(ResourceType.TOPIC, "cl-a", "User:alice", AclOperation.WRITE),
        acl(ResourceType.TOPIC, "cl-a", "User:alice", AclOperation.READ),
        acl(ResourceType.TOPIC, "cl-a", "User:alice", AclOperation.ALTER_CONFIGS),
        acl(ResourceType.GROUP, "cl-g", "User:alice", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
        acl(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE),
        acl(ResourceType.TOPIC, "cl-b", "User:*", AclOperation.READ),
        acl(ResourceType.TOPIC, "cl-b", "User:alice", AclOperation.READ, deny),
    ]


def _key(a: AclBinding) -> tuple[object, ...]:
    return (a.restype, a.name, a.resource_pattern_type, a.principal, a.host, a.operation, a.permission_type)


def _wait_for_acls(admin: AdminClient, present: bool) -> None:
    """Until this module's ACLs are all there (or all gone): Kafka's brokers apply them from the
    metadata log a moment after CreateAcls/DeleteAcls answer."""
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    mine = {_key(a) for a in _acls()}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        have = {_key(a) for a in admin.describe_acls(every).result()} & mine
        if have == (mine if present else set()):
            return
        time.sleep(0.1)
    raise AssertionError(f"ACLs not {'applied' if present else 'removed'} in 10 s")


def _set_up(plain: str) -> None:
    """Topics, ACLs and one record in each topic, by the operator (a super user on PLAINTEXT)."""
    admin = AdminClient({"bootstrap.servers": plain})
    for f in admin.create_topics([NewTopic(t, 1) for t in ("cl-a", "cl-b")]).values():
        f.result()
    for f in admin.create_acls(_acls()).values():
        f.result()
    _wait_for_acls(admin, present=True)
    p = Producer({"bootstrap.servers": plain})
    for t in ("cl-a", "cl-b"):
        p.produce(t, b"seed")
    assert p.flush(10) == 0
    # a group for describe_consumer_groups: one committed offset (Empty, classic)
    c = Consumer({"bootstrap.servers": plain, "group.id": DESCRIBED_GROUP, "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c.commit(offsets=[TopicPartition("cl-a", 0, 1)], asynchronous=False)
                break
            except KafkaException as e:  # Kafka: while __consumer_offsets is made and loaded
                if e.args[0].code() not in LOADING or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


def _tear_down(plain: str) -> None:
    """This module's ACLs removed, so that the other ACL modules on the shared pair see theirs only."""
    admin = AdminClient({"bootstrap.servers": plain})
    filters = [AclBindingFilter(a.restype, a.name, a.resource_pattern_type, a.principal, a.host, a.operation,
                                a.permission_type) for a in _acls()]
    for f in admin.delete_acls(filters).values():
        f.result()
    _wait_for_acls(admin, present=False)


@pytest.fixture(scope="module")
def brokers(acl_pair: Brokers) -> Iterator[Brokers]:
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(_set_up, plain) for plain, _sasl in acl_pair.values()]:
            f.result()
    yield acl_pair
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(_tear_down, plain) for plain, _sasl in acl_pair.values()]:
            f.result()


def both(brokers: Brokers, run: Callable[[str], dict[str, str]]) -> dict[str, dict[str, str]]:
    """`run(sasl bootstrap)` on both brokers at once."""
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(run, sasl) for name, (_plain, sasl) in brokers.items()}
        return {name: f.result() for name, f in futures.items()}


def steps(client: str, run: Callable[[str, str, str, str, str], str]) -> Callable[[str], dict[str, str]]:
    """The STEPS through one client: `run(sasl, user, action, topic, group)` per step."""
    def all_steps(sasl: str) -> dict[str, str]:
        return {f"{user} {action} {topic}": run(sasl, user, action, topic, f"cl-g-{client}")
                for user, action, topic in STEPS}
    return all_steps


def check(out: dict[str, dict[str, str]], denied_produce: str, denied_group: str, denied_topic: str) -> None:
    assert out["minibroker"] == out["kafka"]
    assert out["kafka"] == {"alice produce cl-a": "OK", "bob produce cl-a": denied_produce,
                            "alice consume cl-a": "OK", "bob consume cl-b": denied_group,
                            "alice consume cl-b": denied_topic}


# ------------------------------------------------------------------------------- kafka-python
def _kafka_python(sasl: str, user: str, action: str, topic: str, group: str) -> str:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    auth: dict[str, Any] = {"bootstrap_servers": sasl, "security_protocol": "SASL_PLAINTEXT",
                            "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
                            "sasl_plain_password": password(user)}
    try:
        if action == "produce":
            p = KafkaProducer(**auth, max_block_ms=10000)
            try:
                p.send(topic, b"kafka-python").get(timeout=10)
            finally:
                p.close(timeout=2)
            return "OK"
        c = KafkaConsumer(topic, **auth, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                # a long poll: kafka-python 3.0 can lose a SyncGroup answer that lands as a short
                # poll times out, and then never takes up its assignment
                if c.poll(timeout_ms=3000):
                    return "OK"
            return "TIMEOUT"
        finally:
            c.close(autocommit=False)
    except KafkaError as e:
        return type(e).__name__


def test_kafka_python(brokers: Brokers) -> None:
    check(both(brokers, steps("kafka-python", _kafka_python)), "TopicAuthorizationFailedError",
          "GroupAuthorizationFailedError", "TopicAuthorizationFailedError")


# ------------------------------------------------------------------------------------ aiokafka
async def _aiokafka_async(sasl: str, user: str, action: str, topic: str, group: str) -> str:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError

    auth: dict[str, Any] = {"bootstrap_servers": sasl, "security_protocol": "SASL_PLAINTEXT",
                            "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
                            "sasl_plain_password": password(user)}
    try:
        if action == "produce":
            p = AIOKafkaProducer(**auth, request_timeout_ms=10000)
            await p.start()
            try:
                await p.send_and_wait(topic, b"aiokafka")
            finally:
                await p.stop()
            return "OK"
        c = AIOKafkaConsumer(topic, **auth, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if await c.getmany(timeout_ms=200):
                    return "OK"
            return "TIMEOUT"
        finally:
            await c.stop()
    except KafkaError as e:
        return type(e).__name__


def test_aiokafka(brokers: Brokers) -> None:
    def run(sasl: str, user: str, action: str, topic: str, group: str) -> str:
        return asyncio.run(_aiokafka_async(sasl, user, action, topic, group))

    check(both(brokers, steps("aiokafka", run)), "TopicAuthorizationFailedError",
          "GroupAuthorizationFailedError", "TopicAuthorizationFailedError")


# ------------------------------------------------------------------------------------- kafkajs
@pytest.mark.skipif(not os.environ.get("CI") and (shutil.which("node") is None
                                                  or not (JS / "node_modules" / "kafkajs").is_dir()),
                    reason="needs node and `npm ci` in tests/js (make test does it)")
def test_kafkajs(brokers: Brokers) -> None:
    def run(sasl: str) -> dict[str, str]:
        actions = [f"{u}:{a}:{t}" + (":cl-g-kafkajs" if a == "consume" else "") for u, a, t in STEPS]
        r = subprocess.run(["node", str(JS / "acl_client.js"), sasl, *actions], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return {" ".join(a.split(":")[:3]): o for a, o in (line.split(" ", 1) for line in r.stdout.splitlines())}

    # kafkajs drops a broker's FindCoordinator error (BrokerPool.withBroker swallows it) and
    # reports a group it may not use as a coordinator it could not find
    check(both(brokers, run), "TOPIC_AUTHORIZATION_FAILED", "KafkaJSGroupCoordinatorNotFound",
          "TOPIC_AUTHORIZATION_FAILED")


# ---------------------------------------------------------------------------------------- kcat
KCAT_ERRORS = {"Topic authorization failed": "TOPIC_AUTHORIZATION_FAILED",
               "Group authorization failed": "GROUP_AUTHORIZATION_FAILED"}


def _kcat(sasl: str, user: str, action: str, topic: str, group: str) -> str:
    auth = ["-b", sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
            "-X", f"sasl.username={user}", "-X", f"sasl.password={password(user)}"]
    if action == "produce":
        cmd, stdin = [*auth, "-P", "-t", topic], "kcat\n"
    else:
        cmd, stdin = [*auth, "-G", group, "-X", "auto.offset.reset=earliest", "-c", "1", topic], None
    try:
        r = subprocess.run(["kcat", *cmd], input=stdin, capture_output=True, text=True, timeout=15,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        found = [code for text, code in KCAT_ERRORS.items() if text in err]
        return found[0] if found else "TIMEOUT"
    found = [code for text, code in KCAT_ERRORS.items() if text in r.stderr]
    if found:
        return found[0]
    return "OK" if r.returncode == 0 else f"exit {r.returncode}: {r.stderr[-200:]}"


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat(brokers: Brokers) -> None:
    check(both(brokers, steps("kcat", _kcat)), "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
          "TOPIC_AUTHORIZATION_FAILED")


# ----------------------------------------------------------------------------------------- Java
@pytest.fixture(scope="module", autouse=True)
def _javac(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[str] | None]:
    """tools/java/AclCheck.java compiled against Kafka 4.4's client jars in the background, from the
    module's first test on (the JVM compile overlaps the brokers' start and the Python clients)."""
    if not java_available():
        yield None
        return
    out = tmp_path_factory.mktemp("acl-check")
    cp = f"{kr.libs_dir()}/*"
    javac = Path(kr.java_executable() or "java").with_name("javac")

    def compile_() -> str:
        subprocess.run([str(javac), "-d", str(out), "-cp", cp, str(ROOT / "tools/java/AclCheck.java")],
                       check=True, timeout=180, capture_output=True)
        return f"{out}:{cp}"

    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(compile_)


@pytest.fixture(scope="module")
def acl_check(_javac: Future[str] | None) -> str:
    """The class path with AclCheck compiled."""
    if _javac is None:
        pytest.skip("REFERENCE BROKER UNAVAILABLE: no Java")
    return _javac.result(timeout=240)


def _java(classpath: str, sasl: str, actions: list[str]) -> dict[str, str]:
    r = subprocess.run([kr.java_executable() or "java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", classpath, "AclCheck", sasl,
                        *actions], capture_output=True, text=True, timeout=180)
    # the client's own log lines share stdout: keep the actions' lines
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.split(" ", 1)[0] in actions)
    assert set(out) == set(actions), f"{r.stdout}\n{r.stderr[-3000:]}"
    return out


JAVA_KIP430 = ["alice:describe:cl-a", "bob:describe:cl-b", "bob:describe:cl-a", "alice:cluster", "bob:cluster"]


def test_java_client(brokers: Brokers, acl_check: str) -> None:
    """The Java client's produce and consume outcomes, and KIP-430 through its Admin client."""
    actions = [f"{u}:{a}:{t}" + (":cl-g-java" if a == "consume" else "") for u, a, t in STEPS]

    def run(sasl: str) -> dict[str, str]:
        out = _java(acl_check, sasl, actions + JAVA_KIP430)
        return {(" ".join(a.split(":")[:3]) if a in actions else a): o for a, o in out.items()}

    out = both(brokers, run)
    kip430 = {name: {a: out[name].pop(a) for a in JAVA_KIP430} for name in out}
    check(out, "TopicAuthorizationException", "GroupAuthorizationException", "TopicAuthorizationException")
    assert kip430["minibroker"] == kip430["kafka"]
    assert kip430["kafka"] == {
        "alice:describe:cl-a": "OK ALTER_CONFIGS,DESCRIBE,DESCRIBE_CONFIGS,READ,WRITE",
        "bob:describe:cl-b": "OK DESCRIBE,READ",
        "bob:describe:cl-a": "TopicAuthorizationException",
        "alice:cluster": "OK DESCRIBE",
        "bob:cluster": "OK ",
    }


# ------------------------------------------------------------------ Kafka's console producer/consumer
def _console(workdir: Path, sasl: str, user: str, action: str, topic: str, group: str) -> str:
    config = workdir / f"{user}-{sasl.rpartition(':')[2]}.properties"  # one per broker: both run at once
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                      f'username="{user}" password="{password(user)}";\n')
    if action == "produce":
        r = kr.run_tool("kafka-console-producer", ["--bootstrap-server", sasl, "--topic", topic,
                                                   "--command-config", str(config)], input="console\n", timeout=60)
    else:
        r = kr.run_tool("kafka-console-consumer", ["--bootstrap-server", sasl, "--topic", topic, "--group", group,
                                                   "--from-beginning", "--max-messages", "1", "--timeout-ms",
                                                   "15000", "--command-config", str(config)], timeout=60)
    for name in ("TopicAuthorizationException", "GroupAuthorizationException"):
        if name in r.stderr:
            return name
    done = action == "produce" or "Processed a total of 1 messages" in r.stderr
    return "OK" if r.returncode == 0 and done else f"exit {r.returncode}: {r.stderr[-300:]}"


def test_console_tools(brokers: Brokers, tmp_path: Path) -> None:
    """The producer denied, the consumer allowed and denied by its group. Each step here is a JVM
    start, so the allowed produce and the DENY-over-ALLOW consume are left to the other clients;
    the steps touch different users, topics or groups, so each broker's three run at once."""
    console_steps = STEPS[1:4]

    def run(sasl: str) -> dict[str, str]:
        with ThreadPoolExecutor(len(console_steps)) as pool:
            futures = {f"{user} {action} {topic}": pool.submit(_console, tmp_path, sasl, user, action, topic,
                                                              "cl-g-console")
                       for user, action, topic in console_steps}
            return {k: f.result() for k, f in futures.items()}

    out = both(brokers, run)
    assert out["minibroker"] == out["kafka"]
    assert out["kafka"] == {"bob produce cl-a": "TopicAuthorizationException", "alice consume cl-a": "OK",
                            "bob consume cl-b": "GroupAuthorizationException"}


# ------------------------------------------------------------------------ KIP-430, confluent-kafka
def _confluent_kip430(sasl: str) -> dict[str, str]:
    out: dict[str, str] = {}

    def ops(xs: list[AclOperation] | None) -> str:
        return ",".join(sorted(o.name for o in xs or []))

    for user in ("alice", "bob"):
        admin = AdminClient(client_conf(sasl, user))
        for topic in ("cl-a", "cl-b"):
            try:
                d = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic]
                out[f"{user} describe {topic}"] = ops(d.result(10).authorized_operations)
            except Exception as e:  # noqa: BLE001 -- the error's name is the outcome
                out[f"{user} describe {topic}"] = e.args[0].name() if e.args and hasattr(e.args[0], "name") \
                    else type(e).__name__
        c = admin.describe_cluster(include_authorized_operations=True).result(10)
        out[f"{user} cluster"] = ops(c.authorized_operations)
        g = admin.describe_consumer_groups([DESCRIBED_GROUP], include_authorized_operations=True)[DESCRIBED_GROUP]
        try:
            out[f"{user} group"] = ops(g.result(10).authorized_operations)
        except Exception as e:  # noqa: BLE001
            out[f"{user} group"] = e.args[0].name() if e.args and hasattr(e.args[0], "name") else type(e).__name__
    return out


def test_confluent_authorized_operations(brokers: Brokers) -> None:
    out = both(brokers, _confluent_kip430)
    assert out["minibroker"] == out["kafka"]
    assert out["kafka"]["alice describe cl-a"] == "ALTER_CONFIGS,DESCRIBE,DESCRIBE_CONFIGS,READ,WRITE"
    assert out["kafka"]["bob describe cl-b"] == "DESCRIBE,READ"
    assert out["kafka"]["alice cluster"] == "DESCRIBE"


# ---------------------------------------------------------------------- KIP-430, raw requests
def _raw_kip430(sasl: str) -> dict[str, Any]:
    """Metadata v10 (both flags), v12 (topics) and DescribeGroups v5 as alice and bob: each entry's
    error and operations bit field (none on a refused one), and the cluster's (0 for bob: no
    DESCRIBE on the cluster)."""
    from minibroker_protocol.apis import describe_groups, metadata

    M = metadata.API.request
    out: dict[str, Any] = {}
    for user in ("alice", "bob"):
        for version in (10, 12):
            r = raw_as(sasl, user, metadata.API, version, M(
                topics=[M.MetadataRequestTopic(name=n) for n in ("cl-a", "cl-b", "cl-missing")],
                allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                include_topic_authorized_operations=True))
            out[f"{user} metadata v{version}"] = sorted(
                (t["name"], t["error_code"], t["topic_authorized_operations"]) for t in r["topics"])
            out[f"{user} metadata v{version} cluster"] = r.get("cluster_authorized_operations")
        r = raw_as(sasl, user, describe_groups.API, 5, describe_groups.API.request(
            groups=[DESCRIBED_GROUP], include_authorized_operations=True))
        out[f"{user} describe group"] = [(g["error_code"], g["authorized_operations"]) for g in r["groups"]]
    return out


def test_raw_authorized_operations(brokers: Brokers) -> None:
    out = both(brokers, _raw_kip430)
    assert out["minibroker"] == out["kafka"]
    read, describe, alter_configs, describe_configs = 1 << 3, 1 << 8, 1 << 11, 1 << 10
    assert ("cl-b", 0, read | describe) in out["kafka"]["bob metadata v10"]
    assert out["kafka"]["bob metadata v10 cluster"] == 0
    assert out["kafka"]["alice metadata v10 cluster"] == describe
    assert ("cl-a", 0, (1 << 4) | read | describe | alter_configs | describe_configs) \
        in out["kafka"]["alice metadata v12"]
    assert out["kafka"]["alice describe group"] == [(0, read | describe)]
    assert out["kafka"]["bob describe group"] == [(30, -(1 << 31))]  # GROUP_AUTHORIZATION_FAILED
