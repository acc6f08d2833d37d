"""Online migration between classic and consumer groups (KIP-848, `group.consumer.migration.policy`),
against Apache Kafka 4.4 and minibroker.

- Real clients: two confluent-kafka classic consumers share a 6-partition topic; a confluent-kafka
  `group.protocol=consumer` member joins (the group becomes a consumer group whose classic members
  keep consuming, 2/2/2), then leaves (the group is classic again, 3/3); every record once.
- The policy on the wire: with `disabled` (a module-scoped Kafka of its own and a minibroker) a
  ConsumerGroupHeartbeat on a classic group with members and a classic JoinGroup on a consumer group
  with members are refused as Kafka refuses them; with the default (`bidirectional`, the session
  brokers) both are served and the group goes back to classic when its consumer member leaves, or
  when a classic JoinGroup takes the place of its only (static) member. Group states are compared
  only where the group is settled (docs/differences.md#kip848-migration-assigning).
  `upgrade` and `downgrade` run on minibroker only (one specially configured Kafka per module):
  each is `disabled` on one side and `bidirectional` on the other, as Kafka's
  ConsumerGroupMigrationPolicy defines them, which the two compared policies pin down.
- Restart: a migrated group's records replay (minibroker), and Kafka's `kafka-dump-log
  --offsets-decoder` reads the files with ClassicMemberMetadata in them, printing what ours prints.
"""

from __future__ import annotations

import concurrent.futures
import json
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference import kafka_reference as kr
from tests.integration import migration_helpers as mh
from tests.integration.helpers import RawClient


def both(fn: Any, a: str, b: str, *args: Any) -> tuple[Any, Any]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        fa, fb = pool.submit(fn, a, *args), pool.submit(fn, b, *args)
        return fa.result(), fb.result()


def test_classic_group_upgrades_and_downgrades_as_kafka(kafka_reference, minibroker_ref,
                                                        _kafka_disabled_starting) -> None:
    kafka, mini = both(mh.upgrade_then_downgrade, kafka_reference.bootstrap, minibroker_ref.bootstrap)
    assert kafka == mini == {
        "classic": ([("classic", "consumer", "Stable")], [3, 3]),
        # ConsumerGroupDescribe: member type 0 = classic, 1 = consumer; two partitions each
        "mixed": ([("consumer", "consumer", "Stable")],
                  {"error": 0, "state": "Stable",
                   "members": [("classic-1", 0, 2), ("classic-2", 0, 2), ("consumer-1", 1, 2)]},
                  [2, 2, 2]),
        "downgraded": ([("classic", "consumer", "Stable")], 69, [3, 3]),  # 69: no consumer group any more
        "read": (90, 90),
    }


UPGRADE_REFUSED = (69, "Cannot upgrade classic group G to consumer group because online upgrade is disabled.")
SERVED = {
    "classic_group": (0, 0, [("classic", "consumer", "Stable")]),
    "upgrade": (0, None, [("consumer", "consumer")]),
    "classic_join": (0, "range", "", 0, [("consumer", "consumer")]),
    "leave": (0, -1, True),
    "downgrade": [("classic", "consumer", "PreparingRebalance")],
    # the classic member took the static member's place and the group is classic again, without a rebalance
    "static_replace": (0, 0, "range", [("classic", "consumer", "Stable")]),
}
REFUSED = {
    "classic_group": (0, 0, [("classic", "consumer", "Stable")]),
    "upgrade": (*UPGRADE_REFUSED, [("classic", "consumer")]),
    "classic_join": (23, None, None, None, [("consumer", "consumer")]),  # INCONSISTENT_GROUP_PROTOCOL
    "leave": (0, -1, True),
    "downgrade": [("consumer", "consumer", "Empty")],
    "static_replace": (0, 23, None, [("consumer", "consumer", "Stable")]),
}


@pytest.fixture(scope="module")
def _kafka_disabled_starting() -> Iterator[tuple[kr.KafkaReference, concurrent.futures.Future[Any]] | None]:
    """The Kafka with migration disabled, started in the background by the first test that asks
    (the real-client scenario, which mostly waits), so that its JVM start overlaps that test."""
    if kr.missing_prerequisites() is not None:
        yield None
        return
    k = kr.KafkaReference(overrides={"group.consumer.migration.policy": "disabled"}, heap="384m")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        started = pool.submit(k.start)
        try:
            yield k, started
        finally:
            try:
                started.result()
            finally:
                k.stop()


@pytest.fixture(scope="module")
def kafka_migration_disabled(_kafka_disabled_starting: Any) -> kr.KafkaReference:
    why = kr.missing_prerequisites()
    if why is not None or _kafka_disabled_starting is None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    k, started = _kafka_disabled_starting
    started.result()
    return k


def _minibroker_probe(policy: str, tmp_path: Path) -> dict[str, Any]:
    from minibroker.testing import BrokerThread

    with BrokerThread(tmp_path / policy, overrides={"group.initial.rebalance.delay.ms": 0,
                                                     "group.consumer.migration.policy": policy}) as b:
        return mh.policy_probe(b.bootstrap, policy)


