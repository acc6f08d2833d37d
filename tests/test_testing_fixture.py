"""minibroker.testing and the pytest plugin: in-process brokers, inspection helpers, namespaces,
and the documented example suite (examples/test_with_fixture) run as a project would run it."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from minibroker.testing import AsyncBroker, BrokerThread, Namespace
from minibroker_protocol.records import v2
from tests.helpers import TEST_OVERRIDES

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["pytester"]


@pytest.fixture
def bt(tmp_path):
    with BrokerThread(tmp_path / "d", overrides=dict(TEST_OVERRIDES)) as b:
        yield b


def test_broker_thread_starts_on_an_ephemeral_port_and_cleans_up():
    b = BrokerThread()
    b.start()
    host, port = b.bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    socket.create_connection((host, int(port)), timeout=2).close()
    data_dir = b.data_dir
    assert data_dir.exists()
    b.stop()
    assert not data_dir.exists()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=0.5).close()


async def test_async_broker_on_the_callers_loop():
    async with AsyncBroker(overrides=TEST_OVERRIDES) as b:
        data_dir = b.data_dir
        b.create_topic("t", 2)
        assert b.add_record("t", b"v0", partition=1) == 0
        assert b.add_record("t", "v1", key="k", partition=1) == 1
        assert b.end_offsets("t") == {0: 0, 1: 2}
        recs = b.records("t")
        assert [(r.partition, r.offset, r.key, r.value) for r in recs] == [(1, 0, None, b"v0"), (1, 1, b"k", b"v1")]
        assert (await b.wait_for_records("t", 2))[-1].value == b"v1"
        with pytest.raises(TimeoutError):
            await b.wait_for_records("t", 3, timeout=0.05)
        with pytest.raises(TypeError):
            with b.assert_produces("t"):
                pass
    assert not data_dir.exists()


def test_records_through_a_real_client_with_compression(bt):
    bt.create_topic("c", 1)
    p = KafkaProducer(bootstrap_servers=bt.bootstrap, compression_type="gzip", linger_ms=50,
                      enable_idempotence=False)
    for i in range(5):
        p.send("c", key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")])
    p.flush(10)
    p.close(5)
    recs = bt.records("c", 0)
    assert [(r.offset, r.key, r.value, r.headers) for r in recs] == [
        (i, b"k%d" % i, b"v%d" % i, (("h", b"x"),)) for i in range(5)]
    # the batch really was compressed: the helper decoded it, not a plain copy
    seg = next(bt.data_dir.glob("c-0/*.log")).read_bytes()
    assert b"v3" not in seg
    assert seg[22] & 0x07 == 1  # codec id 1 (gzip) in the low bits of the batch attributes


def test_records_skip_control_batches_and_stop_at_hw(bt):
    bt.create_topic("ctl", 1)

    def append(broker):
        lg = broker.get_log("ctl", 0)
        lg.append_as_leader(v2.build_batch([v2.Record(value=b"a")], base_timestamp=1))
        lg.append_as_leader(v2.build_control_batch(v2.ControlType.COMMIT, timestamp=2, producer_id=7,
                                                   producer_epoch=0, coordinator_epoch=0), origin="coordinator")
        lg.append_as_leader(v2.build_batch([v2.Record(value=b"b")], base_timestamp=3))
    bt.call(append)
    assert [(r.offset, r.value) for r in bt.records("ctl")] == [(0, b"a"), (2, b"b")]
    bt.call(lambda broker: setattr(broker.get_log("ctl", 0), "high_watermark", 1))
    assert [r.value for r in bt.records("ctl")] == [b"a"]


def test_assert_produces_yields_only_new_records_and_fails_when_nothing_comes(bt):
    bt.add_record("ap", b"old")  # auto-created
    with bt.assert_produces("ap", count=2) as got:
        threading.Timer(0.05, lambda: (bt.add_record("ap", b"n1"), bt.add_record("ap", b"n2"))).start()
    assert [(r.offset, r.value) for r in got] == [(1, b"n1"), (2, b"n2")]
    with pytest.raises(AssertionError, match="expected at least 1 new record"):
        with bt.assert_produces("ap", timeout=0.1):
            pass


async def test_async_twins_of_the_thread_helpers(bt):
    bt.create_topic("tw", 1)
    async with bt.assert_produces("tw") as got:
        asyncio.get_running_loop().call_later(0.02, bt.add_record, "tw", b"later")
    assert [r.value for r in got] == [b"later"]
    assert len(await bt.wait_for_records_async("tw", 1)) == 1
    with pytest.raises(TimeoutError):
        await bt.wait_for_committed_async("nobody", "tw", timeout=0.05)


def test_committed_reads_the_group_coordinator(bt):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    bt.create_topic("cm", 1)
    c = KafkaConsumer(bootstrap_servers=bt.bootstrap, group_id="g1", enable_auto_commit=False)
    try:
        c.commit({TopicPartition("cm", 0): OffsetAndMetadata(42, "", -1)})
    finally:
        c.close()
    assert bt.committed("g1", "cm", 0) == 42
    assert bt.wait_for_committed("g1", "cm", 0, offset=42, timeout=1) == 42
    assert bt.committed("g1", "cm", 1) is None
    assert bt.committed("other", "cm", 0) is None


def test_wait_for_returns_the_value_or_times_out(bt):
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="thing"):
        bt.wait_for(lambda: None, timeout=0.1, what="thing")
    assert time.monotonic() - t0 < 2
    assert bt.wait_for(lambda: 5) == 5


def test_namespaces_keep_tests_apart(bt):
    a, b = Namespace(bt, "test_x[param/1]"), Namespace(bt, "test_x[param/1]")
    assert a.prefix != b.prefix
    ta, tb = a.new_topic("orders", 2), b.new_topic("orders")
    assert ta != tb and ta.endswith(".orders") and "/" not in ta and "[" not in ta
    assert a.group("g") != b.group("g")
    a.add_record(ta, b"only-a")
    assert b.records(tb) == [] and [r.value for r in a.records(ta)] == [b"only-a"]
    assert a.end_offsets(ta) == {0: 1, 1: 0}  # delegated helper


def test_create_topic_applies_kafka_rules(bt):
    from minibroker_protocol.errors import ErrorCode, KafkaError

    bt.create_topic("dup")
    with pytest.raises(KafkaError) as e:
        bt.create_topic("dup")
    assert e.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert bt.create_topic("dup", exist_ok=True) == "dup"
    with pytest.raises(KafkaError):
        bt.create_topic("bad name")
    bt.create_topic("cfg", config={"retention.ms": 1000})
    assert bt.call(lambda broker: broker.topics["cfg"].config["retention.ms"]) == 1000


@pytest.fixture
def plugin_installed(tmp_path_factory, monkeypatch):
    """Make pytest find the plugin the way an installed minibroker offers it: through the
    pytest11 entry point declared in pyproject.toml, written into a dist-info on PYTHONPATH for
    the child pytest (the checkout's own install may predate the entry point)."""
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert eps == {"minibroker": "minibroker.pytest_plugin"}
    site = tmp_path_factory.mktemp("site")
    info = site / "minibroker_plugin_check-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: minibroker-plugin-check\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{ROOT}")


