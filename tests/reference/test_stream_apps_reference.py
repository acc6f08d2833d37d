"""The Python stream processors of tests/integration (issue 35) run against Kafka 4.4 and
minibroker: the same FastStream pipeline on each broker gives the same totals, and the same
Quix Streams windowed sum (exactly-once) the same windows."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.integration.helpers import unique
from tests.reference.helpers import Pair

pytest.importorskip("faststream")
from tests.integration import quixstreams_app as quix  # noqa: E402  (after the skip)
from tests.integration.faststream_app import expected, run_pipeline  # noqa: E402


def _topics(bootstrap: str, *names: str, partitions: int = 3) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names])
    finally:
        admin.close()


@pytest.mark.timeout(600)
def test_faststream_pipeline_same_on_both(pair: Pair, tmp_path: Path) -> None:
    results = []
    for side in (pair.kafka, pair.mini):
        in_topic, out_topic = unique("fs-orders"), unique("fs-totals")
        _topics(side.bootstrap, in_topic, out_topic)
        work = tmp_path / side.name
        work.mkdir()
        results.append(run_pipeline(side.bootstrap, work, in_topic, out_topic))
    assert results[0] == results[1] == expected()


@pytest.mark.timeout(900)  # the first run makes quixstreams' virtualenv (pip)
def test_quixstreams_windowed_sum_same_on_both(pair: Pair, tmp_path: Path) -> None:
    results = []
    for side in (pair.kafka, pair.mini):
        in_topic, out_topic = unique("qx-readings"), unique("qx-sums")
        _topics(side.bootstrap, in_topic, out_topic, partitions=1)
        work = tmp_path / side.name
        work.mkdir()
        results.append(quix.run_windowed_sum(side.bootstrap, work, in_topic, out_topic, unique("quix")))
    assert results[0] == results[1] == quix.expected()
