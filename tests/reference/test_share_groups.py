"""Share groups (KIP-932) with the Java KafkaShareConsumer, on minibroker and on Apache Kafka.

tools/java/ShareCheck.java runs the scenarios against one broker and prints a RESULT line for
each: two and three consumers on a one-partition topic (every record received once, every
consumer gets some), a release redelivered to another member (delivery count 2), rejected records
never delivered again, a poison record archived at share.delivery.count.limit=2, and a consumer
killed with SIGKILL whose records come back to another member (delivery count 2) well before their
30 s acquisition lock expires: the broker releases them when the dead consumer's connection closes
(Kafka 4.4's ShareSessionCache disconnect listener). The same program runs
against both brokers at once and the RESULT lines must be equal. Both brokers allow a 1 s minimum
lock (group.share.min.record.lock.duration.ms), so the reference broker is a module-scoped one.

Kafka's kafka-share-groups tool then lists, describes and resets the groups on both. A kill -9 of
minibroker in the middle of a share group loses no acknowledgement and redelivers nothing accepted.

confluent-kafka's ShareConsumer (tests/reference/share_clients.py) then runs the same kinds of
scenario on the same two brokers — three consumers on one partition (and minibroker's --trace
read back: who acquired which offsets), a consumer SIGKILLed while it holds records, a poison
record — and last both brokers are restarted under a share group, once with SIGTERM and once
with SIGKILL (KafkaReference.halt/start, BrokerProcess.stop/kill/start on the same directories
and ports): a consumer has accepted, rejected and released records and holds others when its
broker goes; after the start a new consumer reads on. What comes back (offsets and delivery
counts) and DescribeShareGroupOffsets' start offset must be equal on both.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import selectors
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.helpers import ROOT, BrokerProcess, free_port
from tests.reference import share_clients as sc

OVERRIDES = {"group.share.min.record.lock.duration.ms": 1000,
             "share.coordinator.state.topic.num.partitions": 3,
             "group.initial.rebalance.delay.ms": 0}
# Kafka only: after a SIGKILL the restarted broker cannot register again until the controller has
# timed out the dead one's session (broker.session.timeout.ms, 9 s by default); 4 s saves ~5 s
KAFKA_OVERRIDES = {**OVERRIDES, "broker.session.timeout.ms": 4000, "broker.heartbeat.interval.ms": 1000}
EXPECTED = [
    "RESULT shared2 received=30 duplicates=0 every_consumer_got_records=true",
    "RESULT shared3 received=30 duplicates=0 every_consumer_got_records=true",
    "RESULT release released=5 redelivered_to_other_with_count_2=true other_received=30",
    "RESULT reject rejected=3 accepted=27 delivered_again=0",
    "RESULT poison deliveries=2 accepted=29",
    "RESULT kill held=5 returned_with_count_2=true received=30 before_lock=true",
]


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = kr.missing_prerequisites()
    if why is not None or shutil.which("javac") is None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why or 'javac is not installed'}")
    if not kr.jars_ready():
        kr.fetch()
    out = tmp_path_factory.mktemp("share-classes")
    subprocess.run(["javac", "-d", str(out), "-cp", str(kr.libs_dir() / "*"), str(ROOT / "tools/java/ShareCheck.java")],
                   check=True, capture_output=True, timeout=120)
    return out


def _java(classes: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    cmd = kr.java_command("ShareCheck", list(args), heap="256m")
    cp = cmd.index("-cp") + 1
    cmd[cp] = f"{classes}:{cmd[cp]}"
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def share_kafka(classes: Path) -> Iterator[kr.KafkaReference]:
    # C1 only: the restarts below start this JVM twice more, and start-up is mostly compiling
    with kr.KafkaReference(overrides=KAFKA_OVERRIDES, jit=False) as k:
        yield k


@pytest.fixture(scope="module")
def share_mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path_factory.mktemp("share-mini") / "data", overrides=OVERRIDES,
                      extra_args=["--trace"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def scenarios(classes: Path, share_kafka: kr.KafkaReference, share_mini: BrokerProcess) -> dict[str, list[str]]:
    """ShareCheck against both brokers at once: broker -> its output lines."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {name: pool.submit(_java, classes, boot, "all", "s-")
                for name, boot in (("kafka", share_kafka.bootstrap), ("minibroker", share_mini.bootstrap))}
        out = {name: f.result() for name, f in runs.items()}
    for name, r in out.items():
        print(f"--- {name}\n{r.stdout}")
        assert "DONE" in r.stdout, f"ShareCheck against {name} failed:\n{r.stdout}\n{r.stderr[-3000:]}"
    return {name: r.stdout.splitlines() for name, r in out.items()}


