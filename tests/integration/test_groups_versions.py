"""Every version of the group APIs, over a raw socket with our own codec.

Real clients use only the newest versions, so this walks a whole group life cycle once per
JoinGroup version (0-9), using each other group API at the same version or its highest one:
FindCoordinator, JoinGroup (MEMBER_ID_REQUIRED from v4), SyncGroup, Heartbeat, OffsetCommit,
OffsetFetch (single-group and v8+ multi-group forms), DescribeGroups, ListGroups, LeaveGroup
(single member before v3, batched after), OffsetDelete and DeleteGroups.
"""

from __future__ import annotations

import socket
import struct

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.apis import (
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.errors import ErrorCode as E
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from tests.helpers import TEST_OVERRIDES

TOPIC = "versioned"


class Raw:
    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=15)
        self.cid = 0

    def call(self, api, version: int, **fields):
        self.cid += 1
        out = bytearray()
        encode_request_header(out, RequestHeader(api.key, version, self.cid, "raw-client"))
        out += encode(api.request, version, api.request(**fields)).to_bytes()
        self.sock.sendall(struct.pack(">i", len(out)) + bytes(out))
        size = struct.unpack(">i", self._exactly(4))[0]
        frame = self._exactly(size)
        assert struct.unpack_from(">i", frame)[0] == self.cid
        pos = 4 + (1 if response_header_version(api.key, version) >= 1 else 0)
        return decode(api.response, version, frame, pos)

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "broker closed the connection"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    """One broker for the module (each test uses its own groups): creating the 50 partitions of
    __consumer_offsets once instead of per test."""
    with BrokerThread(tmp_path_factory.mktemp("versions"), overrides=dict(TEST_OVERRIDES)) as b:
        b.call(lambda br: br.create_topic(TOPIC, 1))
        yield b


@pytest.fixture
def raw(kafka_broker_module):
    r = Raw(kafka_broker_module.bootstrap)
    yield r
    r.close()


def test_find_coordinator_every_version(raw, kafka_broker_module):
    port = int(kafka_broker_module.bootstrap.rsplit(":", 1)[1])
    for v in range(0, 4):
        r = raw.call(find_coordinator.API, v, key="g", key_type=0)
        assert (r.error_code, r.node_id, r.host, r.port) == (0, 1, "127.0.0.1", port)
    r = raw.call(find_coordinator.API, 3, key="txn-1", key_type=1)
    assert r.error_code == 0 and r.node_id == 1
    r = raw.call(find_coordinator.API, 3, key="x", key_type=7)
    assert r.error_code == E.INVALID_REQUEST and r.node_id == -1
    for v in (4, 5, 6):
        r = raw.call(find_coordinator.API, v, key_type=0, coordinator_keys=["a", "b"])
        assert [(c.key, c.error_code, c.node_id, c.port) for c in r.coordinators] == [("a", 0, 1, port),
                                                                                      ("b", 0, 1, port)]
    r = raw.call(find_coordinator.API, 6, key_type=2, coordinator_keys=["share"])  # KIP-932 share groups
    assert r.coordinators[0].error_code == E.INVALID_REQUEST
    assert kafka_broker_module.call(lambda br: br.topics["__consumer_offsets"].is_internal)


