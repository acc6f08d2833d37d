"""The console's message page on a batch of 1.5 million records (issue 30, finding 4): one GET with
limit=1 decodes a bounded number of records lazily (and decompresses a bounded prefix) instead of
all of them, which cost 33 s of the event loop and 1.5 GiB; a Kafka client's Metadata keeps being
answered meanwhile."""

from __future__ import annotations

import json
import resource
import struct
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import zstandard

from minibroker.testing import BrokerThread
from protocol.records import v2
from protocol.records.batch import BatchView, crc32c
from storage.log_validator import ValidatedRecords
from tests.console.helpers import CONSOLE_OVERRIDES, console_url
from tests.integration.helpers import module_broker, unique
from tests.integration.probe_helpers import MetadataProbe

RECORDS = 1_500_000
ZSTD = 4


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def big_batch(n: int) -> bytes:
    """A zstd RecordBatch v2 of `n` records (null key, value b"x"), built from bytes: a few MB of
    records that compress to kilobytes."""
    parts = []
    for i in range(n):
        body = b"\x00\x00" + _uvarint(i << 1) + b"\x01\x02x\x00"  # attrs, ts delta, offset delta, key, value, headers
        parts.append(_uvarint(len(body) << 1) + body)
    section = zstandard.ZstdCompressor(level=3).compress(b"".join(parts))
    out = bytearray(61) + section
    v2._HEADER.pack_into(out, 0, 0, len(out) - 12, 0, 2, 0, ZSTD, n - 1, 1_000, 1_000, -1, -1, -1, n)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


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
