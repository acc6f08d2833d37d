"""Many KIP-848 members joining one group over the wire (issue 30, finding 10): 1,200 members' first
ConsumerGroupHeartbeats, one after another, cost a pass over the members each (the assignor was
quadratic per join, so the whole took minutes), and a well-behaved client's Metadata is answered
meanwhile."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import consumer_group_heartbeat
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient, module_broker, unique
from tests.integration.probe_helpers import MetadataProbe

HB = consumer_group_heartbeat.REQUEST
MEMBERS = 1_200
RETRIABLE = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {"group.consumer.session.timeout.ms": 60_000}) as b:
        yield b


def test_hundreds_of_members_join_in_linear_time_per_join(broker: BrokerThread) -> None:
    topic, group = unique("scale"), unique("scale-g")
    broker.create_topic(topic, 12)
    with RawClient(broker.bootstrap, timeout=60) as c:

        def join(i: int) -> None:
            for _ in range(100):
                r = c.call(consumer_group_heartbeat.API, 0, HB(
                    group_id=group, member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=60_000,
                    subscribed_topic_names=[topic], topic_partitions=[]))
                if r.error_code not in RETRIABLE:
                    break
                time.sleep(0.1)  # __consumer_offsets is being created and loaded
            assert r.error_code == 0, (i, r.error_code, r.error_message)

        join(0)
        with MetadataProbe(broker.bootstrap) as probe:
            t0 = time.monotonic()
            for i in range(1, MEMBERS):
                join(i)
            took = time.monotonic() - t0
    print(f"{MEMBERS} joins in {took:.1f} s; Metadata answered {probe.answered} times, worst {probe.worst:.2f} s")
    assert probe.error is None
    assert broker._on_loop(lambda s: len(s.group_coordinator.consumer_groups.groups[group].members)) == MEMBERS
    assert took < 90, f"{MEMBERS} joins took {took:.0f} s"
    assert probe.worst < 1.0
