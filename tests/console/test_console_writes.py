"""The console's write actions (`--console-allow-writes`), checked with real clients: a topic the
console creates is seen by confluent-kafka's AdminClient with its configs, a record it produces is
read back by kafka-python, a group's offsets it resets are what confluent-kafka reads as committed,
a topic it deletes is gone for the AdminClient. Writes are POST only and same-origin; the
read-only console's 403 is in test_console.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from tests.console.helpers import CHROMIUM, CHROMIUM_ARGS, CONSOLE_OVERRIDES, console_url, get, get_json
from tests.integration.helpers import Deadline, create_topic, module_broker, unique


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {**CONSOLE_OVERRIDES, "console.allow.writes": True}) as b:
        yield b


@pytest.fixture(scope="module")
def url(broker: BrokerThread) -> str:
    return console_url(broker)


def post(url: str, form: dict[str, str], headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POST a form; (status, parsed JSON for /api/ paths, else the HTML text)."""
    req = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode()
    return status, json.loads(body) if "/api/" in url else body


def admin(b: BrokerThread) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": b.bootstrap})


def test_create_and_delete_topic_seen_by_admin_client(url: str, broker: BrokerThread) -> None:
    from confluent_kafka.admin import ConfigResource, ResourceType

    name = unique("made-in-console")
    status, r = post(f"{url}/api/actions/topics", {"name": name, "partitions": "3",
                                                   "configs": "cleanup.policy=compact, retention.ms=60000"})
    assert status == 200 and r["partitions"] == 3, r
    a = admin(broker)
    md = a.list_topics(timeout=10)
    assert len(md.topics[name].partitions) == 3
    [cfg] = a.describe_configs([ConfigResource(ResourceType.TOPIC, name)]).values()
    entries = cfg.result(10)
    assert entries["cleanup.policy"].value == "compact" and entries["retention.ms"].value == "60000"
    # CreateTopics' own checks and answers
    assert post(f"{url}/api/actions/topics", {"name": name})[0] == 409
    status, r = post(f"{url}/api/actions/topics", {"name": "bad/name"})
    assert status == 400 and r["error"].startswith("INVALID_TOPIC_EXCEPTION")
    status, r = post(f"{url}/api/actions/topics", {"name": unique("x"), "configs": "cleanup.policy=sideways"})
    assert status == 400 and r["error"].startswith("INVALID_CONFIG")
    # delete: the AdminClient no longer sees it; internal topics stay
    status, r = post(f"{url}/api/actions/topics/{name}/delete", {})
    assert status == 200, r
    assert name not in a.list_topics(timeout=10).topics
    assert post(f"{url}/api/actions/topics/{name}/delete", {})[0] == 404


def test_produce_a_test_record_read_by_kafka_python(url: str, broker: BrokerThread) -> None:
    from kafka import KafkaConsumer, TopicPartition

    name = unique("produced")
    create_topic(broker, name, 2)
    status, r = post(f"{url}/api/actions/topics/{name}/1/produce",
                     {"key": "k1", "value": '{"hello": "console"}', "headers": "origin=console"})
    assert status == 200 and r["offset"] == 0, r
    status, r = post(f"{url}/api/actions/topics/{name}/1/produce", {"null_key": "on", "value": "second"})
    assert status == 200 and r["offset"] == 1
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    c.assign([TopicPartition(name, 1)])
    c.seek(TopicPartition(name, 1), 0)
    got = []
    deadline = Deadline(15)
    while len(got) < 2:
        assert deadline, got
        for recs in c.poll(500).values():
            got.extend(recs)
    c.close()
    assert (got[0].key, got[0].value, got[0].headers) == (b"k1", b'{"hello": "console"}', [("origin", b"console")])
    assert got[1].key is None and got[1].value == b"second"
    # the log's own checks: a compacted topic refuses a record without a key, as Produce does
    compacted = unique("compacted")
    create_topic(broker, compacted, 1, {"cleanup.policy": "compact"})
    status, r = post(f"{url}/api/actions/topics/{compacted}/0/produce", {"null_key": "on", "value": "v"})
    assert status == 400 and r["error"].startswith("INVALID_RECORD"), r
    # an old-format topic stores what the console sent as magic 1, converted on the produce path
    old = unique("magic1")
    create_topic(broker, old, 1, {"message.format.version": "0.10.2"})
    assert post(f"{url}/api/actions/topics/{old}/0/produce", {"key": "k", "value": "old"})[0] == 200
    [batch] = get_json(f"{url}/api/topics/{old}/0/messages")["batches"]
    assert batch["magic"] == 1 and batch["records"][0]["value"]["text"] == "old"
    assert post(f"{url}/api/actions/topics/{name}/7/produce", {"value": "v"})[0] == 404