def test_migration_policy_as_kafka(kafka_reference, kafka_migration_disabled, minibroker_ref,
                                   tmp_path: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        kafka_default = pool.submit(mh.policy_probe, kafka_reference.bootstrap, "default")
        kafka_disabled = pool.submit(mh.policy_probe, kafka_migration_disabled.bootstrap, "disabled")
        mini_default = pool.submit(mh.policy_probe, minibroker_ref.bootstrap, "default")
        mini = {p: pool.submit(_minibroker_probe, p, tmp_path) for p in ("disabled", "upgrade", "downgrade")}
        assert kafka_default.result() == mini_default.result() == SERVED
        assert kafka_disabled.result() == mini["disabled"].result() == REFUSED
        # upgrade: served like bidirectional, but the group stays a consumer group when only classic
        # members remain; downgrade: the upgrade refused as with disabled, the rest served
        assert mini["upgrade"].result() == {**SERVED, "downgrade": [("consumer", "consumer", "Assigning")],
                                            "static_replace": (0, 0, "range", [("consumer", "consumer", "Stable")])}
        assert mini["downgrade"].result() == {**SERVED, "upgrade": REFUSED["upgrade"]}


# -- restart and Kafka's dump-log -----------------------------------------------------------------

def _describe(bootstrap: str, group: str) -> list[tuple[int, int, int]]:
    """(member type, member epoch, partitions) of each member, by ConsumerGroupDescribe v1."""
    from minibroker_protocol.apis import consumer_group_describe as cgd

    with RawClient(bootstrap) as c:
        r = c.call(cgd.API, 1, cgd.REQUEST(group_ids=[group], include_authorized_operations=False))
    return sorted((m.member_type, m.member_epoch, sum(len(t.partitions) for t in m.assignment.topic_partitions))
                  for m in r.groups[0].members)


def test_migrated_group_replays_and_kafka_dump_log_reads_it(tmp_path: Path,
                                                            kafka_reference: kr.KafkaReference) -> None:
    from minibroker.testing import BrokerThread
    from minibroker_protocol.apis import heartbeat

    data = tmp_path / "data"
    overrides = {"group.initial.rebalance.delay.ms": 0}
    topic, group = "migr", "migr-g"
    consumer_member = str(uuid.uuid4())
    with BrokerThread(data, overrides=overrides) as b:
        mh.k848.make_topic(b.bootstrap, topic, 2)
        with RawClient(b.bootstrap) as c:
            join = mh._classic_join(c, group, topic)
            assert mh._sync(c, group, join, topic, [0, 1]).error_code == 0
            assert mh._cghb(c, group, consumer_member, 0, topic).error_code == 0  # the upgrade
        before = _describe(b.bootstrap, group)
        assert before == [(0, 1, 2), (1, 2, 0)]  # the classic member still owns both: it must rejoin
    with BrokerThread(data, overrides=overrides) as b:
        assert _describe(b.bootstrap, group) == before
        with RawClient(b.bootstrap) as c:
            hb = c.call(heartbeat.API, 3, heartbeat.REQUEST(group_id=group, generation_id=join.generation_id,
                                                             member_id=join.member_id, group_instance_id=None))
            assert hb.error_code == 27  # REBALANCE_IN_PROGRESS: a member of the replayed consumer group
            rejoin = mh._classic_join(c, group, topic, join.member_id)  # rejoins as a classic member, kept its protocols
            # it had to revoke one partition: same epoch, then the next join moves it on
            assert (rejoin.error_code, rejoin.protocol_name) == (0, "range")
            rejoin = mh._classic_join(c, group, topic, join.member_id)
            sync = mh._sync(c, group, rejoin, topic, [])
            assert (rejoin.generation_id, sync.error_code) == (2, 0)
            # its assignment as a ConsumerProtocolAssignment v0: one topic, one partition
            assert struct.unpack_from(">hi", sync.assignment, 0) == (0, 1)
            assert mh._cghb(c, group, consumer_member, -1, topic).error_code == 0  # the downgrade
        assert mh.group_listing(b.bootstrap, group) == [("classic", "consumer", "PreparingRebalance")]
    with BrokerThread(data, overrides=overrides) as b:
        assert [t for t, _, _ in mh.group_listing(b.bootstrap, group)] == ["classic"]
    files = sorted(p for p in data.glob("__consumer_offsets-*/*.log") if p.stat().st_size > 0)
    args = ["--files", ",".join(map(str, files)), "--offsets-decoder"]
    kafka = kr.run_tool("kafka-dump-log", args, timeout=120)
    ours = subprocess.run([sys.executable, "-m", "minibroker", "dump-log", *args], capture_output=True, text=True,
                          timeout=120)
    assert kafka.returncode == 0 and "Error" not in kafka.stdout and "Unknown record type" not in kafka.stdout, \
        kafka.stdout[-3000:] + kafka.stderr
    assert ours.stdout == kafka.stdout
    members = [json.loads(line.split(" payload: ", 1)[1])["data"] for line in kafka.stdout.splitlines()
               if '"type":"5"' in line and " payload: {" in line]
    classic = [m["classicMemberMetadata"] for m in members if m.get("classicMemberMetadata")]
    assert classic and classic[0]["sessionTimeoutMs"] == 10000 and \
        [p["name"] for p in classic[0]["supportedProtocols"]] == ["range"]
