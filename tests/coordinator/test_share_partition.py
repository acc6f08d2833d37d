"""SharePartition (KIP-932) against a model, and ShareCoordinatorShard's snapshot + update replay.

The state machine drives one share partition over a fixed log (some batches are control or
aborted batches, never delivered) with three members, a ManualClock and a delivery-count limit of
3, and checks after every step: each offset seen is in exactly one state, the same as the
model's; offsets below the start offset are done; an acknowledged or archived offset is never
acquired again; delivery counts never go down nor past the limit; start and end offsets only move
forward; what the partition would persist restores to the same states (acquired ones as
available).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from minibroker.coordinator.runtime.coordinator_runtime import CoordinatorRuntime
from minibroker.coordinator.share import share_coordinator_shard
from minibroker.coordinator.share.share_coordinator_shard import TOPIC, ShareCoordinatorShard, topic_configs
from minibroker.coordinator.share.share_partition import AckType, BatchInfo, RecordState, SharePartition
from minibroker_protocol.errors import ErrorCode
from minibroker_storage.clock import ManualClock
from tests.coordinator.stack import Stack

LIMIT = 3
LOCK_MS = 100
MEMBERS = ("a", "b", "c")
# (base, last, skip): 40 offsets, two of the batches never delivered (a control batch, an aborted one)
LOG = [BatchInfo(0, 4), BatchInfo(5, 5, skip=True), BatchInfo(6, 12), BatchInfo(13, 13), BatchInfo(14, 20, skip=True),
       BatchInfo(21, 29), BatchInfo(30, 39)]
LOG_END = 40
DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class SharePartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.sp = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=LIMIT, max_in_flight=25)
        # the model: offset -> [state, delivery count, member, lock deadline]
        self.model: dict[int, list[object]] = {}
        self.counts: dict[int, int] = {}
        self.start, self.end = 0, 0

    def _skip(self, off: int) -> bool:
        return any(b.skip and b.base_offset <= off <= b.last_offset for b in LOG)

    def _release(self, off: int) -> None:
        m = self.model[off]
        m[0] = RecordState.ARCHIVED if m[1] >= LIMIT else RecordState.AVAILABLE  # type: ignore[operator]
        m[2] = None

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 8))
    def acquire(self, member: str, max_records: int) -> None:
        got = self.sp.acquire(member, LOG, max_records, LOCK_MS, self.clock(), LOG_END)
        offsets = [o for first, last, _ in got for o in range(first, last + 1)]
        assert len(offsets) <= max_records
        assert offsets == sorted(set(offsets))
        for first, last, count in got:
            for off in range(first, last + 1):
                m = self.model.get(off)
                assert not self._skip(off), f"{off} is in a skipped batch"
                assert m is None or m[0] is RecordState.AVAILABLE, f"{off} acquired while {m}"
                before = 0 if m is None else m[1]
                assert count == before + 1  # type: ignore[operator]
                self.model[off] = [RecordState.ACQUIRED, count, member, self.clock() + LOCK_MS]
        # offsets passed over past the old end are in the window now: skipped ones archived
        for off in range(self.end, self.sp.end_offset):
            if off not in self.model:
                assert self._skip(off), f"{off} passed over but neither acquired nor skipped"
                self.model[off] = [RecordState.ARCHIVED, 0, None, 0]

    def _held(self, member: str) -> list[int]:
        return sorted(o for o, m in self.model.items() if m[0] is RecordState.ACQUIRED and m[2] == member)

    @rule(member=st.sampled_from(MEMBERS), kind=st.sampled_from([AckType.ACCEPT, AckType.RELEASE, AckType.REJECT,
                                                                 AckType.RENEW]),
          n=st.integers(1, 4))
    def acknowledge(self, member: str, kind: AckType, n: int) -> None:
        held = self._held(member)
        if not held:
            return
        first = held[0]
        run = [first]
        while len(run) < n and run[-1] + 1 in held:
            run.append(run[-1] + 1)
        assert self.sp.acknowledge(member, run[0], run[-1], [int(kind)], LOCK_MS, self.clock()) == ErrorCode.NONE
        for off in run:
            m = self.model[off]
            if kind is AckType.ACCEPT:
                m[0], m[2] = RecordState.ACKNOWLEDGED, None
            elif kind is AckType.REJECT:
                m[0], m[2] = RecordState.ARCHIVED, None
            elif kind is AckType.RELEASE:
                self._release(off)
            else:
                m[3] = self.clock() + LOCK_MS

    @rule(member=st.sampled_from(MEMBERS), other=st.sampled_from(MEMBERS))
    def acknowledge_what_another_holds(self, member: str, other: str) -> None:
        """Records held by someone else (or no longer held) are refused, and nothing changes."""
        held = self._held(other)
        if member == other or not held:
            return
        before = {o: (r.state, r.delivery_count, r.member_id) for o, r in self.sp.in_flight()}
        assert self.sp.acknowledge(member, held[0], held[0], [int(AckType.ACCEPT)], LOCK_MS,
                                   self.clock()) == ErrorCode.INVALID_RECORD_STATE
        assert before == {o: (r.state, r.delivery_count, r.member_id) for o, r in self.sp.in_flight()}

    @rule(member=st.sampled_from(MEMBERS))
    def member_leaves(self, member: str) -> None:
        held = self._held(member)
        assert self.sp.release_member(member) == len(held)
        for off in held:
            self._release(off)

    @rule(ms=st.integers(1, 150))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)
        now = self.clock()
        expired = [o for o, m in self.model.items() if m[0] is RecordState.ACQUIRED and m[3] <= now]  # type: ignore[operator]
        assert self.sp.expire_locks(now) == len(expired)
        for off in expired:
            self._release(off)

    @invariant()
    def same_states_as_the_model(self) -> None:
        sp = self.sp
        assert sp.start_offset >= self.start and sp.end_offset >= self.end
        self.start, self.end = sp.start_offset, sp.end_offset
        assert set(self.model) == set(range(sp.end_offset))
        window = dict(sp.in_flight())
        assert set(window) == set(range(sp.start_offset, sp.end_offset)), "an offset of the window has no state"
        for off, m in self.model.items():
            if off < sp.start_offset:
                assert m[0] in DONE, f"{off} below the start offset but {m[0]}"
                continue
            r = window[off]
            assert (r.state, r.delivery_count) == (m[0], m[1]), f"{off}: {r} vs model {m}"
            if r.state is RecordState.ACQUIRED:
                assert (r.member_id, r.lock_deadline_ms) == (m[2], m[3])
            assert r.delivery_count <= LIMIT
        if sp.start_offset < sp.end_offset:
            assert window[sp.start_offset].state not in DONE, "the start offset did not move past done records"
        for off, m in self.model.items():
            assert m[1] >= self.counts.get(off, 0)  # type: ignore[operator]
            self.counts[off] = m[1]  # type: ignore[assignment]

    @invariant()
    def persisted_state_restores_the_same(self) -> None:
        copy = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=LIMIT)
        copy.restore(self.sp.start_offset, self.sp.state_batches())
        assert copy.start_offset == self.sp.start_offset
        want = {o: (RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state, r.delivery_count)
                for o, r in self.sp.in_flight()}
        # trailing done offsets of the window are not persisted by state: what restores is a prefix
        got = {o: (r.state, r.delivery_count) for o, r in copy.in_flight()}
        assert got == {o: v for o, v in want.items() if o < copy.end_offset}
        assert all(v[0] in DONE for o, v in want.items() if o >= copy.end_offset)


SharePartitionMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestSharePartition = SharePartitionMachine.TestCase


def test_delivery_limit_archives_a_poison_record() -> None:
    clock = ManualClock()
    sp = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=2)
    batches = [BatchInfo(0, 0), BatchInfo(1, 1)]
    for expected_count in (1, 2):
        assert sp.acquire("a", batches, 1, LOCK_MS, clock(), 2) == [(0, 0, expected_count)]
        clock.advance(LOCK_MS)
        assert sp.expire_locks(clock()) == 1
    # delivered twice, lock expired twice: archived, the start offset moves past it
    assert sp.start_offset == 1
    assert sp.acquire("b", batches, 5, LOCK_MS, clock(), 2) == [(1, 1, 1)]


def new_shard(stack: Stack, clock: ManualClock) -> ShareCoordinatorShard:
    """A share-state shard over the stack's __share_group_state (3 partitions, 1 MiB segments)."""
    runtime = CoordinatorRuntime(stack.topics, stack.replica_manager, now_ms=clock)
    return ShareCoordinatorShard(runtime.store(TOPIC, 3, topic_configs(1 << 20)))


