"""The broker's counters, and Prometheus' text exposition of them under Kafka's metric names.

Theory of operation: the hot paths (the dispatcher, the append path, the fetch handler) update
plain attributes of one `BrokerMetrics` — an int added to a dict entry or a list slot, no lock
(everything runs on the broker's one event loop), no object allocated per request. Kafka keeps
Yammer meters and histograms (BrokerTopicStats, RequestMetrics) and exports them over JMX; most
Kafka dashboards read them through Prometheus' JMX exporter, whose rules turn
`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t` into
`kafka_server_brokertopicmetrics_bytesin_total{topic="t"}`. We write those exporter names
directly, so a Grafana dashboard built for Kafka finds the same series here.

Counters are totals since start (Prometheus computes rates); request time is a histogram in
milliseconds (Kafka's TotalTimeMs is a Yammer histogram reported as percentiles; see
docs/differences.md). Gauges read live state (sizes, offsets, lag) and are collected when
/metrics is scraped, by minibroker.console.exposition: this module knows no broker component.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MAX_API_KEY = 128  # Kafka's api keys are below 100; a list slot per key keeps the dispatcher's update an index
MAX_VERSION = 32
# Upper bounds (ms) of the request-time histogram buckets: 0.05 ms .. 30 s.
TIME_BUCKETS_MS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0,
                                      500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0)


class BrokerMetrics:
    """Totals since the broker started. The hot paths call `appended`, `fetched` and `request`."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out", "produce_requests", "fetch_requests",
                 "requests", "time_buckets", "time_sum_ms")

    def __init__(self) -> None:
        # per topic (Kafka's BrokerTopicMetrics with a topic tag; the all-topics series is their sum)
        self.bytes_in: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        # per api key and version (RequestMetrics RequestsPerSec{request, version})
        self.requests: list[list[int]] = [[0] * MAX_VERSION for _ in range(MAX_API_KEY)]
        # per api key: histogram counts (one slot past the last bound: +Inf) and the sum in ms
        self.time_buckets: list[list[int]] = [[0] * (len(TIME_BUCKETS_MS) + 1) for _ in range(MAX_API_KEY)]
        self.time_sum_ms: list[float] = [0.0] * MAX_API_KEY

    def appended(self, topic: str, nbytes: int, messages: int) -> None:
        """Records appended to a partition of `topic` (Kafka counts in ReplicaManager.appendToLocalLog)."""
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + nbytes
        self.messages_in[topic] = self.messages_in.get(topic, 0) + messages

    def fetched(self, topic: str, nbytes: int) -> None:
        """Record bytes a Fetch response carries for `topic` (Kafka: BytesOutPerSec)."""
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + nbytes

    def request_answered(self, api_key: int, version: int, started: float) -> None:
        """A request taken off the queue at time.perf_counter() `started` was answered."""
        self.request(api_key, version, time.perf_counter() - started)

    def request(self, api_key: int, version: int, elapsed_s: float) -> None:
        """A request was answered `elapsed_s` after its frame was taken off the queue."""
        if api_key < MAX_API_KEY:
            if version < MAX_VERSION:
                self.requests[api_key][version] += 1
            ms = elapsed_s * 1000.0
            self.time_buckets[api_key][bisect.bisect_left(TIME_BUCKETS_MS, ms)] += 1
            self.time_sum_ms[api_key] += ms


# -- exposition ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Family:
    """One metric family of the text format: its samples are (suffix, labels, value)."""

    name: str
    kind: str  # counter, gauge, histogram
    help: str
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, suffix: str = "", **labels: str) -> None:
        self.samples.append((suffix, labels, value))


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    return repr(float(v))


def render(families: Iterable[Family]) -> str:
    """Prometheus text exposition format 0.0.4."""
    lines: list[str] = []
    for f in families:
        lines.append(f"# HELP {f.name} {f.help}")
        lines.append(f"# TYPE {f.name} {f.kind}")
        for suffix, labels, value in f.samples:
            label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            lines.append(f"{f.name}{suffix}{{{label_text}}} {_number(value)}" if label_text
                         else f"{f.name}{suffix} {_number(value)}")
    return "\n".join(lines) + "\n"


def counter_families(m: BrokerMetrics, api_names: dict[int, str]) -> Iterator[Family]:
    """The counters' families (the gauges come from the broker's live state, elsewhere)."""
    for attr, name, help_text in (
            ("bytes_in", "kafka_server_brokertopicmetrics_bytesin_total", "Record bytes appended (BytesInPerSec)"),
            ("messages_in", "kafka_server_brokertopicmetrics_messagesin_total",
             "Records appended (MessagesInPerSec)"),
            ("bytes_out", "kafka_server_brokertopicmetrics_bytesout_total",
             "Record bytes sent to fetchers (BytesOutPerSec)")):
        per_topic: dict[str, int] = getattr(m, attr)
        f = Family(name, "counter", help_text)
        f.add(sum(per_topic.values()))  # the all-topics series has no topic label, as in Kafka
        for topic, v in sorted(per_topic.items()):
            f.add(v, topic=topic)
        yield f
    reqs = Family("kafka_network_requestmetrics_requests_total", "counter",
                  "Requests answered, by API and version (RequestsPerSec)")
    times = Family("kafka_network_requestmetrics_totaltimems", "histogram",
                   "Time from reading a request to its response being ready, ms (TotalTimeMs)")
    for key, name in sorted(api_names.items(), key=lambda kv: kv[1]):
        if key >= MAX_API_KEY:
            continue
        for version, n in enumerate(m.requests[key]):
            if n:
                reqs.add(n, request=name, version=str(version))
        buckets = m.time_buckets[key]
        total = sum(buckets)
        if not total:
            continue
        running = 0
        for bound, n in zip(TIME_BUCKETS_MS, buckets, strict=False):
            running += n
            times.add(running, "_bucket", request=name, le=repr(bound))
        times.add(total, "_bucket", request=name, le="+Inf")
        times.add(m.time_sum_ms[key], "_sum", request=name)
        times.add(total, "_count", request=name)
    yield reqs
    yield times
