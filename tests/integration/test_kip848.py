"""KIP-848 consumer groups on minibroker: what the reference comparison cannot cover cheaply.

- ApiVersions advertises ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) at v0-1;
- a kill -9 of the broker: the group is replayed from __consumer_offsets (epochs, target and
  current assignments) and a member that stayed up keeps heartbeating with its epoch, keeps its
  partitions and reads what is produced after the restart, from its committed offsets;
- a member killed with SIGKILL is fenced after the session timeout and its partitions move;
- ListGroups / ConsumerGroupDescribe report the group's type, epochs and members; a classic
  JoinGroup on a consumer group with members is served by it (group.consumer.migration.policy
  bidirectional: MEMBER_ID_REQUIRED first, as Kafka 4 answers; tests/reference/
  test_kip848_migration_reference.py covers the rest).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid

from minibroker_protocol.apis import api_versions, join_group
from tests.integration import kip848_helpers as k848
from tests.integration.helpers import RawClient


def test_api_versions_advertise_consumer_group_apis(kafka_broker):
    with RawClient(kafka_broker.bootstrap) as c:
        resp = c.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="t", client_software_version="1"))
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[68] == (0, 1) and keys[69] == (0, 1)


def _group_state(bp_bootstrap: str, group: str) -> dict:
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": bp_bootstrap})
    d = a.describe_consumer_groups([group])[group].result(20)
    return {"type": d.type.name, "state": d.state.name,
            "members": sorted((m.client_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
                              for m in d.members)}


_VICTIM = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "client.id": "victim", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([sys.argv[3]])
    while True:
        c.poll(0.2)
""")


def test_restart_resumes_and_a_killed_member_is_fenced(kafka_broker_process):
    bp = kafka_broker_process(overrides={"group.consumer.session.timeout.ms": 3000,
                                         "group.consumer.heartbeat.interval.ms": 500})
    bs = bp.start()
    topic, group = f"k848r-{uuid.uuid4().hex[:6]}", f"k848r-g-{uuid.uuid4().hex[:6]}"
    k848.make_topic(bs, topic, 4, 8)
    ms = k848.Members([k848.consumer(bs, group, "stay")])
    ms.members[0].subscribe([topic])
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM, bs, group, topic], stdout=subprocess.DEVNULL)
    try:
        ms.spin_until(lambda: len(k848.assignment(ms.members[0])) == 2, "two members sharing four partitions",
                      60)
        ms.spin_until(lambda: len(ms.seen) >= 4, "the stayer's records")
        with RawClient(bs) as c:  # a classic member may join a consumer group with members (KIP-848 migration)
            r = c.call(join_group.API, 5, join_group.REQUEST(
                group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                protocol_type="consumer", protocols=[join_group.REQUEST.JoinGroupRequestProtocol(name="range",
                                                                                                 metadata=b"")]))
        assert r.error_code == 79 and r.member_id  # MEMBER_ID_REQUIRED: it is handed a member id
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        ms.spin_until(lambda: len(k848.assignment(ms.members[0])) == 4, "the killed member's partitions", 20)
        before = _group_state(bs, group)
        assert before == {"type": "CONSUMER", "state": "STABLE", "members": [("stay", [0, 1, 2, 3])]}
        bp.kill()  # kill -9 of the broker; the member stays up and retries
        bp.start()
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bs})
        for i in range(8):
            p.produce(topic, value=f"after-{i}".encode(), partition=i % 4)
        assert p.flush(15) == 0
        ms.spin_until(lambda: sum(1 for v in ms.seen if v.startswith(b"after-")) == 8, "records after the restart")
        assert _group_state(bs, group) == before
        # the victim never committed: the stayer read its partitions from the start, every record
        # once, and nothing it committed before the restart was read again after it
        ms.spin_until(lambda: len(ms.seen) >= 16, "every record")
        assert len(ms.seen) == len(set(ms.seen)) == 16
    except Exception:
        print(bp.log_text()[-5000:])
        raise
    finally:
        victim.kill()
        ms.close()