@pytest.mark.parametrize("snapshot_every", [3, 500])
async def test_store_replays_snapshot_and_updates_to_the_same_state(tmp_path: Path, snapshot_every: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every state written (snapshots, then updates carrying only what changed) loads back as the
    last one written, also after a broker restart."""
    import uuid

    monkeypatch.setattr(share_coordinator_shard, "SNAPSHOT_EVERY", snapshot_every)
    clock = ManualClock()
    stack = await Stack(tmp_path, {"share.coordinator.state.topic.num.partitions": 3}, clock).start()
    key = ("g", uuid.UUID(int=7), 0)
    store = new_shard(stack, clock)
    sp = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=3)
    log = [BatchInfo(i, i + 1) for i in range(0, 30, 2)]
    prev: list = []
    steps = [("acquire", "a", 6), ("ack", "a", AckType.ACCEPT, 2), ("ack", "a", AckType.RELEASE, 2),
             ("acquire", "b", 8), ("ack", "b", AckType.REJECT, 1), ("expire",), ("acquire", "a", 10),
             ("ack", "a", AckType.ACCEPT, 5), ("leave", "a"), ("acquire", "c", 30), ("ack", "c", AckType.ACCEPT, 3)]
    for step in steps:
        if step[0] == "acquire":
            sp.acquire(step[1], log, step[2], LOCK_MS, clock(), 30)
        elif step[0] == "ack":
            held = sorted(o for o, r in sp.in_flight() if r.member_id == step[1])[:step[3]]
            assert sp.acknowledge(step[1], held[0], held[-1], [int(step[2])], LOCK_MS, clock()) == ErrorCode.NONE
        elif step[0] == "expire":
            clock.advance(LOCK_MS)
            sp.expire_locks(clock())
        else:
            sp.release_member(step[1])
        batches = sp.state_batches()
        changed = [b for b in batches if b not in prev]
        store.write(key, sp.start_offset, sp.state_epoch, batches, changed)
        prev = batches
        loaded = new_shard(stack, clock).load()[key]
        assert (loaded.start_offset, loaded.batches) == (sp.start_offset, batches), step
    await stack.stop()
    stack = await Stack(tmp_path, {"share.coordinator.state.topic.num.partitions": 3}, clock).start()
    try:
        loaded = new_shard(stack, clock).load()[key]
        assert (loaded.start_offset, loaded.batches) == (sp.start_offset, sp.state_batches())
        restored = SharePartition("g", "t", 0, start_offset=0)
        restored.restore(loaded.start_offset, loaded.batches)
        assert all(r.state is not RecordState.ACQUIRED for _, r in restored.in_flight())
    finally:
        await stack.stop()


def test_acquire_modes_of_kip_1206() -> None:
    """batch_optimized: a log batch begun is acquired whole, ranges cut at a batch boundary after
    BatchSize records; record_limit: MaxRecords exactly, a batch split (what Kafka 4.4 answered to
    raw ShareFetches, tests/reference/test_share_delivery.py)."""
    singles = [BatchInfo(i, i) for i in range(50)]
    big = [BatchInfo(0, 49)]
    sp = SharePartition("g", "t", 0, 0)
    assert sp.acquire("m", singles, 30, 1000, 0, 50, whole_batches=True, batch_size=10) == [
        (0, 9, 1), (10, 19, 1), (20, 29, 1)]
    sp = SharePartition("g", "t", 0, 0)
    assert sp.acquire("m", big, 30, 1000, 0, 50, whole_batches=True, batch_size=10) == [(0, 49, 1)]
    sp = SharePartition("g", "t", 0, 0)
    assert sp.acquire("m", big, 30, 1000, 0, 50, whole_batches=False, batch_size=10) == [(0, 29, 1)]
    assert sp.acquire("m", big, 30, 1000, 0, 50, whole_batches=False, batch_size=10) == [(30, 49, 1)]


def test_dead_letter_queue_states_of_kip_1191() -> None:
    """With a DLQ, a rejected record and one given up at the delivery-count limit (release, lock
    timeout, leaving member) go ARCHIVING, queued with Kafka's reason; the start offset waits for
    them until `archive`; ARCHIVING is persisted as state 3 and queued again after a restore."""
    clock = ManualClock()
    sp = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=2, dlq_enabled=True)
    batches = [BatchInfo(i, i) for i in range(4)]
    assert sp.acquire("a", batches, 4, LOCK_MS, clock(), 4) == [(0, 3, 1)]
    assert sp.acknowledge("a", 0, 0, [AckType.REJECT], LOCK_MS, clock()) == ErrorCode.NONE
    assert sp.acknowledge("a", 1, 3, [AckType.RELEASE], LOCK_MS, clock()) == ErrorCode.NONE
    assert sp.take_dlq_pending() == [(0, 1, "Offset rejected by client.")]
    assert sp.acquire("a", batches, 4, LOCK_MS, clock(), 4) == [(1, 3, 2)]
    assert sp.acknowledge("a", 1, 1, [AckType.RELEASE], LOCK_MS, clock()) == ErrorCode.NONE  # at the limit
    clock.advance(LOCK_MS)
    assert sp.expire_locks(clock()) == 2  # 2 and 3, also at the limit
    exceeded = "Offset delivery count exceeded the threshold."
    assert sp.take_dlq_pending() == [(1, 2, exceeded), (2, 2, exceeded), (3, 2, exceeded)]
    assert sp.take_dlq_pending() == []
    assert sp.start_offset == 0  # ARCHIVING is not done yet
    assert [(b.first_offset, b.last_offset, b.state, b.delivery_count) for b in sp.state_batches()] == [
        (0, 0, 3, 1), (1, 3, 3, 2)]
    restored = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=2, dlq_enabled=True)
    restored.restore(0, sp.state_batches())
    assert restored.take_dlq_pending() == [(0, 1, "Offset rejected by client."), (1, 2, exceeded), (2, 2, exceeded),
                                           (3, 2, exceeded)]
    sp.archive(0, 1)
    assert sp.start_offset == 2
    sp.archive(2, 3)
    assert sp.start_offset == 4 and not sp.records
    # without a DLQ the same records are archived at once
    plain = SharePartition("g", "t", 0, start_offset=0, delivery_count_limit=2)
    plain.acquire("a", batches, 1, LOCK_MS, clock(), 4)
    assert plain.acknowledge("a", 0, 0, [AckType.REJECT], LOCK_MS, clock()) == ErrorCode.NONE
    assert plain.start_offset == 1 and plain.take_dlq_pending() == []


def test_renew_refused_when_the_group_disables_it() -> None:
    """share.renew.acknowledge.enable=false (KIP-1222): RENEW is INVALID_RECORD_STATE and changes nothing."""
    clock = ManualClock()
    sp = SharePartition("g", "t", 0, start_offset=0)
    sp.acquire("a", [BatchInfo(0, 1)], 2, LOCK_MS, clock(), 2)
    assert sp.acknowledge("a", 0, 1, [AckType.ACCEPT, AckType.RENEW], LOCK_MS, clock(),
                          renew_enabled=False) == ErrorCode.INVALID_RECORD_STATE
    assert [r.state for _, r in sp.in_flight()] == [RecordState.ACQUIRED, RecordState.ACQUIRED]
    clock.advance(LOCK_MS // 2)
    assert sp.acknowledge("a", 0, 1, [AckType.RENEW], LOCK_MS, clock()) == ErrorCode.NONE
    clock.advance(LOCK_MS // 2)
    assert sp.expire_locks(clock()) == 0  # renewed: the lock runs from the renewal
