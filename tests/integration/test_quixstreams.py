"""A Quix Streams application against minibroker (issue 35): a stateful tumbling-window sum with
its changelog topic, in exactly-once mode, written and started as Quix Streams' documentation
shows it (`Application`, `app.dataframe`, `tumbling_window(...).sum().final()`, `app.run()`,
run as `python app.py`).

quixstreams 3.28 pins confluent-kafka < 2.13 while this project's tests use 2.16, so the app runs
from its own virtualenv in the cache (`~/.cache/minibroker/quixstreams-<version>`, made with pip
on first use, as the Java references fetch their jars), never from the test environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import describe_configs
from tests.integration.helpers import RawClient, create_topic, module_broker, offsets, unique
from tests.integration.quixstreams_app import (
    expected,
    run_windowed_sum,
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory) as b:
        yield b


@pytest.mark.timeout(900)  # the first run makes the virtualenv (pip)
def test_windowed_sum_exactly_once(broker: BrokerThread, tmp_path: Path) -> None:
    in_topic, out_topic, group = unique("readings"), unique("sums"), unique("quix")
    create_topic(broker, in_topic, 1)
    create_topic(broker, out_topic, 1)
    assert run_windowed_sum(broker.bootstrap, tmp_path, in_topic, out_topic, group) == expected(), (
        (tmp_path / "app.log").read_text()[-3000:])

    # exactly-once: the totals were written in transactions, whose COMMIT markers take offsets too
    assert offsets(broker, out_topic)[1] > len(expected())
    # the window store's changelog topic: made by the app, compacted
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        changelogs = [t for t in admin.list_topics() if t.startswith("changelog__") and group in t]
    finally:
        admin.close()
    assert changelogs
    DC = describe_configs.REQUEST
    with RawClient(broker.bootstrap) as c:
        resp = c.call(describe_configs.API, 4, DC(resources=[
            DC.DescribeConfigsResource(resource_type=2, resource_name=t, configuration_keys=["cleanup.policy"])
            for t in changelogs], include_synonyms=False, include_documentation=False)).to_dict()
    assert {r["resource_name"]: [e["value"] for e in r["configs"]] for r in resp["results"]} == {
        t: ["compact"] for t in changelogs}
