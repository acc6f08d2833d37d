"""__consumer_offsets is created once, whole and with one topic id, however its creation is
interrupted by clients (found by the client suites, which close consumers early; fixed in
716b83f: the creation no longer belongs to the request that started it)."""

from __future__ import annotations

import time

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import find_coordinator
from minibroker_storage.checkpoint import PartitionMetadataFile
from tests.helpers import TEST_OVERRIDES
from tests.integration.helpers import RawClient, wait_until

TOPIC = "__consumer_offsets"


def find_coordinator_request(group: str) -> object:
    return find_coordinator.REQUEST(key=group, key_type=0)


def test_find_coordinator_after_an_abandoned_one(tmp_path):
    with BrokerThread(tmp_path / "data", overrides=dict(TEST_OVERRIDES)) as b:
        # A consumer that goes away while its FindCoordinator creates the topic.
        raw = RawClient(b.bootstrap)
        raw.send(find_coordinator.API, 2, find_coordinator_request("g1"))
        time.sleep(0.01)
        raw.close()
        time.sleep(0.01)
        with RawClient(b.bootstrap) as raw2:
            resp = raw2.call(find_coordinator.API, 2, find_coordinator_request("g2"))
        assert (resp.error_code, resp.node_id) == (0, 1), resp
        wait_until(lambda: b.call(lambda broker: TOPIC in broker.topics), what="the topic")
        topic_id, parts = b.call(lambda broker: (broker.topics[TOPIC].topic_id, len(broker.topics[TOPIC].partitions)))
        assert parts == 50
        time.sleep(1.0)  # let any orphaned creation finish writing
        ids = {PartitionMetadataFile(b.data_dir / f"{TOPIC}-{p}" / "partition.metadata").read() for p in range(50)}
        assert ids == {topic_id}
