"""What the console tests share: a module broker with the console on, filled with real data by real
clients (confluent-kafka, kafka-python), and small HTTP helpers (urllib: no client library of ours)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from minibroker.testing import BrokerThread
from tests.integration.helpers import Deadline, create_topic, unique

CONSOLE_OVERRIDES = {"console.port": 0, "transaction.state.log.num.partitions": 2,
                     "offsets.topic.num.partitions": 2}

# a real browser: Debian's chromium driven by Playwright (never a downloaded browser)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def console_url(b: BrokerThread) -> str:
    server = b._inner.server
    assert server is not None and server.console is not None
    return server.console.url.rstrip("/")


def get(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET; error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def get_json(url: str) -> Any:
    status, ctype, body = get(url)
    assert status == 200, (url, status, body[:500])
    assert ctype.startswith("application/json")
    return json.loads(body)


@dataclass
class Data:
    """Names of what `fill` wrote."""

    plain: str = field(default_factory=lambda: unique("plain"))
    zipped: str = field(default_factory=lambda: unique("zipped"))
    txn: str = field(default_factory=lambda: unique("txn"))
    compacted: str = field(default_factory=lambda: unique("compacted"))
    magic1: str = field(default_factory=lambda: unique("magic1"))
    group: str = field(default_factory=lambda: unique("group"))
    plain_count: int = 60
    consumed: int = 25
    open_producer: Any = None
    consumer: Any = None


BAD_KEY = b"\xff\xfe\x00key"


def fill(b: BrokerThread) -> Data:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka import KafkaProducer

    d = Data()
    # small segments and a dense index, so a partition has several segments and .index entries
    create_topic(b, d.plain, 1, {"segment.bytes": "4096", "index.interval.bytes": "512"})
    create_topic(b, d.zipped, 1)
    create_topic(b, d.txn, 1)
    create_topic(b, d.compacted, 1, {"cleanup.policy": "compact"})
    create_topic(b, d.magic1, 1, {"message.format.version": "0.10.2"})
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "client.id": "console-filler"})
    for i in range(d.plain_count):
        key = BAD_KEY if i == 3 else f"k{i}".encode()
        p.produce(d.plain, key=key, value=json.dumps({"n": i, "pad": "x" * 40}).encode(),
                  headers=[("h", f"v{i}".encode())], partition=0)
        p.flush(10)  # one batch per record: many batches, several segments
    pz = Producer({"bootstrap.servers": b.bootstrap, "compression.type": "gzip", "linger.ms": 50})
    for i in range(10):
        pz.produce(d.zipped, key=b"z", value=f"zipped {i}".encode(), partition=0)
    pz.flush(10)
    # transactions: one committed, one aborted, one left open (LSO held back)
    for commit in (True, False, None):
        tp = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": unique("tid"), "linger.ms": 0})
        tp.init_transactions(10)
        tp.begin_transaction()
        for i in range(3):
            tp.produce(d.txn, value=f"{commit} {i}".encode(), partition=0)
        tp.flush(10)
        if commit is True:
            tp.commit_transaction(10)
        elif commit is False:
            tp.abort_transaction(10)
        else:
            d.open_producer = tp
    # kafka-python: idempotent by default (3.x), which magic 1 cannot carry; off for the old-format topic
    kp = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="console-kp", enable_idempotence=False)
    sent = []
    for i in range(10):
        sent.append(kp.send(d.compacted, key=f"k{i % 3}".encode(), value=f"v{i}".encode(), partition=0))
        sent.append(kp.send(d.magic1, key=b"m", value=f"old format {i}".encode(), partition=0))
    kp.flush(10)
    for f in sent:
        f.get(10)
    kp.close()
    # a group that read part of the plain topic and committed: lag = plain_count - consumed
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": d.group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "client.id": "console-consumer"})
    c.assign([TopicPartition(d.plain, 0, 0)])
    got = 0
    deadline = Deadline(20)
    while got < d.consumed:
        assert deadline, f"consumed {got} of {d.consumed}"
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.commit(offsets=[TopicPartition(d.plain, 0, d.consumed)], asynchronous=False)
    d.consumer = c
    return d
