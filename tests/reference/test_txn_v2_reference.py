"""Transactions v2 (KIP-890 part 2) on the wire, Apache Kafka 4.4 next to minibroker.

The same requests (tests/reference/txn_v2_helpers.py) go to both brokers at once; every answer
must match: Produce v12 adding its partition, EndTxn v5's bumped epoch and its retries, the late
write of an ended transaction refused, TxnOffsetCommit v5 without AddOffsetsToTxn, an abort of
nothing, v1 requests beside v2 ones, and the fence of a new instance (one bump, as Kafka 4.4).
"""

from __future__ import annotations

from minibroker_protocol.apis import api_versions
from minibroker_protocol.errors import ErrorCode as E
from tests.integration.helpers import RawClient
from tests.reference.helpers import POOL, Pair
from tests.reference.txn_v2_helpers import _describe_epoch, _end, _init, raw_scenario


def _features(bootstrap: str) -> tuple[dict[str, int], dict[int, int]]:
    with RawClient(bootstrap) as c:
        r = c.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="it", client_software_version="1"))
    assert r.finalized_features_epoch >= 0  # what makes the Java client read the levels at all
    return ({f.name: f.max_version_level for f in r.finalized_features},
            {k.api_key: k.max_version for k in r.api_keys})


def test_feature_levels_clients_read_match_kafka(pair: Pair) -> None:
    (kafka, kafka_apis), (mini, mini_apis) = _features(pair.kafka.bootstrap), _features(pair.mini.bootstrap)
    for name in ("transaction.version", "group.version", "metadata.version", "share.version"):
        assert mini.get(name) == kafka.get(name), name
    assert "kraft.version" not in mini and "kraft.version" not in kafka
    # EndTxn v5, Produce v12+, AddPartitionsToTxn v5 and TxnOffsetCommit v6 (KIP-1319, issue 35)
    for key in (26, 0, 24, 28):
        assert mini_apis[key] == kafka_apis[key], key
    assert mini_apis[28] == 6


def test_transactions_v2_answers_match_kafka(pair: Pair) -> None:
    # the same names on both brokers: the shared brokers' listings stay alike (tests/reference/test_tools.py)
    futures = [POOL.submit(raw_scenario, side.bootstrap, "txn-v2-raw") for side in (pair.kafka, pair.mini)]
    kafka, mini = (f.result(timeout=120) for f in futures)
    assert mini == kafka
    steps = dict((s[0], s[1:]) for s in mini)
    # and what the comparison is about, stated: these hold on both brokers
    assert steps["produce v12"] == (E.NONE,)
    assert steps["end v5 commit"] == (E.NONE, "pid", 1)
    assert steps["end v5 commit retried"] == (E.NONE, "pid", 1)
    assert steps["late produce v12, old epoch"] == (E.INVALID_PRODUCER_EPOCH,)
    assert steps["txn offset commit v5"] == ([E.NONE],)
    assert steps["produce v11 unadded"] == (E.TRANSACTION_ABORTABLE,)
    assert steps["init fences"] == ([E.CONCURRENT_TRANSACTIONS, E.NONE], "pid", 5)
    assert steps["fenced produce"] == (E.INVALID_PRODUCER_EPOCH,)


def _abort_never_begun(bootstrap: str, txn_id: str) -> list[tuple[object, ...]]:
    """EndTxn(ABORT) v4 (transactions v1, librdkafka's) for a transaction the coordinator never saw
    begin: what librdkafka sends when its AddPartitionsToTxn was answered with an error (it then
    counts the request as sent) and the application aborts before the retry (issue 37)."""
    with RawClient(bootstrap) as c:
        codes, pid, epoch = _init(c, txn_id)
        code, _, _ = _end(c, 4, txn_id, pid, epoch, False)
        return [("init", codes), ("end v4 abort, Empty", code), ("state", _describe_epoch(c, txn_id)[0])]


def test_an_abort_of_a_transaction_never_begun_matches_kafka(pair: Pair) -> None:
    futures = [POOL.submit(_abort_never_begun, side.bootstrap, "txn-never-begun") for side in (pair.kafka, pair.mini)]
    kafka, mini = (f.result(timeout=120) for f in futures)
    assert mini == kafka
    assert mini[1] == ("end v4 abort, Empty", E.INVALID_TXN_STATE)
