"""The console's replication view (issue 29): every replica's LEO beside the HW, live.

Three brokers on one loop with the test playing the controller (tests/replication/cluster_helpers.py),
a real producer (confluent-kafka, in a thread) and a real browser (Debian's chromium through
Playwright, in a thread: both block). Pausing a follower's fetcher must show what seed 001 says:
the leader's log end offset runs on, the high watermark stays at the slowest in-sync replica, and
the page sees the HW move when the follower resumes, without a reload.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from tests.console.helpers import CHROMIUM, CHROMIUM_ARGS, get_json
from tests.replication.cluster_helpers import InProcessController, start_brokers, wait_until

pytestmark = pytest.mark.timeout(180)


def produce(bootstrap: str, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    """Produce `values` to partition 0 and wait for every delivery report: the errors (None = ok)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **conf})
    reports: list[Any] = []
    for v in values:
        p.produce(topic, v, partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(60)
    return reports


def _console(cluster: InProcessController, node: int) -> str:
    server = cluster.brokers[node].server
    assert server is not None and server.console is not None
    return server.console.url.rstrip("/")


def _row(view: dict[str, Any], topic: str) -> dict[str, Any]:
    rows = [p for p in view["partitions"] if p["topic"] == topic]
    assert len(rows) == 1, view["partitions"]
    return rows[0]


def _watch_in_browser(url: str, key: str, released: Any) -> dict[str, str]:
    """Open the page, read the row, then wait (no reload) until its HW reaches the LEO."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{url}/replication")

            def cell(name: str) -> str:
                return page.locator(f'[data-key="{key}"][data-field="{name}"]').inner_text()

            before = {n: cell(n) for n in ("role", "leader", "isr", "log_end_offset", "high_watermark", "followers")}
            released()  # the follower fetches again
            page.wait_for_function(
                "k => { const c = document.querySelector(`[data-key=\"${k}\"][data-field=\"high_watermark\"]`);"
                " return c && c.innerText === '11'; }", arg=key, timeout=30_000)
            before["refreshed"] = page.locator("#replication-live").get_attribute("data-refreshed") or ""
            return before
        finally:
            browser.close()


@pytest.fixture
async def cluster(tmp_path):
    brokers = await start_brokers(tmp_path, 3, {"console.port": 0})
    try:
        yield InProcessController(brokers)
    finally:
        for b in brokers.values():
            await b.stop()


async def test_replication_view_shows_the_hw_waiting_for_a_paused_follower(cluster):
    cluster.create_topic("watch", 1, [1, 2, 3])
    leader_url, follower_url = _console(cluster, 1), _console(cluster, 2)
    rm3 = cluster.brokers[3].broker.replica_manager
    assert rm3.fetcher_manager is not None
    leader = cluster.partition(1, "watch")
    # both followers have fetched once (their LEO is known: 0); then follower 3 stops fetching
    await wait_until(lambda: all(n in leader.remote_replicas and leader.remote_replicas[n].state.log_end_offset == 0
                                 for n in (2, 3)), "both followers fetched")
    await rm3.fetcher_manager.pause()
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "watch", [b"x"] * 10, acks=1) == [None] * 10
    await wait_until(lambda: leader.remote_replicas[2].state.log_end_offset == 10, "follower 2 fetched the records")

    view = await asyncio.to_thread(get_json, f"{leader_url}/api/replication")
    assert [b["node_id"] for b in view["brokers"]] == [1, 2, 3]
    assert [b["this_broker"] for b in view["brokers"]] == [True, False, False]
    row = _row(view, "watch")
    assert (row["role"], row["leader"], row["replicas"], row["isr"]) == ("leader", 1, [1, 2, 3], [1, 2, 3])
    # written 10, readable 0: follower 3 (in the ISR, paused) has none of them
    assert (row["log_end_offset"], row["high_watermark"]) == (10, 0)
    followers = {f["node_id"]: f for f in row["followers"]}
    assert (followers[2]["log_end_offset"], followers[2]["lag"], followers[2]["in_isr"]) == (10, 0, True)
    assert (followers[3]["log_end_offset"], followers[3]["lag"]) == (0, 10)

    follower = _row(await asyncio.to_thread(get_json, f"{follower_url}/api/replication"), "watch")
    assert (follower["role"], follower["leader"], follower["log_end_offset"], follower["followers"]) == (
        "follower", 1, 10, [])

    # one more record; the browser reads the row, then the follower resumes and the page (not
    # reloaded) sees the HW reach the LEO
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "watch", [b"y"], acks=1) == [None]
    await wait_until(lambda: leader.remote_replicas[2].state.log_end_offset == 11, "follower 2 fetched it")
    loop = asyncio.get_running_loop()

    fetchers = rm3.fetcher_manager

    def release() -> None:
        loop.call_soon_threadsafe(fetchers.resume)

    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (.ci/run installs Debian's package)")
    seen = await asyncio.to_thread(_watch_in_browser, leader_url, "watch-0", release)
    assert (seen["role"], seen["leader"], seen["isr"]) == ("leader", "1", "1,2,3")
    assert (seen["log_end_offset"], seen["high_watermark"]) == ("11", "0")
    assert "3: LEO 0 (lag 11)" in seen["followers"] and "2: LEO 11 (lag 0)" in seen["followers"]
    assert seen["refreshed"]  # the row came from a refresh, not the first load
    await wait_until(lambda: leader.high_watermark == 11, "the HW reaches the LEO")


async def test_a_single_broker_is_its_own_cluster(tmp_path):
    (broker,) = (await start_brokers(tmp_path, 1, {"console.port": 0})).values()
    try:
        broker.broker.topics.create("solo", 2)
        server = broker.server
        assert server is not None and server.console is not None
        view = await asyncio.to_thread(get_json, f"{server.console.url.rstrip('/')}/api/replication")
        assert [(b["node_id"], b["this_broker"], b["fenced"]) for b in view["brokers"]] == [(1, True, False)]
        rows = [p for p in view["partitions"] if p["topic"] == "solo"]
        assert [(p["partition"], p["role"], p["replicas"], p["isr"], p["followers"]) for p in rows] == [
            (0, "leader", [1], [1], []), (1, "leader", [1], [1], [])]
    finally:
        await broker.stop()