def _results(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("RESULT ")]


def test_share_consumers_same_outcomes_as_kafka(scenarios: dict[str, list[str]]) -> None:
    assert _results(scenarios["kafka"]) == EXPECTED
    assert _results(scenarios["minibroker"]) == EXPECTED


def test_three_consumers_in_the_broker_trace(scenarios: dict[str, list[str]], share_mini: BrokerProcess) -> None:
    """The trace shows who acquired which offsets of the one partition (ShareFetch answers)."""
    text = share_mini.log_text()
    acquired = re.findall(r"<- ShareFetch v\d .*?acquired_records: \[([^\]]+)\]", text)
    assert acquired, "no ShareFetch with acquired records in the trace"
    members = set(re.findall(r"-> ShareFetch v\d .*?member_id: '([^']+)'", text))
    assert len(members) >= 3


def _start_blanked(describe: str) -> str:
    """A share-group describe with the START-OFFSET column blanked."""
    return re.sub(r"^(\S+\s+\S+\s+\d+\s+)\d+", r"\1<start>", describe, flags=re.M)


def _tool(boot: str, *args: str) -> str:
    r = kr.run_tool("kafka-share-groups", ["--bootstrap-server", boot, *args], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_share_group_command_list_describe_reset(scenarios: dict[str, list[str]], share_kafka: kr.KafkaReference,
                                                 share_mini: BrokerProcess) -> None:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        def both(*args: str) -> tuple[str, str]:
            a, b = pool.submit(_tool, share_kafka.bootstrap, *args), pool.submit(_tool, share_mini.bootstrap, *args)
            return a.result(), b.result()

        k, m = both("--list")
        assert sorted(k.split()) == sorted(m.split())
        assert "s-g-three" in m.split()
        for group in ("s-g-reject", "s-g-three"):
            k, m = both("--describe", "--group", group)
            # Kafka moves the persisted start offset past a run of records done lazily: right after
            # the scenario it may still say 20 here (the last rejected offset) with lag 0; ours is 30.
            assert _start_blanked(k) == _start_blanked(m), f"kafka:\n{k}\nminibroker:\n{m}"
            assert re.search(rf"{group}\s+\S+\s+0\s+30\s+0", m), m
        k, m = both("--reset-offsets", "--group", "s-g-reject", "--topic", "s-reject", "--to-earliest", "--execute")
        assert k == m
        k, m = both("--describe", "--group", "s-g-reject")
        assert k == m
        assert re.search(r"s-g-reject\s+s-reject\s+0\s+0\s+30", m), m


def test_kill_9_loses_no_acknowledgement(classes: Path, tmp_path: Path) -> None:
    """Accept 10 records, kill -9 the broker, restart: the rest come once, the 10 never again."""
    b = BrokerProcess(tmp_path / "data", port=free_port(), overrides=OVERRIDES)
    b.start()
    try:
        r = kr.run_tool("kafka-configs", ["--bootstrap-server", b.bootstrap, "--alter", "--entity-type", "groups",
                                          "--entity-name", "g", "--add-config", "share.auto.offset.reset=earliest"])
        assert r.returncode == 0, r.stderr
        producer = kr.run_tool("kafka-console-producer", ["--bootstrap-server", b.bootstrap, "--topic", "t"],
                               input="".join(f"v{i}\n" for i in range(20)))
        assert producer.returncode == 0, producer.stderr
        first = _java(classes, b.bootstrap, "take", "t", "g", "10")
        took = [int(x.split(":")[0]) for x in re.search(r"TOOK (\S+)", first.stdout).group(1).split(",")]  # type: ignore[union-attr]
        assert took == list(range(10))
        b.kill()
        b.start()
        second = _java(classes, b.bootstrap, "take", "t", "g", "10")
        again = [int(x.split(":")[0]) for x in re.search(r"TOOK (\S+)", second.stdout).group(1).split(",")]  # type: ignore[union-attr]
        assert again == list(range(10, 20))
    finally:
        b.stop()


# -- confluent-kafka's ShareConsumer on the same two brokers (tests/reference/share_clients.py) ------
# The Java scenarios above have confluent twins here (three consumers, a killed consumer, a poison
# record), then the brokers themselves are restarted under a share group: SIGTERM, then SIGKILL.
CF = "cf-"
CF_N = 30
KILL_LOCK_MS = 30_000  # the default; the killed member's records must come back well before it
CF_EXPECTED = [
    f"RESULT three received={CF_N} duplicates=0 every_consumer_got_records=True",
    f"RESULT kill held=5 returned_with_count_2=True received={CF_N} before_lock=True",
    "RESULT poison deliveries=2 accepted=29 end_received=True",
]


def _hold_child(boot: str, topic: str, group: str, max_records: int, plan: str = "",
                timeout: float = 30.0) -> tuple[subprocess.Popen[bytes], str]:
    """A confluent ShareConsumer in a child process that acknowledges per `plan` and then holds
    what it got (share_clients.hold): (the child, its `offset:count,...`)."""
    child = subprocess.Popen([sys.executable, "-m", "tests.reference.share_clients", "hold", boot, topic, group,
                              str(max_records), plan], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert child.stdout is not None
    fd = child.stdout.fileno()
    out = b""
    deadline = time.monotonic() + timeout
    # raw reads on the pipe, not readline() after select(): a buffered reader may already hold the
    # HELD line when select() waits for more
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline and sel.select(deadline - time.monotonic()):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            out += chunk
            m = re.search(rb"^HELD (\S+)\n", out, re.M)
            if m:
                return child, m.group(1).decode()
    _end(child)
    raise AssertionError(f"the holding consumer held nothing on {boot}:\n{out.decode(errors='replace')}")


def _end(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL: the consumer gets no chance to close its share session or acknowledge anything."""
    child.kill()
    child.wait(10)
    if child.stdout is not None:
        child.stdout.close()


def cf_three(boot: str) -> str:
    """Three consumers of one group on a one-partition topic, polled in turn, each accepting."""
    topic, group = f"{CF}three", f"{CF}g-three"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest"}})
    sc.produce(boot, topic, [f"v{i}" for i in range(CF_N)])
    consumers = [sc.consumer(boot, group, topic, 2) for _ in range(3)]
    got: list[list[int]] = [[], [], []]
    try:
        for i, c in enumerate(consumers):  # each member joins and gets records before the next
            got[i] += [m.offset() for m in sc.poll_until(c, lambda g: len(g) > 0, sc.accept)]
        deadline = time.monotonic() + 30
        while sum(map(len, got)) < CF_N and time.monotonic() < deadline:
            for i, c in enumerate(consumers):
                got[i] += [m.offset() for m in sc.poll(c, sc.accept, 0.2)]
    finally:
        for c in consumers:
            c.close()
    print(f"TRACE {boot} {group} " + " ".join(f"consumer{i}={g}" for i, g in enumerate(got)))
    offsets = Counter(o for g in got for o in g)
    return (f"RESULT three received={len(offsets)} duplicates={sum(n - 1 for n in offsets.values())} "
            f"every_consumer_got_records={all(got)}")


def cf_kill(boot: str) -> str:
    """A consumer holding 5 records under a 30 s lock is killed (SIGKILL); another member gets
    them with delivery count 2 long before the lock expires: both brokers release a share
    session's records when the connection that opened it closes. (Kafka's next member fetches
    ~5 s after the kill, once it is assigned the partition: docs/differences.md#share-assignment-interval;
    minibroker's at once.)"""
    topic, group = f"{CF}kill", f"{CF}g-kill"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest",
                                          "share.record.lock.duration.ms": str(KILL_LOCK_MS)}})
    sc.produce(boot, topic, [f"v{i}" for i in range(CF_N)])
    child, held = _hold_child(boot, topic, group, 5)
    _end(child)
    killed = time.monotonic()
    held_offsets = {int(x.split(":")[0]) for x in held.split(",")}
    counts: dict[int, int] = {}
    back_after = -1.0
    c = sc.consumer(boot, group, topic, 10)
    try:
        deadline = time.monotonic() + 30
        while len(counts) < CF_N and time.monotonic() < deadline:
            for m in sc.poll(c, sc.accept, 0.2):
                counts[m.offset()] = m.delivery_count()
                if m.offset() in held_offsets and back_after < 0:
                    back_after = time.monotonic() - killed
    finally:
        c.close()
    print(f"TRACE {boot} {group} killed member held {held}; back after {back_after:.1f} s")
    return (f"RESULT kill held={len(held_offsets)} "
            f"returned_with_count_2={all(counts.get(o) == 2 for o in held_offsets)} received={len(counts)} "
            f"before_lock={0 <= back_after < KILL_LOCK_MS / 2000}")