def test_the_documented_example_suite_passes(pytester, plugin_installed):
    example = ROOT / "examples" / "test_with_fixture"
    for f in example.iterdir():
        if f.is_file():
            pytester.path.joinpath(f.name).write_text(f.read_text())
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=6)


def test_plugin_fixtures_share_one_broker_and_isolate_on_request(pytester, plugin_installed):
    pytester.makeini("[pytest]\nminibroker_overrides =\n    num.partitions=2\n")
    pytester.makepyfile(test_share="""
        import pytest
        SEEN = []

        def test_a(kafka_broker, kafka_bootstrap):
            SEEN.append(kafka_broker.bootstrap)
            assert kafka_broker.bootstrap == kafka_bootstrap
            kafka_broker.add_record("auto", b"x")
            assert sorted(kafka_broker.end_offsets("auto")) == [0, 1]   # ini override applied

        def test_b(kafka_broker, kafka_topic):
            SEEN.append(kafka_broker.bootstrap)
            assert SEEN[0] == SEEN[1]
            assert kafka_topic.startswith("test_b-") and kafka_broker.records(kafka_topic) == []

        @pytest.mark.minibroker(overrides={"num.partitions": 3})
        def test_c(kafka_broker_isolated):
            assert kafka_broker_isolated.bootstrap != SEEN[0]
            assert kafka_broker_isolated.topics() == []
            kafka_broker_isolated.add_record("auto", b"y")
            assert sorted(kafka_broker_isolated.end_offsets("auto")) == [0, 1, 2]
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=3)


def test_plugin_import_does_not_start_or_import_the_broker():
    import subprocess
    import sys

    code = ("import sys, minibroker.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith(('minibroker.server', 'minibroker_storage', 'minibroker_protocol'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    # the one exception: minibroker's __init__ asks minibroker_protocol.compiled (os, sys and zlib)
    # whether its compiled twins are in use
    assert out.stdout.strip() == "['minibroker_protocol', 'minibroker_protocol.compiled']", out.stderr


def test_group_state_assignment_and_lag(bt):
    from confluent_kafka import Consumer

    topic = bt.create_topic("lagging", 2)
    for i in range(5):
        bt.add_record(topic, b"v%d" % i, partition=0)
    bt.add_record(topic, b"w", partition=1)
    assert bt.group("g-lag") is None
    c = Consumer({"bootstrap.servers": bt.bootstrap, "group.id": "g-lag", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        seen = []
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                seen.append((m.partition(), m.offset()))
                if (0, 1) in seen:
                    c.commit(m, asynchronous=False)  # partition 0 up to offset 2
                    break
        g = bt.wait_for(lambda: (x := bt.group("g-lag")) and x.state == "Stable" and x, timeout=10)
        assert g.generation >= 1 and g.protocol_type == "consumer" and g.leader in g.members
        assert g.assignments == {g.members[0]: {topic: [0, 1]}}
        assert bt.lag("g-lag", topic) == {0: 3, 1: 1}  # partition 1: nothing committed, lag from the start
    finally:
        c.close()
    assert bt.wait_for(lambda: bt.group("g-lag").state == "Empty", timeout=10)
