"""What happened to each group, for the console's rebalance timeline (issue 21).

Theory of operation: the group coordinators call `GroupEvents.record` where a group changes in a
way a reader of a rebalance wants to see (Kafka logs the same moments at INFO in
GroupMetadataManager: "Preparing to rebalance group ...", "Stabilized group ...", a member
fenced, a new group epoch, a new target assignment). Each group keeps its last `per_group`
events in a ring buffer; at most `max_groups` groups are kept (the least recently changed go
first), so the memory is bounded whatever clients do.

Off until a reader enables it (the console does when it starts): `record` then returns at its
first line, and its detail is a format string with arguments, formatted only when kept, so the
coordinators pay a call and an attribute test per event, nothing per heartbeat that changes
nothing.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from minibroker_storage.clock import Clock, wall_clock_ms

PER_GROUP = 100
MAX_GROUPS = 1000


@dataclass(frozen=True, slots=True)
class GroupEvent:
    at_ms: int
    event: str  # a short name: PreparingRebalance, Stable, GroupEpoch, TargetAssignment, ...
    detail: str
    generation: int  # the generation (classic) or group epoch (consumer) after the event


class GroupEvents:
    def __init__(self, now_ms: Clock = wall_clock_ms, *, per_group: int = PER_GROUP,
                 max_groups: int = MAX_GROUPS) -> None:
        self.enabled = False
        self.now_ms = now_ms
        self.per_group = per_group
        self.max_groups = max_groups
        self._groups: OrderedDict[str, deque[GroupEvent]] = OrderedDict()

    def record(self, group_id: str, event: str, generation: int, detail: str = "", *args: object) -> None:
        if not self.enabled:
            return
        ring = self._groups.get(group_id)
        if ring is None:
            ring = self._groups[group_id] = deque(maxlen=self.per_group)
            if len(self._groups) > self.max_groups:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(group_id)
        ring.append(GroupEvent(self.now_ms(), event, detail % args if args else detail, generation))

    def of(self, group_id: str) -> list[GroupEvent]:
        """Oldest first."""
        ring = self._groups.get(group_id)
        return list(ring) if ring is not None else []

    def clear(self) -> None:
        self._groups.clear()
