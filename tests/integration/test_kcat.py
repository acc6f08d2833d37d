"""kcat (/usr/bin/kcat) as a new user runs it: -L, -P, -C -e, -Q, against the broker."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from confluent_kafka import Producer

from tests.integration.helpers import (
    CODEC_IDS,
    TIMEOUT,
    create_topic,
    module_broker,
    stored_batches,
    stored_records,
    unique,
)

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def kcat(b, *args: str, stdin: bytes | None = None) -> str:
    r = subprocess.run([KCAT, "-b", b.bootstrap, *args], input=stdin, capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"kcat {' '.join(args)} exited {r.returncode}: {r.stderr.decode(errors='replace')}"
    return r.stdout.decode()


def consume_json(b, topic: str, *args: str) -> list[dict]:
    out = kcat(b, "-C", "-t", topic, "-e", "-J", *args)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_produce_to_a_new_topic_then_list_it(kafka_broker_module):
    topic = unique("kcat-new")
    # A new topic is auto-created (auto.create.topics.enable, num.partitions=1).
    kcat(kafka_broker_module, "-P", "-t", topic, "-K:", stdin=b"k1:hello\nk2:world\n")
    text = kcat(kafka_broker_module, "-L")
    host, port = kafka_broker_module.bootstrap.rsplit(":", 1)
    assert " 1 brokers:" in text
    assert f"broker 1 at {host}:{port} (controller)" in text
    assert f'topic "{topic}" with 1 partitions:' in text
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in text

    meta = json.loads(kcat(kafka_broker_module, "-L", "-J"))
    assert meta["controllerid"] == 1
    assert meta["brokers"] == [{"id": 1, "name": kafka_broker_module.bootstrap}]
    [t] = [t for t in meta["topics"] if t["topic"] == topic]
    assert t["partitions"] == [{"partition": 0, "leader": 1, "replicas": [{"id": 1}], "isrs": [{"id": 1}]}]
    assert [(r.key, r.value) for r in stored_records(kafka_broker_module, topic)] == [(b"k1", b"hello"), (b"k2", b"world")]


def test_list_one_topic_with_partitions(kafka_broker_module):
    topic = unique("kcat-l")
    create_topic(kafka_broker_module, topic, 4)
    meta = json.loads(kcat(kafka_broker_module, "-L", "-J", "-t", topic))
    [t] = meta["topics"]
    assert (t["topic"], [p["partition"] for p in t["partitions"]]) == (topic, [0, 1, 2, 3])
    assert all(p["leader"] == 1 for p in t["partitions"])


def test_produce_and_consume_to_the_end(kafka_broker_module):
    topic = unique("kcat-pc")
    create_topic(kafka_broker_module, topic, 1)
    kcat(kafka_broker_module, "-P", "-t", topic, "-K:", "-H", "app=kcat", "-H", "n=2", stdin=b"a:1\nb:2\nc:3\n")
    msgs = consume_json(kafka_broker_module, topic)
    assert [(m["offset"], m["key"], m["payload"], m["headers"], m["tstype"]) for m in msgs] == [
        (0, "a", "1", ["app", "kcat", "n", "2"], "create"),
        (1, "b", "2", ["app", "kcat", "n", "2"], "create"),
        (2, "c", "3", ["app", "kcat", "n", "2"], "create"),
    ]
    stored = stored_records(kafka_broker_module, topic)
    assert [m["ts"] for m in msgs] == [r.timestamp for r in stored]
    assert [r.headers for r in stored] == [[("app", b"kcat"), ("n", b"2")]] * 3
    # The format string path, and -o / -c: two records from offset 1.
    out = kcat(kafka_broker_module, "-C", "-t", topic, "-o", "1", "-c", "2", "-e", "-f", "%o %k=%s\\n")
    assert out.splitlines() == ["1 b=2", "2 c=3"]


def test_null_values_and_keys(kafka_broker_module):
    topic = unique("kcat-null")
    create_topic(kafka_broker_module, topic, 1)
    # -Z: an empty key or value is sent as NULL (a tombstone for an empty value).
    kcat(kafka_broker_module, "-P", "-t", topic, "-K:", "-Z", stdin=b"gone:\n:no-key\nk:v\n")
    assert [(r.key, r.value) for r in stored_records(kafka_broker_module, topic)] == [(b"gone", None), (None, b"no-key"), (b"k", b"v")]
    msgs = consume_json(kafka_broker_module, topic, "-Z")
    assert [(m["key"], m["payload"]) for m in msgs] == [("gone", None), (None, "no-key"), ("k", "v")]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_produce(kafka_broker_module, codec):
    topic = unique(f"kcat-{codec}")
    create_topic(kafka_broker_module, topic, 1)
    lines = [b"line %d %s" % (i, b"z" * 200) for i in range(50)]
    kcat(kafka_broker_module, "-P", "-t", topic, "-z", codec, stdin=b"\n".join(lines) + b"\n")
    assert {bt.compression for bt in stored_batches(kafka_broker_module, topic)} == {CODEC_IDS[codec]}
    assert [m["payload"].encode() for m in consume_json(kafka_broker_module, topic)] == lines


def test_explicit_partition(kafka_broker_module):
    topic = unique("kcat-part")
    create_topic(kafka_broker_module, topic, 4)
    kcat(kafka_broker_module, "-P", "-t", topic, "-p", "3", stdin=b"x\ny\n")
    assert [m["payload"] for m in consume_json(kafka_broker_module, topic, "-p", "3")] == ["x", "y"]
    assert consume_json(kafka_broker_module, topic, "-p", "0") == []
    assert [r.value for r in stored_records(kafka_broker_module, topic, 3)] == [b"x", b"y"]


def test_query_offsets_by_time(kafka_broker_module):
    topic = unique("kcat-q")
    create_topic(kafka_broker_module, topic, 1)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap})
    for ts in (1000, 2000, 3000):
        p.produce(topic, value=b"t%d" % ts, timestamp=ts, partition=0)
    assert p.flush(TIMEOUT) == 0
    for ts, want in [(1000, 0), (1500, 1), (2000, 1), (3000, 2), (-1, 3), (-2, 0)]:
        out = kcat(kafka_broker_module, "-Q", "-t", f"{topic}:0:{ts}")
        assert out.split() == [topic, "[0]", "offset", str(want)], (ts, out)
    # After the last timestamp there is no offset: Kafka answers -1, kcat prints it.
    assert kcat(kafka_broker_module, "-Q", "-t", f"{topic}:0:3001").split()[-1] == "-1"
