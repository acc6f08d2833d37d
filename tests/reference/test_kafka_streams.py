"""Kafka Streams 4.4's word count against minibroker and Apache Kafka 4.4 (issue 35).

tests/reference/streams/WordCount.java, built by Maven from the repo's pom (jars cached outside the
repository): a repartition topic (`groupBy(word)`), a KTable with its RocksDB store and changelog
(`count()`), processing.guarantee=exactly_once_v2 and one standby replica. The same input and the
same life cycle on both brokers, at once: two instances, then one (a clean close, a rebalance), then
two again and the first killed with kill -9 while input still arrives (its open transaction must be
aborted, its tasks move to the survivor, the standby is promoted).

Exactly once is checked on the output as a read_committed consumer sees it: the record cache is off,
so each input word yields one update, and the updates of every word must be 1, 2, ..., n, each once,
with n the word's count in the input. Then both brokers' outputs must be equal.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.reference import streams_app as sa
from tests.reference.helpers import Pair


@pytest.fixture(scope="module")
def streams_built() -> None:
    why = sa.missing_prerequisites()
    if why is not None:
        pytest.skip(f"KAFKA STREAMS UNAVAILABLE: {why}")
    sa.build()


def _exactly_once(result: sa.ScenarioResult) -> dict[str, list[int]]:
    """Words whose committed updates are not exactly 1..n (missing, duplicated or out of order)."""
    return {w: s for w, s in result.seen.items() if s != list(range(1, result.expected.get(w, 0) + 1))}


# the JVMs start slowly on a loaded machine, and a kill -9 waits out a session (45 s under `streams`)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_word_count_exactly_once_on_both_brokers(pair: Pair, streams_built: None, protocol: str) -> None:
    prefix = f"wordcount-{protocol}"
    with ThreadPoolExecutor(2) as pool:
        kafka_f = pool.submit(sa.run_scenario, pair.kafka.bootstrap, protocol, prefix)
        mini_f = pool.submit(sa.run_scenario, pair.mini.bootstrap, protocol, prefix)
        kafka, mini = kafka_f.result(), mini_f.result()
    for name, result in (("kafka", kafka), ("minibroker", mini)):
        assert set(result.seen) == set(result.expected), (name, result.logs)
        assert _exactly_once(result) == {}, (name, {w: len(s) for w, s in _exactly_once(result).items()}, result.logs)
    assert mini.seen == kafka.seen
