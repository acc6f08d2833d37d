"""/metrics for the limits that keep the broker alive (issue 24): the request memory pool, refused
connections, client quota throttling, slow requests dropped and idle connections closed.

The console is handed a `Limits` view of the components that keep them (the server builds it: the
counters live on the Broker and the server, which handlers never need, so they are not in
BrokerServices). Kafka's names where Kafka has the same measure:

- kafka.network:type=SocketServer,name=MemoryPoolUsed / MemoryPoolAvailable (gauges);
- socket-server-metrics connection-count (kafka_server_socket_server_metrics_connection_count).

Kafka has no counter of refused connections by reason (it logs and, for max.connections, blocks
the acceptor), of throttled responses (its quota sensors export throttle *time* per user and
client id), of requests dropped for slowness or of connections closed for idleness (the
Selector's connection-close-total counts every close): those are ours, under `minibroker_`, as
docs/differences.md says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from minibroker.metrics import Family
from minibroker.network.connection_quotas import ConnectionQuotas
from minibroker.network.memory_pool import MemoryPool
from minibroker.quotas.manager import ClientQuotaManager


@dataclass(frozen=True, slots=True)
class Limits:
    memory_pool: MemoryPool
    connection_quotas: ConnectionQuotas
    client_quotas: ClientQuotaManager
    slow_requests_dropped: Callable[[], int]  # the server's counters, read at scrape time
    idle_closed: Callable[[], int]


def _limit_of(kind: str) -> str:
    """The config key or quota a refusal's reason names (minibroker.network.connection_quotas words them),
    so the label has a few fixed values rather than sentences with numbers in them."""
    if "address already has" in kind or "max.connections.per.ip" in kind:
        return "max.connections.per.ip"
    if "max.connections" in kind:
        return "max.connections"
    if "connection_creation_rate" in kind:
        return "connection_creation_rate"
    return "other"


def limit_families(limits: Limits) -> Iterator[Family]:
    pool = limits.memory_pool
    used = Family("kafka_network_socketserver_memorypoolused", "gauge",
                  "Bytes of the request memory pool in use (queued.max.request.bytes)")
    used.add(pool.in_use)
    yield used
    available = Family("kafka_network_socketserver_memorypoolavailable", "gauge",
                       "Bytes of the request memory pool free (-1: unbounded)")
    available.add(pool.available if pool.bounded else -1)
    yield available
    peak = Family("minibroker_memorypool_peak_bytes", "gauge", "Most bytes of the request memory pool ever in use")
    peak.add(pool.peak)
    yield peak
    waiting = Family("minibroker_memorypool_waiting", "gauge", "Connections paused, waiting for pool memory")
    waiting.add(pool.waiting)
    yield waiting
    refused_alloc = Family("minibroker_memorypool_refused_total", "counter",
                           "Allocations the pool refused (a connection paused for memory)")
    refused_alloc.add(pool.refused)
    yield refused_alloc
    cq = limits.connection_quotas
    conns = Family("kafka_server_socket_server_metrics_connection_count", "gauge", "Open client connections")
    conns.add(cq.total)
    yield conns
    refused = Family("minibroker_connections_refused_total", "counter",
                     "Connections refused, by the limit reached (max.connections, max.connections.per.ip, connection_creation_rate)")
    by_limit: dict[str, int] = {}
    for kind, n in cq.refused.items():
        by_limit[_limit_of(kind)] = by_limit.get(_limit_of(kind), 0) + n
    for limit, n in sorted(by_limit.items()):
        refused.add(n, limit=limit)
    yield refused
    throttled = Family("minibroker_quota_throttled_responses_total", "counter",
                       "Responses throttled (KIP-219), by the client quota exceeded")
    for quota, n in sorted(limits.client_quotas.throttled.items()):
        throttled.add(n, quota=quota)
    yield throttled
    slow = Family("minibroker_requests_slow_dropped_total", "counter",
                  "Connections closed with a request still arriving after socket.request.read.timeout.ms")
    slow.add(limits.slow_requests_dropped())
    yield slow
    idle = Family("minibroker_connections_idle_closed_total", "counter",
                  "Connections closed after connections.max.idle.ms without traffic")
    idle.add(limits.idle_closed())
    yield idle
