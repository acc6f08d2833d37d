"""The console's replication view (issue 29): this broker's partitions as leader or follower, with
every replica's log end offset beside the high watermark.

Seed 001's picture made live: the leader's LEO is what was written, the HW what consumers may read,
the minimum LEO over the ISR (Kafka: Partition.maybeIncrementLeaderHW). The leader knows each
follower's LEO from its last replica Fetch (Kafka: ReplicaState), so pausing a follower shows its
lag growing and — once `replica.lag.time.max.ms` passes and the controller takes it out of the
ISR — the HW moving again. A follower shows its own LEO and the HW the leader last sent it. The
page polls `/api/replication` once a second (minibroker/console/static/console.js); a cluster is
watched by opening one console per broker, as Kafka's per-broker JMX views are read.
"""

from __future__ import annotations

import time

from minibroker.console.pages import h, layout, q, table
from minibroker.console.shapes import FollowerRow, PartitionReplication, ReplicationBroker, ReplicationView
from minibroker.partition import Partition
from minibroker.services import BrokerServices


def _ago(now_ms: int, then_ms: int) -> int | None:
    return now_ms - then_ms if then_ms > 0 else None


def _followers(part: Partition, now_ms: int) -> list[FollowerRow]:
    leo = part.log_end_offset
    out: list[FollowerRow] = []
    for node, replica in sorted(part.remote_replicas.items()):
        st = replica.state
        known = st.log_end_offset >= 0
        out.append({"node_id": node, "log_end_offset": st.log_end_offset, "lag": leo - st.log_end_offset if known else None,
                    "in_isr": node in part.isr, "last_caught_up_ms_ago": _ago(now_ms, st.last_caught_up_time_ms),
                    "last_fetch_ms_ago": _ago(now_ms, st.last_fetch_time_ms)})
    return out


def _partition(part: Partition, now_ms: int) -> PartitionReplication:
    leader = part.is_leader
    return {"topic": part.topic, "partition": part.partition, "role": "leader" if leader else "follower",
            "leader": part.leader_id, "leader_epoch": part.leader_epoch, "partition_epoch": part.partition_epoch,
            "replicas": list(part.replicas), "isr": list(part.isr),
            "pending_isr": list(part.pending_isr) if part.pending_isr is not None else None,
            "under_min_isr": leader and len(part.isr) < part.min_insync_replicas,
            "min_insync_replicas": part.min_insync_replicas,
            "log_start_offset": part.log_start_offset, "log_end_offset": part.log_end_offset,
            "high_watermark": part.high_watermark, "followers": _followers(part, now_ms) if leader else []}


def replication(services: BrokerServices) -> ReplicationView:
    rm = services.replica_manager
    now_ms = time.time_ns() // 1_000_000
    host, port = services.endpoint(None)
    brokers: list[ReplicationBroker] = [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "broker_epoch": b.broker_epoch, "fenced": b.fenced,
         "in_controlled_shutdown": b.in_controlled_shutdown, "this_broker": b.node_id == rm.node_id}
        for b in sorted(rm.brokers.values(), key=lambda b: b.node_id)]
    if not brokers:  # one broker, no metadata log: it is the cluster
        brokers = [{"node_id": rm.node_id, "host": host, "port": port, "broker_epoch": rm.local_broker_epoch(),
                    "fenced": False, "in_controlled_shutdown": False, "this_broker": True}]
    parts = sorted(rm.all_partitions(), key=lambda p: (p.topic, p.partition))
    return {"node_id": rm.node_id, "now_ms": now_ms, "brokers": brokers,
            "partitions": [_partition(p, now_ms) for p in parts]}


def _ids(ids: list[int] | None) -> str:
    return "" if ids is None else ",".join(map(str, ids))


def _lag(f: FollowerRow) -> str:
    lag = "?" if f["lag"] is None else str(f["lag"])
    return f'{f["node_id"]}: LEO {f["log_end_offset"]} (lag {lag}){"" if f["in_isr"] else " out of ISR"}'


def replication_page(v: ReplicationView) -> str:
    brokers = table(["node", "endpoint", "epoch", "state"], (
        (str(b["node_id"]) + (" (this broker)" if b["this_broker"] else ""), h(f'{b["host"]}:{b["port"]}'),
         str(b["broker_epoch"]),
         "fenced" if b["fenced"] else "shutting down" if b["in_controlled_shutdown"] else "serving")
        for b in v["brokers"]), cls="brokers")
    rows = []
    for p in v["partitions"]:
        key = f'{p["topic"]}-{p["partition"]}'
        cells = [f'<a href="/topics/{q(p["topic"])}/{p["partition"]}">{h(key)}</a>', p["role"], str(p["leader"]),
                 str(p["leader_epoch"]), _ids(p["replicas"]), _ids(p["isr"]), _ids(p["pending_isr"]),
                 str(p["log_end_offset"]), str(p["high_watermark"]),
                 "<br>".join(h(_lag(f)) for f in p["followers"])]
        names = ["partition", "role", "leader", "leader_epoch", "replicas", "isr", "pending_isr",
                 "log_end_offset", "high_watermark", "followers"]
        rows.append((f'<span data-key="{h(key)}" data-field="{n}">{c}</span>' for n, c in zip(names, cells, strict=True)))
    parts = table(["partition", "role", "leader", "leader epoch", "replicas", "ISR", "pending ISR", "LEO", "HW",
                   "followers (the leader's view)"], rows, cls="replication")
    body = ('<p class="note">The log end offset (LEO) is what this replica has written; the high watermark (HW) '
            'what consumers may read: the lowest LEO in the in-sync replica set. Refreshed every second.</p>'
            f'<h2>Brokers</h2>{brokers}<h2>Partitions on broker {v["node_id"]}</h2>'
            f'<div id="replication-live">{parts}</div>')
    return layout("Replication", body)
