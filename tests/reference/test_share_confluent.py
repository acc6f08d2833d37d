"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka), on minibroker and
Apache Kafka; then Kafka's kafka-dump-log and ours on both brokers' __share_group_state.

Each scenario runs against both brokers of the session pair at once (one thread each) and
prints a RESULT line; the lines must be equal. Every topic's records are produced one batch per
record, so `max.poll.records` bounds what one ShareFetch acquires on both brokers (Kafka
acquires whole log batches). No scenario waits for a lock to expire (the session brokers keep
the 30 s default): the redelivery seen is the one an explicit release causes.

- two: two consumers on one partition take turns; each record is received once, both get some.
- release: a consumer releases what it got and leaves; another member receives those offsets
  with delivery count 2, and every record once.
- reject: three records rejected, the rest accepted; a later consumer of the group receives only
  a record produced afterwards (nothing rejected comes back).

- read_committed: with the group's share.isolation.level=read_committed, an aborted transaction's
  records are never delivered, a committed one's are.

FindCoordinator key type 2 (share state, "group:topicId:partition") is answered alike at v3-6,
valid and malformed keys.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.reference import share_clients as sc
from tests.reference.helpers import POOL, Pair

pytest.importorskip("confluent_kafka", minversion="2.16")

N = 30
PREFIX = "scf"


def _setup(boot: str, topic: str, groups: list[str]) -> None:
    sc.create_topic(boot, topic, {g: {"share.auto.offset.reset": "earliest"} for g in groups})
    _produce(boot, topic, [f"v{i}" for i in range(N)])


_produce = sc.produce
_poll = sc.poll
_poll_until = sc.poll_until
_accept = sc.accept


def _consumer(boot: str, group: str, topic: str, max_records: int = 5) -> object:
    return sc.consumer(boot, group, topic, max_records)


def scenario_two(boot: str) -> str:
    topic, group = f"{PREFIX}-two", f"{PREFIX}-g-two"
    _setup(boot, topic, [group])
    c1, c2 = _consumer(boot, group, topic), _consumer(boot, group, topic)
    try:
        got1 = _poll_until(c1, lambda g: len(g) > 0, _accept)
        got2 = _poll_until(c2, lambda g: len(g) > 0, _accept)
        deadline = time.monotonic() + 30
        while len(got1) + len(got2) < N and time.monotonic() < deadline:
            got1 += _poll(c1, _accept)
            got2 += _poll(c2, _accept)
    finally:
        c1.close()  # type: ignore[attr-defined]
        c2.close()  # type: ignore[attr-defined]
    offsets = Counter(m.offset() for m in got1 + got2)  # type: ignore[attr-defined]
    return (f"RESULT two received={len(offsets)} duplicates={sum(n - 1 for n in offsets.values())} "
            f"both_got_records={bool(got1) and bool(got2)}")


def scenario_release(boot: str) -> str:
    from confluent_kafka import AcknowledgeType

    topic, group = f"{PREFIX}-release", f"{PREFIX}-g-release"
    _setup(boot, topic, [group])
    c1 = _consumer(boot, group, topic)
    try:
        released = [m.offset() for m in _poll_until(c1, lambda g: len(g) > 0,  # type: ignore[attr-defined]
                                                    lambda m: int(AcknowledgeType.RELEASE))]
    finally:
        c1.close()  # type: ignore[attr-defined]
    c2 = _consumer(boot, group, topic, max_records=10)
    try:
        got = _poll_until(c2, lambda g: len({m.offset() for m in g}) >= N, _accept)  # type: ignore[attr-defined]
    finally:
        c2.close()  # type: ignore[attr-defined]
    counts = {m.offset(): m.delivery_count() for m in got}  # type: ignore[attr-defined]
    return (f"RESULT release released={len(released)} received={len(counts)} "
            f"redelivered_with_count_2={all(counts[o] == 2 for o in released)} "
            f"first_delivery_elsewhere={sum(1 for o, n in counts.items() if o not in released and n == 1) > 0}")


def scenario_reject(boot: str) -> str:
    from confluent_kafka import AcknowledgeType

    topic, group = f"{PREFIX}-reject", f"{PREFIX}-g-reject"
    _setup(boot, topic, [group])
    rejected: list[int] = []

    def reject_three(m: object) -> int:
        if len(rejected) < 3:
            rejected.append(m.offset())  # type: ignore[attr-defined]
            return int(AcknowledgeType.REJECT)
        return int(AcknowledgeType.ACCEPT)

    c1 = _consumer(boot, group, topic, max_records=10)
    try:
        got = _poll_until(c1, lambda g: len(g) >= N, reject_three)
    finally:
        c1.close()  # type: ignore[attr-defined]
    _produce(boot, topic, ["after"])
    c2 = _consumer(boot, group, topic)
    try:
        later = _poll_until(c2, lambda g: any(m.value() == b"after" for m in g), _accept)  # type: ignore[attr-defined]
    finally:
        c2.close()  # type: ignore[attr-defined]
    return (f"RESULT reject rejected={len(rejected)} accepted={len(got) - len(rejected)} "
            f"later={[m.offset() for m in later]}")  # type: ignore[attr-defined]