@pytest.mark.parametrize("v", range(10))
def test_group_life_cycle_at_every_version(raw, v):
    group = f"group-v{v}"
    at = lambda api: min(v, api.API.versions.hi)  # noqa: E731
    P = join_group.REQUEST.JoinGroupRequestProtocol
    join = dict(group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000, protocol_type="consumer",
                protocols=[P(name="range", metadata=b"meta")])
    r = raw.call(join_group.API, v, member_id="", **join)
    if v >= 4:
        assert r.error_code == E.MEMBER_ID_REQUIRED and r.member_id
        r = raw.call(join_group.API, v, member_id=r.member_id, **join)
    me = r.member_id
    assert (r.error_code, r.generation_id, r.leader, r.protocol_name) == (0, 1, me, "range")
    assert [(m.member_id, bytes(m.metadata)) for m in r.members] == [(me, b"meta")]
    if v >= 7:
        assert r.protocol_type == "consumer"

    A = sync_group.REQUEST.SyncGroupRequestAssignment
    sv = at(sync_group)
    extra = dict(protocol_type="consumer", protocol_name="range") if sv >= 5 else {}
    s = raw.call(sync_group.API, sv, group_id=group, generation_id=1, member_id=me,
                 assignments=[A(member_id=me, assignment=b"mine")], **extra)
    assert (s.error_code, bytes(s.assignment)) == (0, b"mine")
    assert raw.call(heartbeat.API, at(heartbeat), group_id=group, generation_id=1, member_id=me).error_code == 0
    bad = raw.call(heartbeat.API, at(heartbeat), group_id=group, generation_id=2, member_id=me)
    assert bad.error_code == E.ILLEGAL_GENERATION

    CT, CP = offset_commit.REQUEST.OffsetCommitRequestTopic, offset_commit.REQUEST.OffsetCommitRequestPartition

    def commit(version: int, offset: int) -> list[list[int]]:
        c = raw.call(offset_commit.API, version, group_id=group, generation_id_or_member_epoch=1, member_id=me,
                     retention_time_ms=-1, topics=[
                         CT(name=TOPIC, partitions=[CP(partition_index=0, committed_offset=offset,
                                                       committed_leader_epoch=0, committed_metadata=f"meta-{v}")]),
                         CT(name="no-such-topic", partitions=[CP(partition_index=0, committed_offset=1)])])
        return [[p.error_code for p in t.partitions] for t in c.topics]

    cv = at(offset_commit)
    if cv == 0:
        # v0 carries no member id or generation: Kafka accepts it only while the group is Empty.
        assert commit(0, 5) == [[E.UNKNOWN_MEMBER_ID], [E.UNKNOWN_TOPIC_OR_PARTITION]]
        cv = 1
    assert commit(cv, 5) == [[0], [E.UNKNOWN_TOPIC_OR_PARTITION]]

    fv = at(offset_fetch)
    if fv >= 8:
        G = offset_fetch.REQUEST.OffsetFetchRequestGroup
        T = offset_fetch.REQUEST.OffsetFetchRequestTopics
        f = raw.call(offset_fetch.API, fv, groups=[G(group_id=group, topics=[T(name=TOPIC, partition_indexes=[0])]),
                                                   G(group_id="unknown-group", topics=None)])
        assert [g.group_id for g in f.groups] == [group, "unknown-group"] and f.groups[1].topics == []
        [part] = f.groups[0].topics[0].partitions
    else:
        T = offset_fetch.REQUEST.OffsetFetchRequestTopic
        f = raw.call(offset_fetch.API, fv, group_id=group, topics=[T(name=TOPIC, partition_indexes=[0])])
        [part] = f.topics[0].partitions
    assert (part.committed_offset, part.metadata, part.error_code) == (5, f"meta-{v}", 0)
    if fv >= 5:
        assert part.committed_leader_epoch == (0 if cv >= 6 else -1)

    d = raw.call(describe_groups.API, at(describe_groups), groups=[group])
    [g] = d.groups
    assert (g.group_state, g.protocol_data, [m.member_id for m in g.members]) == ("Stable", "range", [me])
    assert bytes(g.members[0].member_assignment) == b"mine"
    lv = at(list_groups)
    listed = raw.call(list_groups.API, lv, states_filter=["Stable"] if lv >= 4 else [])
    assert group in [x.group_id for x in listed.groups]

    if at(leave_group) < 3:
        lr = raw.call(leave_group.API, at(leave_group), group_id=group, member_id=me)
        assert lr.error_code == 0
    else:
        M = leave_group.REQUEST.MemberIdentity
        lr = raw.call(leave_group.API, at(leave_group), group_id=group,
                      members=[M(member_id=me), M(member_id="ghost")])
        assert [(m.member_id, m.error_code) for m in lr.members] == [(me, 0), ("ghost", E.UNKNOWN_MEMBER_ID)]

    if v == 0:
        assert commit(0, 6) == [[0], [E.UNKNOWN_TOPIC_OR_PARTITION]]  # the group is Empty now
        T = offset_fetch.REQUEST.OffsetFetchRequestTopic
        f = raw.call(offset_fetch.API, 0, group_id=group, topics=[T(name=TOPIC, partition_indexes=[0])])
        assert f.topics[0].partitions[0].committed_offset == 6

    OT = offset_delete.REQUEST.OffsetDeleteRequestTopic
    OP = offset_delete.REQUEST.OffsetDeleteRequestPartition
    od = raw.call(offset_delete.API, 0, group_id=group, topics=[OT(name=TOPIC, partitions=[OP(partition_index=0)])])
    assert od.error_code == 0 and od.topics[0].partitions[0].error_code == 0
    dg = raw.call(delete_groups.API, at(delete_groups), groups_names=[group, group + "-missing"])
    assert [(x.group_id, x.error_code) for x in dg.results] == [(group, 0), (group + "-missing",
                                                                             E.GROUP_ID_NOT_FOUND)]