def test_reset_offsets_read_by_confluent_kafka(url: str, broker: BrokerThread) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    name, group = unique("reset"), unique("reset-group")
    create_topic(broker, name, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce(name, value=f"v{i}".encode(), partition=0)
    p.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe([name])
    deadline = Deadline(20)
    while not c.assignment():
        assert deadline
        c.poll(0.2)
    c.commit(offsets=[TopicPartition(name, 0, 7)], asynchronous=False)
    # a group with members: refused, as kafka-consumer-groups.sh refuses
    status, r = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": name, "to": "earliest"})
    assert status == 409 and "inactive" in r["error"], r
    c.close()
    status, r = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": name, "partition": "0", "to": "3"})
    assert status == 200 and r["offsets"] == {"0": 3}, r
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    assert reader.committed([TopicPartition(name, 0)], timeout=10)[0].offset == 3
    assert post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": name, "to": "latest"})[0] == 200
    assert reader.committed([TopicPartition(name, 0)], timeout=10)[0].offset == 10
    reader.close()
    assert get_json(f"{url}/api/groups/{group}")["offsets"][0]["lag"] == 0
    status, r = post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": name, "to": "11"})
    assert status == 400 and "outside" in r["error"]
    assert post(f"{url}/api/actions/groups/{group}/reset-offsets", {"topic": "nope", "to": "earliest"})[0] == 404
    # __consumer_offsets exists now: internal topics are neither deleted nor written (DeleteTopics, Produce)
    status, r = post(f"{url}/api/actions/topics/__consumer_offsets/delete", {})
    assert status == 403 and "internal" in r["error"]
    assert post(f"{url}/api/actions/topics/__consumer_offsets/0/produce", {"value": "v"})[0] == 400


def test_writes_are_post_only_and_same_origin(url: str, broker: BrokerThread) -> None:
    name = unique("csrf")
    assert get(f"{url}/actions/topics")[0] == 405  # a link or an <img> can never write
    origin = url  # scheme://host:port, as a browser sends it
    status, body = post(f"{url}/actions/topics", {"name": name}, {"Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in body
    status, body = post(f"{url}/actions/topics", {"name": name}, {"Referer": "http://evil.example/page"})
    assert status == 403
    port = url.rsplit(":", 1)[1]
    status, body = post(f"{url}/actions/topics", {"name": name}, {"Host": f"rebind.example:{port}",
                                                                  "Origin": f"http://rebind.example:{port}"})
    assert status == 403 and "own address" in body
    assert name not in broker.call(lambda br: list(br.topics))
    status, body = post(f"{url}/actions/topics", {"name": name}, {"Origin": origin})
    assert status == 200 and f"Created topic {name}" in body
    assert name in broker.call(lambda br: list(br.topics))


def test_browser_creates_a_topic_and_produces(url: str, broker: BrokerThread, tmp_path: Any) -> None:
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    from playwright.sync_api import sync_playwright

    name = unique("clicked")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/topics")
        page.fill('#create-topic input[name="name"]', name)
        page.fill('#create-topic input[name="partitions"]', "2")
        page.click("#create-topic button")
        assert page.locator('[data-field="result"]').inner_text() == f"Created topic {name} with 2 partition(s)"
        page.click("#next")
        page.click(f'table.partitions a[href="/topics/{name}/1"]')
        page.fill('#produce input[name="key"]', "browser-key")
        page.fill('#produce input[name="value"]', "clicked in chromium")
        page.click("#produce button")
        assert "at offset 0" in page.locator('[data-field="result"]').inner_text()
        page.click("#next")
        assert page.locator("span.text", has_text="clicked in chromium").count() == 1
        page.screenshot(path=str(tmp_path / "produced.png"), full_page=True)
        browser.close()
    assert broker.call(lambda br: br.get_log(name, 1).high_watermark) == 1
