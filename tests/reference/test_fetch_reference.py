"""Fetch requests that ask for no partitions: answered at once by Kafka, and by minibroker.

The Java consumer's close() ends its fetch session with one (epoch -1, no topics); long-polling it
held every close() for fetch.max.wait.ms (bench/README.md, issue 22). An incremental fetch of a
session that still holds partitions does long-poll, on both."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, NewTopic

from minibroker_protocol.apis import fetch
from tests.integration.helpers import RawClient, unique, wait_until
from tests.reference.helpers import Pair

R = fetch.REQUEST


def session_fetch(sid: int, epoch: int, parts: list[tuple[str, int]], wait_ms: int) -> object:
    return R(max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=sid,
             session_epoch=epoch, forgotten_topics_data=[], rack_id="",
             topics=[R.FetchTopic(topic=t, partitions=[R.FetchPartition(partition=p, fetch_offset=0,
                                                                        partition_max_bytes=1 << 20)])
                     for t, p in parts])


def outcomes(bootstrap: str, topic: str) -> list[tuple[str, int, bool, int, bool]]:
    """(case, error, session id kept, topics answered, answered within 0.3 s) for each case."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    seen = []
    with RawClient(bootstrap) as raw:
        wait_until(lambda: not any(pd.error_code for t in raw.call(fetch.API, 12, session_fetch(
            0, -1, [(topic, 0)], 0)).responses for pd in t.partitions), timeout=10)
        full = raw.call(fetch.API, 12, session_fetch(0, 0, [(topic, 0)], 0))
        for case, req in (("incremental, nothing new", session_fetch(full.session_id, 1, [], 500)),
                          ("close the session, no topics", session_fetch(full.session_id, -1, [], 3_000)),
                          ("no session, no topics", session_fetch(0, -1, [], 3_000))):
            t0 = time.monotonic()
            r = raw.call(fetch.API, 12, req)
            seen.append((case, r.error_code, r.session_id == full.session_id, len(r.responses),
                         time.monotonic() - t0 < 0.3))
    return seen


def test_fetch_of_no_partitions_matches_kafka(pair: Pair) -> None:
    topic = unique("fetch-empty")
    kafka, ours = outcomes(pair.kafka.bootstrap, topic), outcomes(pair.mini.bootstrap, topic)
    assert ours == kafka
    assert [fast for *_, fast in kafka] == [False, True, True]