def cf_poison(boot: str) -> str:
    """A record released on every delivery is archived at share.delivery.count.limit=2."""
    topic, group = f"{CF}poison", f"{CF}g-poison"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"}})
    sc.produce(boot, topic, ["poison" if i == 7 else f"v{i}" for i in range(CF_N)])
    deliveries = accepted = 0

    def ack(m: sc.Message) -> int:
        nonlocal deliveries, accepted
        if m.value() == b"poison":
            deliveries += 1
            return sc.ack_type("release")
        accepted += m.value() != b"end"
        return sc.accept(m)

    c = sc.consumer(boot, group, topic, 10)
    try:
        sc.poll_until(c, lambda _g: accepted == CF_N - 1, ack)
        # the next record past the end: a third delivery of the poison record would come first
        sc.produce(boot, topic, ["end"])
        got = sc.poll_until(c, lambda g: any(m.value() == b"end" for m in g), ack)
    finally:
        c.close()
    return f"RESULT poison deliveries={deliveries} accepted={accepted} end_received={bool(got)}"


def test_confluent_share_consumers_same_outcomes_as_kafka(share_kafka: kr.KafkaReference,
                                                         share_mini: BrokerProcess) -> None:
    """confluent-kafka's ShareConsumer in the runs the Java module covers above: three consumers
    on one partition, a consumer killed while it holds records (they return when its connection
    closes, before their 30 s lock), the delivery-count limit archiving a poison record; both
    brokers at once, equal RESULT lines."""
    # the three scenarios use groups and topics of their own: all six runs at once
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        runs = {boot: [pool.submit(f, boot) for f in (cf_three, cf_kill, cf_poison)]
                for boot in (share_kafka.bootstrap, share_mini.bootstrap)}
        kafka, mini = ([f.result(180) for f in runs[boot]] for boot in (share_kafka.bootstrap, share_mini.bootstrap))
    assert kafka == CF_EXPECTED
    assert mini == CF_EXPECTED
    # minibroker's --trace tells the same story: three members, each offset acquired once
    three = _acquisitions(share_mini.log_text(), f"{CF}g-three")
    for member, ranges in three.items():
        print(f"trace {CF}g-three {member}: {ranges}")
    assert len(three) == 3 and all(three.values()), three
    acquired = sorted(o for ranges in three.values() for first, last, _n in ranges for o in range(first, last + 1))
    assert acquired == list(range(CF_N)), acquired
    # ... and the killed member's five records going to the next member with delivery count 2
    kill = _acquisitions(share_mini.log_text(), f"{CF}g-kill")
    again = sorted(o for ranges in kill.values() for first, last, n in ranges if n == 2 for o in range(first, last + 1))
    assert again == [0, 1, 2, 3, 4], kill


