"""What the idempotent-producer tests share: a broker behind a dropping proxy that cuts every third
Produce response (up to MAX_DROPS), the records to send, and the check of what was stored."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from minibroker.testing import BrokerThread
from tests.helpers import TEST_OVERRIDES
from tests.integration.dropping_proxy import DroppingProxy
from tests.integration.helpers import create_topic, stored_records

TOPIC = "idem"
PARTITIONS = 4
RECORDS = 10_000
MAX_DROPS = 6


def every_third(n: int) -> bool:
    return n % 3 == 2 and n // 3 < MAX_DROPS


@contextlib.contextmanager
def proxied_broker(data_dir: Path) -> Iterator[tuple[BrokerThread, DroppingProxy]]:
    """A broker advertising a dropping proxy in front of it, with the test topic."""
    proxy = DroppingProxy(every_third)
    with proxy, BrokerThread(data_dir, overrides={**TEST_OVERRIDES, **proxy.advertised_listener}) as b:
        proxy.start(b.bootstrap)
        create_topic(b, TOPIC, PARTITIONS)
        yield b, proxy


def plan() -> list[tuple[int, bytes, bytes]]:
    """(partition, key, value) in send order; values number the records of each partition."""
    counts = [0] * PARTITIONS
    out = []
    for i in range(RECORDS):
        p = i % PARTITIONS
        out.append((p, f"k{i}".encode(), f"{p}:{counts[p]:05d}".encode()))
        counts[p] += 1
    return out


def check_stored(b: BrokerThread, proxy: DroppingProxy, sent: list[tuple[int, bytes, bytes]]) -> None:
    assert proxy.dropped >= 2, f"the proxy cut only {proxy.dropped} connection(s): no retries were forced"
    for p in range(PARTITIONS):
        expected = [v for q, _, v in sent if q == p]
        got = [bytes(r.value) for r in stored_records(b, TOPIC, p)]
        assert len(got) == len(expected), f"partition {p}: {len(got)} records stored, {len(expected)} sent"
        assert got == expected, f"partition {p}: duplicates or reordering"
    producers = b.call(lambda broker: [set(broker.get_log(TOPIC, p).producer_state.producers)
                                       for p in range(PARTITIONS)])
    assert all(len(pids) == 1 for pids in producers) and len(set.union(*producers)) == 1
