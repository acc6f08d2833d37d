"""The web console and /metrics (issue 21) over HTTP, against a broker filled by real clients:
every page and JSON endpoint, the numbers checked against the broker's own state, bad input
answered 404/400, and /metrics parsed with Prometheus' own parser."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from tests.console.helpers import (
    BAD_KEY,
    CHROMIUM,
    CHROMIUM_ARGS,
    CONSOLE_OVERRIDES,
    Data,
    console_url,
    fill,
    get,
    get_json,
)
from tests.integration.helpers import module_broker


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, CONSOLE_OVERRIDES) as b:
        yield b


@pytest.fixture(scope="module")
def data(kafka_broker_module: BrokerThread) -> Iterator[Data]:
    d = fill(kafka_broker_module)
    yield d
    d.consumer.close()
    d.open_producer.abort_transaction(10)


@pytest.fixture(scope="module")
def url(kafka_broker_module: BrokerThread, data: Data) -> str:
    return console_url(kafka_broker_module)


def partition_state(b: BrokerThread, topic: str, p: int = 0) -> dict[str, int]:
    return b.call(lambda br: {k: getattr(br.get_log(topic, p), k) for k in (
        "log_start_offset", "high_watermark", "log_end_offset", "last_stable_offset", "recovery_point")})


def test_cluster_page_and_api(url: str, kafka_broker_module: BrokerThread) -> None:
    c = get_json(f"{url}/api/cluster")
    br = kafka_broker_module.broker
    assert c["cluster_id"] == br.cluster_id and c["node_id"] == br.node_id
    assert c["listener"] == kafka_broker_module.bootstrap
    assert {a["name"] for a in c["apis"]} >= {"Produce", "Fetch", "ApiVersions"}
    assert {a["key"]: (a["min"], a["max"]) for a in c["apis"]}[1] == (
        br.handlers[1].versions.lo, br.handlers[1].versions.hi)
    cfg = {e["name"]: e for e in c["config"]}
    assert cfg["console.port"]["source"] == "STATIC_BROKER_CONFIG" and cfg["num.partitions"]["source"] == "DEFAULT_CONFIG"
    assert c["data_dir_bytes"] > 0
    status, ctype, body = get(f"{url}/")
    assert status == 200 and ctype.startswith("text/html") and br.cluster_id in body and "svg class=\"chart\"" in body


def test_topics_and_partition(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    topics = {t["name"]: t for t in get_json(f"{url}/api/topics")}
    assert topics[data.plain]["messages"] == data.plain_count
    assert topics[data.compacted]["cleanup_policy"] == "compact"
    p = get_json(f"{url}/api/topics/{data.plain}/0")
    truth = partition_state(kafka_broker_module, data.plain)
    for k, v in truth.items():
        assert p[k] == v, k
    assert p["index_interval_bytes"] == 512 and p["segments"] >= 3
    assert [s["base_offset"] for s in p["segment_list"]] == kafka_broker_module.call(
        lambda br: [s.base_offset for s in br.get_log(data.plain, 0).segments])
    txn_producers = get_json(f"{url}/api/topics/{data.txn}/0")["producers"]
    assert len(txn_producers) == 3 and all(x["epoch"] >= 0 for x in txn_producers)
    assert sum(x["open_txn_first_offset"] is not None for x in txn_producers) == 1
    status, _, body = get(f"{url}/topics/{data.plain}/0")
    assert status == 200 and f'data-field="high_watermark">{truth["high_watermark"]}<' in body
    assert get(f"{url}/topics")[0] == 200 and get(f"{url}/topics/{data.plain}")[0] == 200


def test_segment_index_against_the_files(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    first = get_json(f"{url}/api/topics/{data.plain}/0")["segment_list"][0]
    s = get_json(f"{url}/api/topics/{data.plain}/0/segments/{first['base_offset']}")
    truth = kafka_broker_module.call(lambda br: [(e.offset, e.position) for e in
                                                 br.get_log(data.plain, 0).segments.first.offset_index.all_entries()])
    assert [(e["offset"], e["position"]) for e in s["index"]] == truth and len(truth) >= 2
    # sparse: one entry per index.interval.bytes of batches, each at a real batch position
    positions = {b["position"] for b in s["batches"]}
    assert all(e["position"] in positions for e in s["index"]) and len(s["batches"]) > len(s["index"])
    assert s["time_index"] and s["size"] == sum(b["size"] for b in s["batches"])
    status, _, body = get(f"{url}/topics/{data.plain}/0/segments/{first['base_offset']}")
    assert status == 200 and f'data-points="{len(truth)}"' in body and "timeindex-plot" in body


def test_message_browser(url: str, data: Data) -> None:
    m = get_json(f"{url}/api/topics/{data.plain}/0/messages?offset=2&limit=3")
    recs = [r for b in m["batches"] for r in b["records"]]
    assert [r["offset"] for r in recs][:3] == [2, 3, 4]
    assert recs[0]["value"]["json"] == {"n": 2, "pad": "x" * 40} and recs[0]["headers"][0]["key"] == "h"
    bad = recs[1]
    assert bad["key"]["text"] is None and bad["key"]["hex"] == BAD_KEY.hex()  # non-UTF-8 key: hex only
    b0 = m["batches"][0]
    assert b0["magic"] == 2 and b0["crc_valid"] and b0["record_count"] == 1 and b0["codec"] == "none"
    # by timestamp: the first record at or after the 10th record's timestamp
    ts10 = get_json(f"{url}/api/topics/{data.plain}/0/messages?offset=10&limit=1")["batches"][0]["max_timestamp"]
    by_ts = get_json(f"{url}/api/topics/{data.plain}/0/messages?timestamp={ts10}&limit=1")
    assert by_ts["batches"][0]["records"][0]["timestamp"] >= ts10 and by_ts["start"] <= 10
    status, _, body = get(f"{url}/topics/{data.plain}/0/messages?offset=3")
    assert status == 200 and BAD_KEY.hex() in body


def test_compressed_compacted_and_old_format(url: str, data: Data) -> None:
    z = get_json(f"{url}/api/topics/{data.zipped}/0/messages?offset=0")
    assert z["batches"][0]["codec"] == "gzip"
    assert [r["value"]["text"] for b in z["batches"] for r in b["records"]] == [f"zipped {i}" for i in range(10)]
    old = get_json(f"{url}/api/topics/{data.magic1}/0/messages?offset=0&limit=50")
    assert {b["magic"] for b in old["batches"]} == {1}
    assert [r["value"]["text"] for b in old["batches"] for r in b["records"]] == [f"old format {i}" for i in range(10)]
    comp = get_json(f"{url}/api/topics/{data.compacted}")
    assert comp["config"]["cleanup.policy"] == "compact" and comp["overrides"]["cleanup.policy"] == "compact"
    assert get(f"{url}/topics/{data.magic1}/0/messages")[0] == 200
    v = get_json(f"{url}/api/topics/{data.magic1}/0/batch/0")
    assert v["magic"] == 1 and "magic 1" in v["spans"][0]["label"]


def test_transactions_marked(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    m = get_json(f"{url}/api/topics/{data.txn}/0/messages?offset=0&limit=50")
    kinds = [("control" if b["control"] else "aborted" if b["aborted"] else "data",
              b["records"][0].get("control", {}).get("type")) for b in m["batches"]]
    assert kinds[:4] == [("data", None), ("control", "COMMIT"), ("aborted", None), ("control", "ABORT")]
    assert m["batches"][-1]["transactional"] and m["batches"][-1]["above_last_stable_offset"]
    t = get_json(f"{url}/api/transactions")
    truth = partition_state(kafka_broker_module, data.txn)
    held = [x for x in t["lso_held"] if x["topic"] == data.txn]
    assert held == [{"topic": data.txn, "partition": 0, "last_stable_offset": truth["last_stable_offset"],
                     "high_watermark": truth["high_watermark"],
                     "held_back": truth["high_watermark"] - truth["last_stable_offset"]}]
    assert any(x["state"] == "Ongoing" and f"{data.txn}-0" in x["partitions"] for x in t["transactions"])
    status, _, body = get(f"{url}/topics/{data.txn}/0/messages?offset=0")
    assert status == 200 and 'class="tag aborted"' in body and "COMMIT" in body
    assert get(f"{url}/transactions")[0] == 200


def test_groups_lag(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    g = get_json(f"{url}/api/groups/{data.group}")
    [row] = [o for o in g["offsets"] if o["topic"] == data.plain]
    assert row["committed"] == data.consumed == kafka_broker_module.committed(data.group, data.plain, 0)
    assert row["lag"] == data.plain_count - data.consumed
    listed = {x["group_id"]: x for x in get_json(f"{url}/api/groups")}
    assert listed[data.group]["lag"] == data.plain_count - data.consumed
    status, _, body = get(f"{url}/groups/{data.group}")
    assert status == 200 and f'data-lag="{data.plain}-0">{data.plain_count - data.consumed}<' in body
    assert get(f"{url}/groups")[0] == 200


def test_batch_byte_view(url: str, data: Data) -> None:
    v = get_json(f"{url}/api/topics/{data.plain}/0/batch/5")
    raw = bytes.fromhex(v["hex"])
    assert v["magic"] == 2 and int.from_bytes(raw[0:8], "big") == v["base_offset"] == 5
    labels = [s["label"] for s in v["spans"]]
    assert labels[0] == "batch 0: baseOffset = 5" and any("crc" in x for x in labels)
    assert any("recordsCount = 1" in x for x in labels) and any("key" in x for x in labels)
    z = get_json(f"{url}/api/topics/{data.zipped}/0/batch/0")
    assert any("records (gzip" in s["label"] for s in z["spans"])
    assert get(f"{url}/topics/{data.plain}/0/batch/5")[0] == 200


@pytest.mark.parametrize("path, status", [
    ("/topics/no-such-topic", 404), ("/api/topics/no-such-topic/0", 404), ("/topics/{plain}/7", 404),
    ("/topics/{plain}/-1", 400), ("/topics/{plain}/x", 400), ("/topics/{plain}/0/messages?offset=99999999", 404),
    ("/topics/{plain}/0/messages?offset=99999999999999999999999", 400),
    ("/api/topics/{plain}/0/messages?offset=abc", 400), ("/topics/{plain}/0/messages?timestamp=zz", 400),
    ("/topics/{plain}/0/messages?limit=100000", 400), ("/topics/{plain}/0/batch/999999", 404),
    ("/topics/{plain}/0/segments/123", 404), ("/groups/no-such-group", 404), ("/no/such/page", 404),
    ("/topics/%ff%fe/0", 404),
])
def test_bad_input_is_a_clear_4xx(url: str, data: Data, kafka_broker_module: BrokerThread, path: str,
                                  status: int) -> None:
    got, ctype, body = get(url + path.format(plain=data.plain))
    assert got == status, body[:300]
    if "/api/" in path:
        assert json.loads(body)["status"] == status and json.loads(body)["error"]
    else:
        assert 'class="error"' in body
    # the broker is untouched: still answering, and nothing logged as failed
    assert kafka_broker_module.end_offsets(data.plain) == {0: data.plain_count}


def _metrics(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    status, ctype, body = get(f"{url}/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(body) for s in fam.samples}


def test_metrics_move_with_real_clients(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    before = _metrics(url)
    t = data.plain
    bin_key = ("kafka_server_brokertopicmetrics_bytesin_total", (("topic", t),))
    min_key = ("kafka_server_brokertopicmetrics_messagesin_total", (("topic", t),))
    bout_key = ("kafka_server_brokertopicmetrics_bytesout_total", (("topic", t),))
    assert before[min_key] == data.plain_count
    assert before[("kafka_log_log_logendoffset", (("partition", "0"), ("topic", t)))] == data.plain_count
    assert before[("kafka_consumergroup_lag", (("consumergroup", data.group), ("partition", "0"), ("topic", t)))] \
        == data.plain_count - data.consumed
    assert before[("kafka_server_replicamanager_partitioncount", ())] == kafka_broker_module.call(
        lambda br: len(br.log_manager.logs()))
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "linger.ms": 0})
    for _ in range(5):
        p.produce(t, value=b"m" * 100, partition=0)
        p.flush(10)  # one Produce request each
    mid = _metrics(url)
    assert mid[min_key] == before[min_key] + 5
    assert mid[bin_key] - before[bin_key] >= 5 * 100
    n_produce = lambda m: sum(v for (name, labels), v in m.items()  # noqa: E731
                              if name == "kafka_network_requestmetrics_requests_total"
                              and ("request", "Produce") in labels)
    assert n_produce(mid) >= n_produce(before) + 5
    assert mid[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] >= n_produce(mid)
    # consume with both clients: bytes out grows by at least what they read
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": "metrics-reader",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(t, 0, 0)])
    got = 0
    end = time.monotonic() + 20
    while got < data.plain_count + 5 and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.close()
    assert got == data.plain_count + 5
    kc = KafkaConsumer(bootstrap_servers=kafka_broker_module.bootstrap, consumer_timeout_ms=1000)
    kc.assign([KTP(t, 0)])
    kc.seek(KTP(t, 0), 0)
    n = sum(1 for _ in kc)
    kc.close()
    assert n == data.plain_count + 5
    after = _metrics(url)
    stored = kafka_broker_module.call(lambda br: br.get_log(t, 0).size_in_bytes())
    assert after[bout_key] - mid[bout_key] >= 2 * stored * 0.9
    assert after[("kafka_log_log_size", (("partition", "0"), ("topic", t)))] == stored


def test_live_trace_streams_a_produce(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    from confluent_kafka import Producer

    lines: list[str] = []
    ready = threading.Event()

    def listen() -> None:
        with urllib.request.urlopen(f"{url}/trace/stream?api=Produce&client_id=trace-me", timeout=15) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith(": subscribed"):
                    ready.set()
                if line.startswith("data: "):
                    lines.append(line[6:])
                    return

    th = threading.Thread(target=listen, daemon=True)
    th.start()
    assert ready.wait(10)
    assert kafka_broker_module.broker.apis.tracer is not None  # attached only while someone watches
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "client.id": "trace-me", "linger.ms": 0})
    p.produce(data.zipped, value=b"traced", partition=0)
    p.flush(10)
    th.join(15)
    [entry] = [json.loads(x) for x in lines]
    assert entry["api"] == "Produce" and entry["client_id"] == "trace-me"
    [batch] = entry["request"]["topic_data"][0]["partition_data"][0]["records"]["batches"]
    assert batch["count"] == 1 and entry["response"]["responses"][0]["partition_responses"][0]["error_code"] == 0
    end = time.monotonic() + 5
    while kafka_broker_module.broker.apis.tracer is not None and time.monotonic() < end:
        time.sleep(0.05)
    assert kafka_broker_module.broker.apis.tracer is None  # detached when the last watcher left


# -- a real browser: Debian's chromium driven by Playwright (never a downloaded browser) -------------


@pytest.fixture(scope="module")
def browser_page() -> Iterator[Any]:
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        yield page
        browser.close()


def test_browser_follows_topic_partition_segment_batch(browser_page: Any, url: str, kafka_broker_module: BrokerThread,
                                                       data: Data, tmp_path: Any) -> None:
    page = browser_page
    page.goto(f"{url}/")
    assert page.locator('[data-field="cluster_id"]').inner_text() == kafka_broker_module.broker.cluster_id
    # the rate charts have axes: 0 and the maximum on y, the last two minutes on x (2 s a sample)
    page.wait_for_selector("svg.chart polyline", state="attached", timeout=20_000)
    chart = page.locator("svg.chart").first
    assert chart.locator("line.axis").count() == 2
    assert (chart.locator("text.y-min").text_content(), chart.locator("text.x-start").text_content(),
            chart.locator("text.x-end").text_content()) == ("0", "-120 s", "now")
    assert chart.locator("text.y-max").text_content() and (chart.locator("text.last").text_content() or "").endswith("/s")
    page.screenshot(path=str(tmp_path / "cluster.png"), full_page=True)
    page.goto(f"{url}/topics")
    page.click(f"text={data.plain}")
    page.click(f'table.partitions a[href="/topics/{data.plain}/0"]')
    truth = partition_state(kafka_broker_module, data.plain)
    for field_name, value in truth.items():
        assert page.locator(f'[data-field="{field_name}"]').inner_text() == str(value), field_name
    page.screenshot(path=str(tmp_path / "partition.png"), full_page=True)
    page.locator("table.segments a").first.click()
    first = kafka_broker_module.call(lambda br: (br.get_log(data.plain, 0).segments.first.offset_index.entries,
                                                 br.get_log(data.plain, 0).segments.first.size))
    assert page.locator("svg.index-plot").get_attribute("data-points") == str(first[0])
    assert page.locator("svg.index-plot circle.entry").count() == first[0]
    assert page.locator('[data-field="size"]').inner_text() == str(first[1])
    page.screenshot(path=str(tmp_path / "segment.png"), full_page=True)
    page.locator("a.batch-link").nth(2).click()
    assert page.locator('[data-field="base_offset"]').inner_text() == "2"
    assert page.locator("table.bytes td", has_text="baseOffset = 2").count() == 1
    page.screenshot(path=str(tmp_path / "batch.png"), full_page=True)
    page.goto(f"{url}/topics/{data.txn}/0/messages?offset=0")
    assert page.locator("section.aborted").count() >= 1 and page.locator("b.control", has_text="COMMIT").count() == 1
    page.screenshot(path=str(tmp_path / "messages.png"), full_page=True)
    # dense enough to read a log: a one-record batch, its header facts and its record in under
    # 150 px (188 when every fact had a line and JSON was indented: four records a screen)
    page.goto(f"{url}/topics/{data.plain}/0/messages?offset=0")
    first = page.locator("section.batch").first.bounding_box()
    assert first is not None and first["height"] < 150, first
    page.goto(f"{url}/groups/{data.group}")
    lag = partition_state(kafka_broker_module, data.plain)["high_watermark"] - data.consumed
    assert page.locator(f'[data-lag="{data.plain}-0"]').inner_text() == str(lag)
    assert len(list(tmp_path.glob("*.png"))) == 5


def test_browser_live_trace_shows_a_produce(browser_page: Any, url: str, kafka_broker_module: BrokerThread,
                                            data: Data, tmp_path: Any) -> None:
    from confluent_kafka import Producer

    page = browser_page
    page.goto(f"{url}/trace")
    page.wait_for_selector('#trace-status[data-state="live"]', timeout=10000)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "client.id": "browser-trace", "linger.ms": 0})
    p.produce(data.zipped, value=b"seen in the browser", partition=0)
    p.flush(10)
    row = page.wait_for_selector('tr.trace-entry[data-api="Produce"][data-client="browser-trace"]', timeout=10000)
    assert row is not None
    row.click()
    assert page.locator("table.trace pre", has_text='"topic_data"').count() >= 1
    page.screenshot(path=str(tmp_path / "trace.png"), full_page=True)


def test_browser_shows_a_share_consumers_records(browser_page: Any, url: str, kafka_broker_module: BrokerThread,
                                                 tmp_path: Any) -> None:
    """A confluent-kafka ShareConsumer holds records it has not acknowledged: the groups page links
    to the share group, whose page shows the member and, per state, the counts the coordinator has."""
    from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    from tests.integration.helpers import Deadline, create_topic, unique

    b = kafka_broker_module
    topic, group = unique("browser-share"), unique("browser-share-g")
    create_topic(b, topic, 1)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # kept: the futures need the handle alive
    for f in admin.incremental_alter_configs([ConfigResource(
            ConfigResource.Type.GROUP, group, incremental_configs=[ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])]).values():
        f.result(10)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(6):
        p.produce(topic, value=f"b{i}".encode(), partition=0)
        p.flush(10)
    c = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group, "client.id": "browser-sharer",
                       "share.acknowledgement.mode": "explicit", "max.poll.records": 4})
    c.subscribe([topic])
    try:
        got: list[Any] = []
        deadline = Deadline(30)
        while not got:
            assert deadline, "the share consumer received nothing"
            got = list(c.poll(0.5))
        c.acknowledge(next(m for m in got if m.offset() == 1), AcknowledgeType.ACCEPT)
        c.commit_sync(10)
        truth = b.call(lambda br: [r.state.name for _, r in next(
            sp for k, sp in br.share_groups.partitions.items() if k[0] == group).in_flight()])
        page = browser_page
        page.goto(f"{url}/groups")
        page.click(f"text={group}")
        assert page.locator('[data-field="type"]').inner_text() == "share (KIP-932)"
        assert page.locator("table.members td", has_text="browser-sharer").count() == 1
        for state in ("ACQUIRED", "ACKNOWLEDGED", "AVAILABLE", "ARCHIVED"):
            shown = page.locator(f'[data-state="{topic}-0-{state.lower()}"]').inner_text()
            assert shown == str(truth.count(state)), (state, truth)
        assert truth.count("ACQUIRED") >= 1 and truth.count("ACKNOWLEDGED") == 1
        assert page.locator(f'[data-start="{topic}-0"]').inner_text() == "0"
        assert page.locator("table.in-flight span.rs.acquired").count() == truth.count("ACQUIRED")
        page.screenshot(path=str(tmp_path / "share-group.png"), full_page=True)
    finally:
        c.close()


def test_writes_are_off_without_the_flag(url: str, kafka_broker_module: BrokerThread, data: Data) -> None:
    import urllib.error

    for path in ("/actions/topics", "/api/actions/topics", f"/actions/topics/{data.plain}/delete",
                 f"/actions/topics/{data.plain}/0/produce", f"/actions/groups/{data.group}/reset-offsets"):
        req = urllib.request.Request(f"{url}{path}", data=b"name=should-not-exist&topic=x", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        body = e.value.read().decode()
        assert e.value.code == 403 and "--console-allow-writes" in body, (path, body[:300])
    assert "should-not-exist" not in kafka_broker_module.call(lambda br: list(br.topics))
    assert data.plain in kafka_broker_module.call(lambda br: list(br.topics))
    status, _, body = get(f"{url}/topics")
    assert status == 200 and "create-topic" not in body and "--console-allow-writes" in body