def _acquisitions(trace: str, group: str) -> dict[str, list[tuple[int, int, int]]]:
    """From a `--trace` log: member id -> the (first, last, delivery count) ranges its ShareFetch
    answers acquired (a request line is followed by its response line)."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    member = None
    for line in trace.splitlines():
        if line.startswith("-> ShareFetch "):
            m = re.search(r"group_id: '([^']*)', member_id: '([^']*)'", line)
            member = m.group(2) if m and m.group(1) == group else None
        elif line.startswith("<- ShareFetch ") and member is not None:
            out.setdefault(member, []).extend(
                (int(a), int(b), int(n)) for a, b, n in
                re.findall(r"\{first_offset: (\d+), last_offset: (\d+), delivery_count: (\d+)\}", line))
            member = None
    return out


# -- a broker restart under a share group -------------------------------------------------------
RESTART_N = 20
# the first poll (8 records, offsets 0-7) is acknowledged so; the second poll is held
RESTART_PLAN = "0-3:accept,4:reject,5-7:release"


def _start_offset(boot: str, group: str, topic: str, timeout: float = 30.0) -> int:
    """DescribeShareGroupOffsets' start offset of partition 0 (retried while the broker loads)."""
    from minibroker_protocol.apis import describe_share_group_offsets as d
    from tests.integration.helpers import RawClient

    req = d.REQUEST(groups=[d.REQUEST.DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=[d.REQUEST.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])])
    deadline = time.monotonic() + timeout
    while True:
        with RawClient(boot) as c:
            g = c.call(d.API, 1, req).groups[0]
        p = g.topics[0].partitions[0] if g.topics else None
        if g.error_code == 0 and p is not None and p.error_code == 0:
            return int(p.start_offset)
        assert time.monotonic() < deadline, g
        time.sleep(0.2)


