"""KIP-1071 streams groups: the group, its members, its topology and task sets.

Theory of operation (Kafka: org.apache.kafka.coordinator.group.streams.StreamsGroup,
StreamsGroupMember, TasksTuple, topics.InternalTopicManager). A streams group is one Kafka
Streams application. Its members send the application's topology (subtopologies with their source,
repartition and changelog topics) when they join; the coordinator turns it into a *configured*
topology: the number of tasks of each subtopology (the most partitions among its source topics,
repartition topics taking the task count of the subtopology that writes them), and the internal
topics that must exist with that many partitions. A task is (subtopology id, partition); members
own active, standby and warm-up tasks.

Member epochs work as in KIP-848: the group epoch moves when membership or topology changes, the
assignment epoch follows when a target assignment is computed (streams_task_assignor.py), and a
member reaches the target in steps (streams_group_manager.py): first it revokes what it must give
up, then it gets what the others have released.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minibroker_protocol.apis import streams_group_heartbeat

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions (Kafka: a TaskIds list)
TopicConfigs = dict[str, str]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class StreamsGroupState(enum.Enum):
    """Kafka: StreamsGroup.StreamsGroupState, named as DescribeGroups/ListGroups print them."""
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    """Kafka: streams.MemberState."""
    STABLE = "STABLE"
    UNREVOKED_TASKS = "UNREVOKED_TASKS"
    UNRELEASED_TASKS = "UNRELEASED_TASKS"
    UNKNOWN = "UNKNOWN"


class StatusCode(enum.IntEnum):
    """StreamsGroupHeartbeatResponse Status codes."""
    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


@dataclass(slots=True)
class TopicInfo:
    name: str
    partitions: int  # 0: derived by the coordinator
    replication_factor: int
    configs: TopicConfigs


@dataclass(slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    repartition_sink_topics: list[str]
    state_changelog_topics: list[TopicInfo]
    repartition_source_topics: list[TopicInfo]
    copartition_groups: list[tuple[list[int], list[int]]]


@dataclass(slots=True)
class StreamsTopology:
    epoch: int
    subtopologies: list[Subtopology]

    @classmethod
    def from_request(cls, t: streams_group_heartbeat.StreamsGroupHeartbeatRequest.Topology) -> StreamsTopology:
        def info(i: streams_group_heartbeat.StreamsGroupHeartbeatRequest.TopicInfo) -> TopicInfo:
            return TopicInfo(i.name, i.partitions, i.replication_factor, {kv.key: kv.value for kv in i.topic_configs})
        return cls(t.epoch, [Subtopology(s.subtopology_id, list(s.source_topics), list(s.repartition_sink_topics),
                                         [info(i) for i in s.state_changelog_topics],
                                         [info(i) for i in s.repartition_source_topics],
                                         [(list(c.source_topics), list(c.repartition_source_topics))
                                          for c in s.copartition_groups])
                                for s in t.subtopologies])


@dataclass(slots=True)
class ConfiguredTopology:
    """What the coordinator made of a topology against the topics that exist now (Kafka:
    ConfiguredTopology from InternalTopicManager.configureTopics)."""
    task_counts: dict[str, int]  # subtopology id -> number of tasks; empty when not ready
    internal_topics: dict[str, TopicInfo]  # name -> info with the partition count to create
    missing_source_topics: list[str]
    missing_internal_topics: list[str]
    incorrectly_partitioned: list[str]

    @property
    def ready(self) -> bool:
        return not (self.missing_source_topics or self.missing_internal_topics or self.incorrectly_partitioned)


def configure_topology(topology: StreamsTopology, partitions_of: Mapping[str, int]) -> ConfiguredTopology:
    """Task counts and internal topics of `topology` given the partition counts of the topics
    that exist (`partitions_of`). Repartition topics without a fixed count take the task count of
    the subtopology that writes them, resolved until nothing changes (Kafka:
    RepartitionTopics.setup)."""
    missing_sources = sorted({t for s in topology.subtopologies for t in s.source_topics if t not in partitions_of})
    repartition: dict[str, int] = {}
    for s in topology.subtopologies:
        for r in s.repartition_source_topics:
            if r.partitions > 0:
                repartition[r.name] = r.partitions
    counts: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for s in topology.subtopologies:
            sizes = [partitions_of[t] for t in s.source_topics if t in partitions_of]
            sizes += [repartition[r.name] for r in s.repartition_source_topics if r.name in repartition]
            if not sizes or len(sizes) < len(s.source_topics) + len(s.repartition_source_topics):
                continue
            n = max(sizes)
            if counts.get(s.subtopology_id) != n:
                counts[s.subtopology_id] = n
                changed = True
            for sink in s.repartition_sink_topics:
                if sink not in repartition:
                    repartition[sink] = n
                    changed = True
    internal: dict[str, TopicInfo] = {}
    for s in topology.subtopologies:
        for r in s.repartition_source_topics:
            if r.name in repartition:
                internal[r.name] = TopicInfo(r.name, repartition[r.name], r.replication_factor, r.configs)
        for c in s.state_changelog_topics:
            if s.subtopology_id in counts:
                internal[c.name] = TopicInfo(c.name, counts[s.subtopology_id], c.replication_factor, c.configs)
    missing_internal = sorted(n for n in internal if n not in partitions_of)
    wrong = sorted(n for n, i in internal.items() if n in partitions_of and partitions_of[n] != i.partitions)
    ready = not missing_sources and len(counts) == len(topology.subtopologies) and not missing_internal and not wrong
    return ConfiguredTopology(counts if ready else {}, internal, missing_sources, missing_internal, wrong)


def tasks_of(ids: Iterable[streams_group_heartbeat.StreamsGroupHeartbeatRequest.TaskIds] | None) -> Tasks:
    return {t.subtopology_id: frozenset(t.partitions) for t in ids or () if t.partitions}


def task_set(tasks: Tasks) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def tasks_from_set(pairs: Iterable[tuple[str, int]]) -> Tasks:
    out: dict[str, set[int]] = {}
    for s, p in pairs:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in out.items()}


@dataclass(slots=True)
class TasksTuple:
    """Active, standby and warm-up tasks of one member (Kafka: TasksTuple)."""
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)


@dataclass(slots=True)
class StreamsGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    assigned: TasksTuple = field(default_factory=TasksTuple)
    # active tasks the member still owns and must give up (Kafka: activeTasksPendingRevocation)
    pending_revocation: Tasks = field(default_factory=dict)
    # what the last response carried, so an unchanged assignment is not sent again
    last_sent: TasksTuple | None = None
    # the member epoch at which each active task (owned or pending revocation) came to the member
    # (Kafka 4.4: TaskIds.AssignmentEpochs of StreamsGroupCurrentMemberAssignmentValue)
    task_epochs: dict[tuple[str, int], int] = field(default_factory=dict)

    def stamp_task_epochs(self) -> None:
        """Tasks new to the member take its current epoch; tasks it kept keep theirs."""
        owned = task_set(self.assigned.active) | task_set(self.pending_revocation)
        self.task_epochs = {t: self.task_epochs.get(t, self.member_epoch) for t in owned}


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: StreamsTopology | None = None
    configured: ConfiguredTopology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, TasksTuple] = field(default_factory=dict)  # member id -> target assignment
    # Kafka: StreamsGroup.endpointInformationEpoch, bumped when the endpoint-to-partition map changes
    endpoint_information_epoch: int = 0

    def state(self) -> StreamsGroupState:
        """Kafka: StreamsGroup.state(): derived, never stored."""
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.assignment_epoch < self.group_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def owner_of_active(self, task: tuple[str, int], but: str) -> str | None:
        """The member other than `but` that still owns `task` as active (or has it pending
        revocation): the task cannot be handed on yet."""
        s, p = task
        for mid, m in self.members.items():
            if mid != but and (p in m.assigned.active.get(s, ()) or p in m.pending_revocation.get(s, ())):
                return mid
        return None
