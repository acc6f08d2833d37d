"""/metrics: the broker's counters (minibroker.metrics) and gauges read from live state, in
Prometheus' text format under the names Prometheus' JMX exporter gives Kafka's MBeans.

Gauges are computed at scrape time from the components, so nothing on the hot path keeps them:
partition count (ReplicaManager PartitionCount), per-partition log size, start and end offsets and
segment count (kafka.log:type=Log), purgatory sizes (DelayedOperationPurgatory PurgatorySize; the
produce purgatory is always empty on one node: acks=all waits for no follower), group counts as
Kafka 4.4's GroupCoordinatorMetrics has them, and consumer group lag under kafka_exporter's names (Kafka's broker exports no lag; kafka_exporter and Burrow do,
and dashboards use theirs).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from minibroker.console.limits import Limits, limit_families
from minibroker.coordinator.group.classic_group import GroupState
from minibroker.coordinator.group.consumer_group import ConsumerGroupState
from minibroker.handlers.registry import Handler
from minibroker.metrics import Family, counter_families, render
from minibroker.services import BrokerServices


def metrics_text(services: BrokerServices, handlers: Mapping[int, Handler], limits: Limits | None = None) -> str:
    names = {k: h.api.name for k, h in handlers.items()}
    return render([*counter_families(services.metrics, names), *gauge_families(services),
                   *(limit_families(limits) if limits is not None else ())])


def gauge_families(services: BrokerServices) -> Iterator[Family]:
    parts = services.replica_manager.all_partitions()
    pc = Family("kafka_server_replicamanager_partitioncount", "gauge", "Partitions on this broker")
    pc.add(len(parts))
    lc = Family("kafka_server_replicamanager_leadercount", "gauge", "Partitions this broker leads")
    lc.add(sum(1 for p in parts if p.leader_id == services.node_id))
    yield pc
    yield lc
    size = Family("kafka_log_log_size", "gauge", "Bytes of a partition's log")
    start = Family("kafka_log_log_logstartoffset", "gauge", "A partition's log start offset")
    end = Family("kafka_log_log_logendoffset", "gauge", "A partition's log end offset")
    segs = Family("kafka_log_log_numlogsegments", "gauge", "Segments of a partition's log")
    for lg in parts:
        labels = {"topic": lg.topic, "partition": str(lg.partition)}
        size.add(lg.size_in_bytes(), **labels)
        start.add(lg.log_start_offset, **labels)
        end.add(lg.log_end_offset, **labels)
        segs.add(lg.num_segments, **labels)
    yield from (size, start, end, segs)
    purg = Family("kafka_server_delayedoperationpurgatory_purgatorysize", "gauge",
                  "Requests waiting in a purgatory")
    purg.add(len(services.replica_manager.fetch_waiters), delayedOperation="Fetch")
    purg.add(0, delayedOperation="Produce")
    yield purg
    yield from group_count_families(services)
    lag = Family("kafka_consumergroup_lag", "gauge", "High watermark minus committed offset (kafka_exporter)")
    current = Family("kafka_consumergroup_current_offset", "gauge", "Committed offset (kafka_exporter)")
    for gid, offsets in sorted(services.group_coordinator.offsets.items()):
        for (topic, p), om in sorted(offsets.items()):
            part_log = services.replica_manager.get_partition(topic, p)
            labels = {"consumergroup": gid, "topic": topic, "partition": str(p)}
            current.add(om.offset, **labels)
            if part_log is not None and om.offset >= 0:
                lag.add(max(0, part_log.high_watermark - om.offset), **labels)
    yield lag
    yield current
    up = Family("kafka_server_kafkaserver_uptime_ms", "gauge", "Milliseconds since the broker started")
    up.add(services.clock() - services.started_ms)
    yield up


# The states each group type is counted in (Kafka 4.4 GroupCoordinatorMetrics: ClassicGroupState,
# ConsumerGroupState and ShareGroupState; every state gets a sample, zero included, as Kafka
# registers one metric per state).
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")


def group_count_families(services: BrokerServices) -> Iterator[Family]:
    """Group counts under Kafka 4.4's names, as Prometheus' JMX exporter renders them.

    Kafka's group coordinator registers Kafka metrics in the `group-coordinator-metrics` group,
    which the broker's JmxReporter exposes as `kafka.server:type=group-coordinator-metrics,<tags>`:
    `group-count` tagged protocol=classic|consumer|share|streams (every group, by type) and
    `classic-group-count`, `consumer-group-count`, `share-group-count` tagged state=<the state's
    name>; the exporter makes them `kafka_server_group_coordinator_metrics_<attribute>{<tags>}`.
    It also keeps the older Yammer gauges `kafka.coordinator.group:type=GroupMetadataManager,
    name=NumGroups` and `NumGroups<State>`, which count classic groups only. A group known only by
    its committed offsets is a classic group in state Empty (Kafka loads it as one)."""
    gc = services.group_coordinator
    consumer = gc.consumer_groups.groups
    share = services.share_groups.groups
    classic: dict[str, int] = dict.fromkeys((s.value for s in GroupState), 0)
    for gid in (set(gc.groups) | set(gc.offsets)) - set(consumer) - set(share):
        g = gc.groups.get(gid)
        classic[g.state.value if g is not None else GroupState.EMPTY.value] += 1
    consumer_states: dict[str, int] = dict.fromkeys((s.value for s in ConsumerGroupState), 0)
    for cg in consumer.values():
        consumer_states[cg.state.value] += 1
    share_states: dict[str, int] = dict.fromkeys(SHARE_GROUP_STATES, 0)
    for sg in share.values():
        share_states[sg.state] += 1
    prefix = "kafka_server_group_coordinator_metrics_"
    total = Family(prefix + "group_count", "gauge", "Groups by rebalance protocol (group-count)")
    for protocol, n in (("classic", sum(classic.values())), ("consumer", len(consumer)), ("share", len(share)),
                        ("streams", 0)):
        total.add(n, protocol=protocol)
    yield total
    for name, states in (("classic", classic), ("consumer", consumer_states), ("share", share_states)):
        f = Family(f"{prefix}{name}_group_count", "gauge", f"{name.capitalize()} groups by state ({name}-group-count)")
        for state, n in states.items():
            f.add(n, state=state)
        yield f
    yammer = "kafka_coordinator_group_groupmetadatamanager_"
    numgroups = Family(yammer + "numgroups", "gauge", "Classic groups (GroupMetadataManager NumGroups)")
    numgroups.add(sum(classic.values()))
    yield numgroups
    for state, n in classic.items():
        f = Family(f"{yammer}numgroups{state.lower()}", "gauge", f"Classic groups in state {state}")
        f.add(n)
        yield f