def _restart_scenario(boot: str, kind: str, halt: Callable[[], None],
                      start: Callable[[], None]) -> tuple[str, list[int]]:
    """A consumer accepts 0-3, rejects 4, releases 5-7, then holds what its next poll acquires
    (5-7 again, and 8-12); the broker stops (`halt`) while it holds them, the consumer dies with
    it, the broker starts again; a new consumer accepts what comes."""
    topic, group = f"{CF}restart-{kind}", f"{CF}g-restart-{kind}"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest"}})
    sc.produce(boot, topic, [f"v{i}" for i in range(RESTART_N)])
    child, held = _hold_child(boot, topic, group, 8, RESTART_PLAN)
    try:
        before = _start_offset(boot, group, topic)
        t0 = time.monotonic()
        halt()
    finally:
        _end(child)
    t1 = time.monotonic()
    start()
    after = _start_offset(boot, group, topic)
    print(f"TIMING {boot} {kind} halt {t1 - t0:.1f} s, start {time.monotonic() - t1:.1f} s")
    c = sc.consumer(boot, group, topic, RESTART_N)
    try:
        got = sc.poll_until(c, lambda g: {m.offset() for m in g} >= set(range(5, RESTART_N)), sc.accept)
    finally:
        c.close()
    received = Counter(m.offset() for m in got)
    counts = ",".join(f"{m.offset()}:{m.delivery_count()}" for m in sorted(got, key=lambda m: m.offset()))
    return (f"RESULT restart-{kind} held={held} accepted_again={[o for o in received if o < 4]} "
            f"rejected_again={received[4]} duplicates={sum(n - 1 for n in received.values())} received={counts}",
            [before, after, _start_offset(boot, group, topic)])


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_restart_under_a_share_group_as_kafka(kill: bool, share_kafka: kr.KafkaReference,
                                              share_mini: BrokerProcess) -> None:
    """Accepted records are not delivered again, the rejected one stays archived, acquired but
    unacknowledged ones come back: the same offsets with the same delivery counts on both.

    DescribeShareGroupOffsets' start offset (before the stop, after the start, at the end) is
    ours the first offset not yet done; Kafka's lags behind it (docs/differences.md#share-start-offset-eager)."""
    kind = "sigkill" if kill else "sigterm"

    def kafka() -> tuple[str, list[int]]:
        return _restart_scenario(share_kafka.bootstrap, kind, lambda: share_kafka.halt(kill), share_kafka.start)

    def mini() -> tuple[str, list[int]]:
        return _restart_scenario(share_mini.bootstrap, kind, share_mini.kill if kill else share_mini.stop,
                                 share_mini.start)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        k, m = pool.submit(kafka), pool.submit(mini)
        (kafka_result, kafka_start), (mini_result, mini_start) = k.result(180), m.result(180)
    print(f"kafka:      {kafka_result} start_offset={kafka_start}\n"
          f"minibroker: {mini_result} start_offset={mini_start}")
    assert mini_result == kafka_result
    assert "held=5:2,6:2,7:2,8:1,9:1,10:1,11:1,12:1 accepted_again=[] rejected_again=0 duplicates=0" in mini_result
    assert mini_start == [5, 5, RESTART_N]
    assert all(k <= m for k, m in zip(kafka_start, mini_start, strict=True)), (kafka_start, mini_start)
