"""The console's message page on a batch of 1.5 million records (issue 30, finding 4): one GET with
limit=1 decodes a bounded number of records lazily (and decompresses a bounded prefix) instead of
all of them, which cost 33 s of the event loop and 1.5 GiB; a Kafka client's Metadata keeps being
answered meanwhile."""

from __future__ import annotations

import json
import resource
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.records import v2
from minibroker_protocol.records.batch import BatchView
from minibroker_storage.log_validator import ValidatedRecords
from tests.console.batch_helpers import big_batch
from tests.console.helpers import CONSOLE_OVERRIDES, console_url
from tests.integration.helpers import module_broker, unique
from tests.integration.probe_helpers import MetadataProbe

RECORDS = 1_500_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, CONSOLE_OVERRIDES) as b:
        yield b


def test_a_page_of_a_huge_batch_costs_little(broker: BrokerThread) -> None:
    topic = unique("huge")
    broker.create_topic(topic)
    batch = big_batch(RECORDS)

    def store(s: Any) -> None:
        # stored as it is (a log written by an older broker, or a produce let through): the page
        # must cope with whatever a segment holds
        s.log_manager.get_log(topic, 0).append_as_leader(ValidatedRecords(batch, [BatchView(batch, 0)], len(batch), int(time.time() * 1000)))

    broker._on_loop(store)
    assert broker.end_offsets(topic) == {0: RECORDS}
    url = f"{console_url(broker)}/api/topics/{topic}/0/messages?limit=1"
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with MetadataProbe(broker.bootstrap) as probe:
        time.sleep(0.2)
        t0 = time.monotonic()
        with urllib.request.urlopen(url, timeout=120) as r:
            page = json.loads(r.read())
        took = time.monotonic() - t0
        time.sleep(0.2)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    print(f"page in {took:.2f} s, peak RSS +{grew_mb:.0f} MB, Metadata worst {probe.worst:.2f} s")
    [b] = page["batches"]
    assert b["record_count"] == RECORDS and b["records_truncated"] is True
    assert 0 < len(b["records"]) <= 1_000
    assert [r["offset"] for r in b["records"][:3]] == [0, 1, 2] and b["records"][0]["value"]["text"] == "x"
    assert probe.error is None and probe.answered >= 3
    assert took < 10 and probe.worst < 2.0 and grew_mb < 300


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec_pages_its_first_records(codec: int) -> None:
    from minibroker.console import record_page

    batch = v2.build_batch([v2.Record(offset_delta=i, value=b"v%d" % i) for i in range(20_000)],
                           compression=codec, base_timestamp=5, base_offset=100)
    recs, truncated, error = record_page.v2_records(BatchView(batch, 0), 10)
    assert [r.offset for r in recs] == list(range(100, 110)) and recs[3].value == b"v3"
    assert truncated and error is None
    recs, truncated, error = record_page.v2_records(BatchView(batch, 0), 50_000)
    assert len(recs) == 20_000 and not truncated and error is None
