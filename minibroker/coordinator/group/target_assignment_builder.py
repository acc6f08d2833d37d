"""The subscribed topics of a consumer group and its target assignment (Kafka:
TargetAssignmentBuilder, with the subscription metadata of ConsumerGroup.computeSubscriptionMetadata).

Theory of operation: a group's members subscribe by topic name or regular expression; regexes
are resolved against the topics now (and filtered by what the principal of the last heartbeat
may DESCRIBE, with an authorizer), and the result is kept in the group and written as a
ConsumerGroupRegularExpression record when it changes. The partition counts of every subscribed
topic hash into the group's metadata hash: a topic created, deleted or grown changes it, which
bumps the group epoch on the next heartbeat. When the group epoch is ahead of the assignment
epoch the assignor (the one most members ask for with `group.remote.assignor`, else the first of
`group.consumer.assignors`) computes a new target, and the records of what changed are added.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.group import consumer_group_records as rec
from minibroker.coordinator.group.assignors import ASSIGNORS, MemberSpec
from minibroker.coordinator.group.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    copy_assignment,
    count,
    same_assignment,
)
from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_storage.clock import Clock


class TargetAssignmentBuilder:
    """Resolves consumer groups' subscriptions against the topics and computes their targets."""

    def __init__(self, assignors: tuple[str, ...], topics: TopicsMetadata | None, events: GroupEvents, *,
                 now_ms: Clock) -> None:
        self.assignors = assignors  # group.consumer.assignors: the first is the default
        self._topics = topics  # None: a coordinator without topics (unit tests of classic groups)
        self.events = events
        self.now_ms = now_ms
        # with an authorizer, the DESCRIBE check of the principal whose heartbeat last refreshed the
        # group's regexes: resolved topics it may not DESCRIBE are left out (Kafka: GroupMetadataManager)
        self.regex_topic_filters: dict[str, Callable[[str], bool]] = {}

    # -- topics ----------------------------------------------------------------------------------
    @property
    def topics(self) -> TopicsMetadata:
        if self._topics is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "consumer groups need the topic registry")
        return self._topics

    def resolve_regex(self, regex: str) -> set[str]:
        pattern = re.compile(regex)
        return {t.name for t in self.topics.values() if not t.is_internal and pattern.fullmatch(t.name)}

    def subscribed_names(self, g: ConsumerGroup, m: ConsumerGroupMember) -> set[str]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            names |= g.regex_topics.get(m.subscribed_topic_regex, set())
        return names

    def refresh_regexes(self, g: ConsumerGroup, records: list[CoordinatorRecord]) -> None:
        wanted = {m.subscribed_topic_regex for m in g.members.values() if m.subscribed_topic_regex}
        for regex in list(g.regex_topics):
            if regex not in wanted:
                del g.regex_topics[regex]
                records.append(rec.tombstone(rec.REGULAR_EXPRESSION, g.group_id, regex))
        for regex in wanted:
            try:
                topics = self.resolve_regex(regex)
            except re.error:
                continue
            if (may_describe := self.regex_topic_filters.get(g.group_id)) is not None:
                topics = {t for t in topics if may_describe(t)}
            if g.regex_topics.get(regex) != topics:
                g.regex_topics[regex] = topics
                records.append(rec.regular_expression(g.group_id, regex, sorted(topics), 0, self.now_ms()))

    def metadata(self, g: ConsumerGroup) -> tuple[dict[uuid.UUID, int], int]:
        """The partition counts of every topic the group subscribes to, and their hash."""
        names: set[str] = set()
        for m in g.members.values():
            names |= self.subscribed_names(g, m)
        counts: dict[uuid.UUID, int] = {}
        h = hashlib.sha256()
        for name in sorted(names):
            topic = self.topics.get(name)
            if topic is None:
                continue
            counts[topic.topic_id] = len(topic.partitions)
            h.update(f"{name}\0{topic.topic_id}\0{len(topic.partitions)}\n".encode())
        digest = int.from_bytes(h.digest()[:8], "big", signed=True) if counts else 0
        return counts, digest

    def topic_ids(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        out = set()
        for n in names:
            t = self.topics.get(n)
            if t is not None:
                out.add(t.topic_id)
        return frozenset(out)

    # -- assignment --------------------------------------------------------------------------------
    def preferred_assignor(self, g: ConsumerGroup) -> str:
        votes: dict[str, int] = {}
        for m in g.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if votes:
            return max(sorted(votes), key=lambda n: votes[n])
        return self.assignors[0]

    def compute_target(self, g: ConsumerGroup, partitions: dict[uuid.UUID, int],
                        records: list[CoordinatorRecord]) -> None:
        g.assignor_name = self.preferred_assignor(g)
        # members with the same subscription share its resolved ids (most groups have one): each
        # join costs a pass over the members, not a resolution of every member's names (issue 30)
        resolved: dict[tuple[tuple[str, ...], str | None], frozenset[uuid.UUID]] = {}
        specs = {}
        for mid, m in g.members.items():
            key = (tuple(m.subscribed_topic_names), m.subscribed_topic_regex)
            ids = resolved.get(key)
            if ids is None:
                ids = resolved[key] = self.topic_ids(self.subscribed_names(g, m))
            specs[mid] = MemberSpec(ids, g.target.get(mid, {}))
        new = ASSIGNORS[g.assignor_name].assign(specs, partitions)
        for mid, a in new.items():
            if mid not in g.target or not same_assignment(g.target[mid], a):
                records.append(rec.target_assignment_member(g.group_id, mid, a))
                g.target[mid] = copy_assignment(a)
        g.assignment_epoch = g.group_epoch
        records.append(rec.target_assignment_metadata(g.group_id, g.assignment_epoch, self.now_ms()))
        if self.events.enabled:
            self.events.record(g.group_id, "TargetAssignment", g.group_epoch, "assignor %s: %s", g.assignor_name,
                               ", ".join(f"{mid[:8]}… {count(a)}" for mid, a in sorted(g.target.items())) or "-")
