"""The classic group state machine, driven directly on the event loop.

The coordinator writes to a `MemoryLog` here: it keeps the encoded (key, value) records in a list
the way a partition keeps them, so that a second coordinator can load what the first wrote. The
storage-backed store is exercised in test_coordinator_store.py and by the client tests.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from minibroker.coordinator.group.classic_group import GroupState
from minibroker_protocol.apis import leave_group
from minibroker_storage.clock import ManualClock
from tests.coordinator.group_helpers import (
    TIMEOUT,
    E,
    MemoryLog,
    client,
    commit_req,
    done,
    hb,
    join,
    join_req,
    stable_group,
    started,
    sub,
    sync_req,
)


@pytest.fixture
async def coord():
    c = await started()
    yield c
    await c.stop()



# ----------------------------------------------------------------------------------- join/sync
async def test_single_member_becomes_leader_and_group_stable(coord):
    fut = await join(coord, "g")
    resp = await done(fut)
    assert resp.error_code == 0 and resp.generation_id == 1
    assert resp.leader == resp.member_id and resp.protocol_name == "range"
    assert [m.member_id for m in resp.members] == [resp.member_id]
    assert bytes(resp.members[0].metadata) == sub("t")
    assert coord.groups["g"].state is GroupState.COMPLETING_REBALANCE
    s = await done(coord.sync_group(sync_req("g", resp.member_id, 1, {resp.member_id: b"A"})))
    assert s.error_code == 0 and bytes(s.assignment) == b"A" and s.protocol_name == "range"
    assert coord.groups["g"].state is GroupState.STABLE
    last = coord.store.decoded()[-1]
    assert last.value.generation == 1 and bytes(last.value.members[0].assignment) == b"A"


async def test_second_member_triggers_rebalance_and_only_the_leader_gets_members(coord):
    (a,), gen = await stable_group(coord)
    fut_b = await join(coord, "g")
    await asyncio.sleep(0.01)
    assert coord.groups["g"].state is GroupState.PREPARING_REBALANCE and not fut_b.done()
    assert hb(coord, "g", a, gen) == E.REBALANCE_IN_PROGRESS
    ra = await done(coord.join_group(join_req("g", a), client()))
    rb = await done(fut_b)
    assert ra.generation_id == rb.generation_id == gen + 1
    assert ra.leader == rb.leader == a
    assert {m.member_id for m in ra.members} == {a, rb.member_id} and rb.members == []
    # The follower syncs first and waits for the leader's assignment.
    sb = coord.sync_group(sync_req("g", rb.member_id, gen + 1))
    await asyncio.sleep(0.01)
    assert not sb.done()
    sa = await done(coord.sync_group(sync_req("g", a, gen + 1, {a: b"pa", rb.member_id: b"pb"})))
    assert bytes(sa.assignment) == b"pa" and bytes((await done(sb)).assignment) == b"pb"
    assert hb(coord, "g", rb.member_id, gen + 1) == 0


async def test_initial_rebalance_delay_gathers_members_into_one_generation():
    c = await started(initial_rebalance_delay_ms=300)
    try:
        fa = await join(c, "g")
        await asyncio.sleep(0.1)
        fb = await join(c, "g")
        ra, rb = await done(fa), await done(fb)
        assert ra.generation_id == rb.generation_id == 1
        assert len(ra.members if ra.leader == ra.member_id else rb.members) == 2
    finally:
        await c.stop()


async def test_join_errors(coord):
    assert (await coord.join_group(join_req(""), client())).error_code == E.INVALID_GROUP_ID
    assert (await coord.join_group(join_req("g", session=5), client())).error_code == E.INVALID_SESSION_TIMEOUT
    assert (await coord.join_group(join_req("nope", "m-1"), client())).error_code == E.UNKNOWN_MEMBER_ID
    await stable_group(coord)
    other = await coord.join_group(join_req("g", ptype="connect"), client())
    assert other.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    no_common = await coord.join_group(join_req("g", protocols=(("roundrobin", b""),)), client())
    assert no_common.error_code == E.INCONSISTENT_GROUP_PROTOCOL


async def test_old_clients_join_without_member_id_required(coord):
    resp = await done(coord.join_group(join_req("g"), client(version=3)))
    assert resp.error_code == 0 and resp.member_id.startswith("c-")


async def test_protocol_vote_picks_the_common_preferred_protocol(coord):
    fa = await join(coord, "g", protocols=(("rr", b"1"), ("range", b"2")))
    fb = await join(coord, "g", protocols=(("sticky", b"3"), ("rr", b"4")))
    ra, rb = await done(fa), await done(fb)
    assert ra.protocol_name == rb.protocol_name == "rr"
    leader = ra if ra.members else rb
    assert sorted(bytes(m.metadata) for m in leader.members) == [b"1", b"4"]


async def test_sync_and_heartbeat_errors(coord):
    (a,), gen = await stable_group(coord)
    assert (await done(coord.sync_group(sync_req("g", a, gen + 5)))).error_code == E.ILLEGAL_GENERATION
    assert (await done(coord.sync_group(sync_req("g", "who", gen)))).error_code == E.UNKNOWN_MEMBER_ID
    assert (await done(coord.sync_group(sync_req("x", a, gen)))).error_code == E.UNKNOWN_MEMBER_ID
    assert hb(coord, "g", a, gen + 1) == E.ILLEGAL_GENERATION
    assert hb(coord, "g", "who", gen) == E.UNKNOWN_MEMBER_ID
    assert hb(coord, "nope", a, gen) == E.UNKNOWN_MEMBER_ID
    assert hb(coord, "", a, gen) == E.INVALID_GROUP_ID
    assert hb(coord, "g", a, gen) == 0


# ------------------------------------------------------------------------------ timeouts/leave
async def test_member_that_stops_heartbeating_is_removed_and_group_rebalances(coord):
    (a, b), gen = await stable_group(coord, n=2, session=300)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while coord.groups["g"].state is GroupState.STABLE:  # only a heartbeats
        assert loop.time() < deadline
        assert hb(coord, "g", a, gen) == 0
        await asyncio.sleep(0.05)
    assert b not in coord.groups["g"].members
    assert hb(coord, "g", a, gen) == E.REBALANCE_IN_PROGRESS
    r = await done(coord.join_group(join_req("g", a, session=300), client()))
    assert r.generation_id == gen + 1 and [m.member_id for m in r.members] == [a]


async def test_leave_rebalances_at_once_and_the_last_leave_empties_the_group(coord):
    (a, b), gen = await stable_group(coord, n=2)
    err, members = coord.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id=b)])
    assert err == 0 and members[0].error_code == 0
    assert coord.groups["g"].state is GroupState.PREPARING_REBALANCE
    r = await done(coord.join_group(join_req("g", a), client()))
    assert r.generation_id == gen + 1 and len(r.members) == 1
    await done(coord.sync_group(sync_req("g", a, gen + 1, {a: b""})))
    coord.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id=a)])
    g = coord.groups["g"]
    assert g.state is GroupState.EMPTY and g.generation_id == gen + 2 and g.protocol_name is None
    last = coord.store.decoded()[-1]
    assert last.value.generation == gen + 2 and last.value.members == [] and last.value.protocol is None
    _, unknown = coord.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id="ghost")])
    assert unknown[0].error_code == E.UNKNOWN_MEMBER_ID


async def test_pending_member_id_expires_after_session_timeout(coord):
    first = await coord.join_group(join_req("g", session=100), client())
    assert first.error_code == E.MEMBER_ID_REQUIRED
    await asyncio.sleep(0.3)
    late = await done(coord.join_group(join_req("g", first.member_id, session=100), client()))
    assert late.error_code == E.UNKNOWN_MEMBER_ID


async def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout(coord):
    fa = await join(coord, "g", rebalance=300)
    fb = await join(coord, "g", rebalance=300)
    ra, rb = await done(fa), await done(fb)
    leader, follower = (ra, rb) if ra.members else (rb, ra)
    s = await done(coord.sync_group(sync_req("g", leader.member_id, 1, {})))
    assert s.error_code == 0
    g = coord.groups["g"]
    for _ in range(100):  # the follower never sends SyncGroup
        if follower.member_id not in g.members:
            break
        await asyncio.sleep(0.02)
    assert follower.member_id not in g.members
    assert g.state is GroupState.PREPARING_REBALANCE and g.generation_id == 1


# ------------------------------------------------------------------------------------ static
async def test_static_member_rejoin_keeps_the_generation_and_fences_the_old_id(coord):
    fut = await join(coord, "g", instance="i-1", version=9)
    r = await done(fut)
    old = r.member_id
    assert old.startswith("i-1-")
    await done(coord.sync_group(sync_req("g", old, 1, {old: b"x"}, instance="i-1")))
    again = await done(coord.join_group(join_req("g", instance="i-1"), client(9)))
    assert again.error_code == 0 and again.member_id != old
    assert again.generation_id == 1 and again.skip_assignment and again.leader == again.member_id
    g = coord.groups["g"]
    assert g.state is GroupState.STABLE and g.static_members["i-1"] == again.member_id
    assert hb(coord, "g", old, 1, instance="i-1") == E.FENCED_INSTANCE_ID
    assert hb(coord, "g", again.member_id, 1, instance="i-1") == 0
    s = await done(coord.sync_group(sync_req("g", again.member_id, 1, instance="i-1")))
    assert bytes(s.assignment) == b"x"  # the assignment moved with the instance id
    # An administrator removes it by instance id alone.
    _, resp = coord.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id="", group_instance_id="i-1")])
    g = coord.groups["g"]
    assert resp[0].error_code == 0 and g.state is GroupState.EMPTY and g.generation_id == 2


async def test_static_member_is_kept_through_a_rebalance_it_misses(coord):
    fs = await join(coord, "g", instance="s", rebalance=200)
    rs = await done(fs)
    await done(coord.sync_group(sync_req("g", rs.member_id, 1, {}, instance="s")))
    fd = await join(coord, "g", rebalance=200)  # a dynamic member arrives; the static one is away
    rd = await done(fd)
    assert rd.generation_id == 2
    assert rs.member_id in coord.groups["g"].members  # static members are not dropped by the join timeout


# ----------------------------------------------------------------------------------- offsets
async def test_commit_and_fetch_round_trip_metadata_and_leader_epochs(coord):
    (a,), gen = await stable_group(coord)
    res = coord.commit_offsets(commit_req("g", gen, a, [("t", 0, 10, 3, "hello"), ("t", 1, 20, -1, None)]), 8)
    assert set(res.values()) == {0}
    err, topics = coord.fetch_offsets("g", [("t", [0, 1, 2])])
    got = {p: om for _, parts in topics for p, om in parts}
    assert (got[0].offset, got[0].leader_epoch, got[0].metadata) == (10, 3, "hello")
    assert (got[1].offset, got[1].metadata) == (20, "")
    assert got[2] is None
    err, everything = coord.fetch_offsets("g", None)
    assert err == 0 and [(t, [p for p, _ in ps]) for t, ps in everything] == [("t", [0, 1])]
    assert coord.fetch_offsets("unknown", None) == (0, [])


async def test_commit_validation(coord):
    (a,), gen = await stable_group(coord)
    one = [("t", 0, 1, -1, "")]
    assert set(coord.commit_offsets(commit_req("g", gen + 1, a, one), 8).values()) == {E.ILLEGAL_GENERATION}
    assert set(coord.commit_offsets(commit_req("g", gen, "zz", one), 8).values()) == {E.UNKNOWN_MEMBER_ID}
    assert set(coord.commit_offsets(commit_req("g", -1, "", one), 8).values()) == {E.UNKNOWN_MEMBER_ID}
    assert set(coord.commit_offsets(commit_req("new", 3, "m", one), 8).values()) == {E.ILLEGAL_GENERATION}
    assert set(coord.commit_offsets(commit_req("new", 3, "m", one), 9).values()) == {E.GROUP_ID_NOT_FOUND}
    big = [("t", 0, 1, -1, "x" * 4097), ("t", 1, 1, -1, "y")]
    res = coord.commit_offsets(commit_req("g", gen, a, big), 8)
    assert res == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): 0}


async def test_simple_group_commit_creates_an_empty_group(coord):
    res = coord.commit_offsets(commit_req("simple", offsets=[("t", 0, 5, -1, "m")]), 2)
    assert res == {("t", 0): 0}
    g = coord.groups["simple"]
    assert g.state is GroupState.EMPTY and g.protocol_type is None
    assert coord.list_groups() == [("simple", "", "Empty", "classic")]


async def test_commit_during_completing_rebalance_is_refused(coord):
    fut = await join(coord, "g")
    r = await done(fut)
    res = coord.commit_offsets(commit_req("g", r.generation_id, r.member_id, [("t", 0, 1, -1, "")]), 8)
    assert set(res.values()) == {E.REBALANCE_IN_PROGRESS}


async def test_a_new_coordinator_loads_groups_and_offsets_from_the_log():
    store = MemoryLog()
    c1 = await started(store)
    (a, b), gen = await stable_group(c1, n=2)
    c1.commit_offsets(commit_req("g", gen, a, [("t", 0, 7, 2, "meta-0")]), 8)
    c1.commit_offsets(commit_req("g", gen, a, [("t", 0, 8, 2, "meta-1")]), 8)  # the later one wins
    c1.commit_offsets(commit_req("solo", offsets=[("u", 3, 99, -1, None)]), 8)
    await c1.stop()
    c2 = await started(store)
    try:
        g = c2.groups["g"]
        assert g.state is GroupState.STABLE and g.generation_id == gen and set(g.members) == {a, b}
        assert g.members[b].assignment == b.encode() and g.protocol_name == "range"
        assert g.subscribed_topics == {"t"}
        om = c2.committed("g", "t", 0)
        assert (om.offset, om.leader_epoch, om.metadata) == (8, 2, "meta-1")
        assert c2.committed("solo", "u", 3).offset == 99
        # Loaded members carry on heartbeating with the same generation.
        assert hb(c2, "g", a, gen) == 0
    finally:
        await c2.stop()


async def test_delete_groups_and_offsets(coord):
    (a,), gen = await stable_group(coord)
    coord.commit_offsets(commit_req("g", gen, a, [("t", 0, 1, -1, ""), ("other", 0, 2, -1, "")]), 8)
    assert coord.delete_groups(["g", "missing"]) == [("g", E.NON_EMPTY_GROUP), ("missing", E.GROUP_ID_NOT_FOUND)]
    err, result = coord.delete_offsets("g", [("t", [0]), ("other", [0])])
    assert err == 0 and result == [("t", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)]), ("other", [(0, 0)])]
    assert coord.committed("g", "other", 0) is None and coord.committed("g", "t", 0) is not None
    coord.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id=a)])
    assert coord.delete_groups(["g"]) == [("g", 0)]
    assert "g" not in coord.groups and coord.fetch_offsets("g", [("t", [0])])[1] == [("t", [(0, None)])]
    tail = coord.store.decoded()[-2:]
    assert tail[0].value is None and tail[1].value is None  # offset and group tombstones
    assert coord.delete_offsets("g", [("t", [0])])[0] == E.GROUP_ID_NOT_FOUND


async def test_offsets_expire_after_retention_once_the_group_is_empty():
    clock = ManualClock()
    store = MemoryLog()
    c = await started(store, clock=clock, offsets_retention_ms=60_000)
    try:
        (a,), gen = await stable_group(c)
        c.commit_offsets(commit_req("g", gen, a, [("t", 0, 1, -1, "")]), 8)
        c.commit_offsets(commit_req("simple", offsets=[("t", 0, 1, -1, "")]), 8)
        c.commit_offsets(commit_req("kept", offsets=[("t", 0, 1, -1, "")], retention=10 * 60_000), 2)
        clock.advance(120_000)
        assert c.cleanup_group_metadata() == 1  # only the simple group's; "g" is Stable and subscribed
        assert "simple" not in c.groups and c.committed("g", "t", 0) is not None
        assert c.committed("kept", "t", 0) is not None  # its explicit expire time is later
        c.leave_group("g", [leave_group.REQUEST.MemberIdentity(member_id=a)])
        clock.advance(30_000)
        assert c.cleanup_group_metadata() == 0  # retention counts from when the group became empty
        clock.advance(31_000)
        assert c.cleanup_group_metadata() == 1 and "g" not in c.groups
        clock.advance(10 * 60_000)
        assert c.cleanup_group_metadata() == 1 and "kept" not in c.groups
    finally:
        await c.stop()
    c2 = await started(store)
    try:
        assert c2.groups == {} and c2.offsets == {}
    finally:
        await c2.stop()


async def test_storage_errors_are_mapped_like_kafka(coord):
    (a,), gen = await stable_group(coord)
    coord.store.fail_with = E.NOT_LEADER_OR_FOLLOWER
    res = coord.commit_offsets(commit_req("g", gen, a, [("t", 0, 1, -1, "")]), 8)
    assert set(res.values()) == {E.NOT_COORDINATOR} and coord.committed("g", "t", 0) is None
    r = await done(coord.join_group(join_req("g", a), client()))  # the leader rejoins
    s = await done(coord.sync_group(sync_req("g", a, r.generation_id, {a: b""})))
    assert s.error_code == E.NOT_COORDINATOR
    assert coord.groups["g"].state is GroupState.PREPARING_REBALANCE


async def test_list_and_describe(coord):
    (a,), gen = await stable_group(coord)
    await join(coord, "g2")  # parks: g2 goes through the initial rebalance
    await asyncio.sleep(0.01)
    states = {g[0]: g[2] for g in coord.list_groups()}
    assert states == {"g": "Stable", "g2": "CompletingRebalance"}
    assert [g[0] for g in coord.list_groups(states=["STABLE "])] == ["g"]
    assert coord.list_groups(types=["consumer"]) == []
    d = coord.describe_group("g", include_authorized_operations=True)
    assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
    m = d.members[0]
    assert (m.member_id, m.client_id, m.client_host, bytes(m.member_metadata), bytes(m.member_assignment)) == \
        (a, "c", "/127.0.0.1", sub("t"), a.encode())
    assert d.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
    gone = coord.describe_group("nope")
    assert (gone.error_code, gone.group_state, gone.members) == (0, "Dead", [])


async def test_group_max_size():
    c = await started(max_size=1)
    try:
        await stable_group(c)
        r = await done(c.join_group(join_req("g"), client()))
        assert r.error_code == E.GROUP_MAX_SIZE_REACHED
    finally:
        await c.stop()


async def test_stop_releases_parked_members():
    c = await started(initial_rebalance_delay_ms=10_000)
    fut = await join(c, "g")
    await c.stop()
    assert (await done(fut)).error_code == E.NOT_COORDINATOR


async def test_deleting_a_topic_drops_its_committed_offsets(coord):
    coord.commit_offsets(commit_req("a", offsets=[("gone", 0, 1, -1, ""), ("gone", 1, 1, -1, ""),
                                                  ("kept", 0, 1, -1, "")]), 8)
    coord.commit_offsets(commit_req("b", offsets=[("gone", 0, 7, -1, "")]), 8)
    assert coord.on_partitions_deleted("gone") == 3
    assert coord.committed("a", "kept", 0) is not None
    assert coord.fetch_offsets("a", None)[1] == [("kept", [(0, coord.committed("a", "kept", 0))])]
    assert "b" not in coord.offsets
    c2 = await started(coord.store)
    try:
        assert c2.committed("a", "gone", 0) is None and c2.committed("b", "gone", 0) is None
    finally:
        await c2.stop()


async def test_load_skips_records_it_cannot_read():
    store = MemoryLog()
    c1 = await started(store)
    c1.commit_offsets(commit_req("a", offsets=[("t", 0, 4, -1, "")]), 8)
    await c1.stop()
    store.records.insert(0, (struct.pack(">h", 1) + b"\x00\x05ab", b"\x00\x03"))  # truncated key
    store.records.append((struct.pack(">h", 2) + b"\x00\x01a", struct.pack(">h", 99)))  # unknown value version
    c2 = await started(store)
    try:
        assert c2.committed("a", "t", 0).offset == 4
    finally:
        await c2.stop()
