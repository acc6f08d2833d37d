"""The sticky task assignor of streams groups (Kafka: streams.assignor.StickyTaskAssignor).

Active tasks first: each stays with the member that had it (its active owner, else a member that
kept it as standby, whose state is warm) as long as that member is under its fair share
(ceil(tasks / members)); the rest go one by one to the least-loaded member. Then
`num_standby_replicas` standby copies of every stateful task, each on a member of another process
than the task's active owner and the other copies, preferring the member that had it, then the
least-loaded one; a copy no process can take is left out, as Kafka does (it logs it).
Warm-up tasks are not assigned, as in Kafka 4.4: its assignor API's MemberAssignment has active and
standby tasks only, and GroupMetadataManager.refineAssignment, the one place that would turn a
move into a warm-up (streams.num.warmup.replicas > 0), calls AssignmentRefiner.refine, which
returns the target assignment unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.coordinator.group.streams_group import TasksTuple, task_set, tasks_from_set


@dataclass(slots=True)
class AssignorMember:
    process_id: str
    previous: TasksTuple


def assign(members: Mapping[str, AssignorMember], task_counts: Mapping[str, int], stateful: set[str],
           num_standby_replicas: int) -> dict[str, TasksTuple]:
    """Target assignment of every member, by member id."""
    if not members:
        return {}
    order = sorted(members)
    tasks = [(s, p) for s in sorted(task_counts) for p in range(task_counts[s])]
    share = -(-len(tasks) // len(order))
    active: dict[str, set[tuple[str, int]]] = {m: set() for m in order}
    owner: dict[tuple[str, int], str] = {}
    prev_active = {t: m for m in order for t in task_set(members[m].previous.active)}
    prev_standby: dict[tuple[str, int], list[str]] = {}
    for m in order:
        for t in task_set(members[m].previous.standby):
            prev_standby.setdefault(t, []).append(m)
    unassigned = []
    for t in tasks:
        previous = prev_active.get(t)
        for m in [*([previous] if previous is not None else []), *prev_standby.get(t, [])]:
            if len(active[m]) < share:
                active[m].add(t)
                owner[t] = m
                break
        else:
            unassigned.append(t)
    for t in unassigned:
        m = min(order, key=lambda x: (len(active[x]), order.index(x)))
        active[m].add(t)
        owner[t] = m

    standby: dict[str, set[tuple[str, int]]] = {m: set() for m in order}
    for t in tasks:
        if t[0] not in stateful:
            continue
        used_processes = {members[owner[t]].process_id}
        for _ in range(num_standby_replicas):
            candidates = [m for m in order if members[m].process_id not in used_processes]
            if not candidates:
                break
            m = min(candidates, key=lambda x: (t not in task_set(members[x].previous.standby)
                                               and prev_active.get(t) != x,
                                               len(active[x]) + len(standby[x]), order.index(x)))
            standby[m].add(t)
            used_processes.add(members[m].process_id)
    return {m: TasksTuple(tasks_from_set(active[m]), tasks_from_set(standby[m]), {}) for m in order}