def scenario_read_committed(boot: str) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    topic, group = f"{PREFIX}-rc", f"{PREFIX}-g-rc"
    _setup(boot, topic, [group])
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
            ConfigEntry("share.isolation.level", "read_committed",
                        incremental_operation=AlterConfigOpType.SET)])]).values():
        f.result(30)
    for tid, commit in ((f"{topic}-abort", False), (f"{topic}-commit", True)):
        t = Producer({"bootstrap.servers": boot, "transactional.id": tid})
        t.init_transactions(30)
        t.begin_transaction()
        for i in range(3):
            t.produce(topic, value=f"{tid}-{i}".encode())
        t.flush(30)
        (t.commit_transaction if commit else t.abort_transaction)(30)
    _produce(boot, topic, ["end"])
    c = _consumer(boot, group, topic, max_records=10)
    try:
        got = _poll_until(c, lambda g: any(m.value() == b"end" for m in g), _accept)  # type: ignore[attr-defined]
    finally:
        c.close()  # type: ignore[attr-defined]
    values = [m.value().decode() for m in got]  # type: ignore[attr-defined]
    aborted = sum(1 for v in values if "-abort-" in v)
    return f"RESULT read_committed received={len(values)} aborted={aborted} last={values[-1]}"


SCENARIOS = [scenario_two, scenario_release, scenario_reject, scenario_read_committed]
EXPECTED = [
    f"RESULT two received={N} duplicates=0 both_got_records=True",
    f"RESULT release released=5 received={N} redelivered_with_count_2=True first_delivery_elsewhere=True",
    f"RESULT reject rejected=3 accepted={N - 3} later=[{N}]",
    f"RESULT read_committed received={N + 3 + 1} aborted=0 last=end",
]


def _all(boot: str) -> list[str]:
    return [s(boot) for s in SCENARIOS]


@pytest.fixture(scope="module")
def results(pair: Pair) -> dict[str, list[str]]:
    futures = {side.name: POOL.submit(_all, side.bootstrap) for side in (pair.kafka, pair.mini)}
    return {name: f.result(timeout=240) for name, f in futures.items()}


def test_confluent_share_consumer_same_outcomes_as_kafka(results: dict[str, list[str]]) -> None:
    assert results["kafka"] == EXPECTED
    assert results["minibroker"] == EXPECTED


def test_dump_log_share_group_state_decoder(results: dict[str, list[str]], pair: Pair, tmp_path: Path) -> None:
    """kafka-dump-log --share-group-state-decoder and ours print the same on each broker's
    __share_group_state (copied first: the brokers keep writing)."""
    for side in (pair.kafka, pair.mini):
        copies = []
        for log in sorted(side.data_dir.glob("__share_group_state-*/*.log")):
            if log.stat().st_size:
                dest = tmp_path / side.name / log.parent.name / log.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log, dest)
                copies.append(dest)
        assert copies, side.name
        args = ["--files", ",".join(map(str, copies)), "--share-group-state-decoder"]
        k = kr.run_tool("kafka-dump-log", args, timeout=120)
        m = subprocess.run([sys.executable, "-m", "minibroker", "dump-log", *args], capture_output=True, text=True,
                           timeout=120)
        assert k.returncode == 0 and m.returncode == 0, k.stderr + m.stderr
        assert m.stdout.splitlines() == k.stdout.splitlines(), side.name
        out = k.stdout
        assert f'"groupId":"{PREFIX}-g-reject"' in out and '"type":"0"' in out and '"type":"1"' in out, out
        assert '"stateBatches":[{"firstOffset":' in out, out


SHARE_KEYS = ["g:AAAAAAAAAAAAAAAAAAAAAA:0", "g:lYF25TjwQzymoptcZPVDjQ:3", "a:b:lYF25TjwQzymoptcZPVDjQ:1",
              "g:lYF25TjwQzymoptcZPVDjQ:-1", "nokey", "g:notauuid:0", "g:lYF25TjwQzymoptcZPVDjQ:x",
              ":lYF25TjwQzymoptcZPVDjQ:0"]


def _find_share_coordinators(boot: str) -> list[object]:
    """- read_committed: with the group's share.isolation.level=read_committed, an aborted transaction's
  records are never delivered, a committed one's are.

FindCoordinator key type 2 (share state) at v3-6, after __share_group_state exists (Kafka
    answers COORDINATOR_NOT_AVAILABLE while it creates the topic; ours creates it at once)."""
    from minibroker_protocol.apis import find_coordinator as fc
    from tests.integration.helpers import RawClient

    out: list[object] = []
    with RawClient(boot) as c:
        deadline = time.monotonic() + 30
        while any(x.error_code == 15 for x in c.call(fc.API, 6, fc.REQUEST(key_type=2, coordinator_keys=SHARE_KEYS))
                  .coordinators):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for v in (4, 5, 6):
            r = c.call(fc.API, v, fc.REQUEST(key_type=2, coordinator_keys=SHARE_KEYS))
            out.append((v, [(x.key, x.node_id, x.error_code, x.error_message) for x in r.coordinators]))
        r = c.call(fc.API, 3, fc.REQUEST(key=SHARE_KEYS[1], key_type=2))
        out.append((3, r.node_id, r.error_code, r.error_message))
    return out


def test_find_coordinator_share_key_as_kafka(pair: Pair) -> None:
    k, m = (POOL.submit(_find_share_coordinators, side.bootstrap) for side in (pair.kafka, pair.mini))
    kafka, mini = k.result(60), m.result(60)
    assert mini == kafka
    v6 = {key: error for key, _node, error, _msg in kafka[2][1]}  # type: ignore[index]
    assert v6["a:b:lYF25TjwQzymoptcZPVDjQ:1"] == 0 and v6["nokey"] == 42, kafka
