"""Faults by request and by component on a live broker, seen on the wire (minibroker.faults): each
trigger (once, the n-th match, n times, always, a seeded probability), each action (an error in
the API's shape, a delay that holds the connection's later answers, a dropped answer, a close
before or after handling), each filter, the trace marking the requests a fault changed, and the
disk and pause faults."""

from __future__ import annotations

import io
import json
import socket
import time
import uuid

import pytest

from minibroker.faults import FaultError
from minibroker.tools.trace import Tracer
from minibroker_protocol.apis import api_versions, list_offsets, metadata, produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import Record, build_batch
from tests.integration.helpers import RawClient


def _topic(b, partitions: int = 1) -> str:
    return b.create_topic(f"faults-{uuid.uuid4().hex[:8]}", partitions)


def _metadata(c: RawClient, topic: str, version: int = 12):
    R = metadata.REQUEST
    return c.call(metadata.API, version, R(topics=[R.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False))


def _list_offsets(c: RawClient, topic: str, partitions=(0,)):
    R = list_offsets.REQUEST
    req = R(replica_id=-1, topics=[R.ListOffsetsTopic(name=topic, partitions=[
        R.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in partitions])])
    resp = c.call(list_offsets.API, 7, req)
    return {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}


def _produce(c: RawClient, topic: str, partitions=(0,), acks: int = -1, value: bytes = b"v"):
    R = produce.REQUEST
    req = R(acks=acks, timeout_ms=5000, topic_data=[R.TopicProduceData(name=topic, partition_data=[
        R.PartitionProduceData(index=p, records=_batch(value)) for p in partitions])])
    return c.call(produce.API, 9, req)


def _batch(value: bytes) -> bytes:
    return bytes(build_batch([Record(value=value)], base_timestamp=int(time.time() * 1000)))


def _codes(resp) -> dict[int, int]:
    return {p.index: p.error_code for t in resp.responses for p in t.partition_responses}


def test_triggers_once_nth_times_always(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap) as c:
        with b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER") as once:
            assert [_list_offsets(c, t)[0] for _ in range(3)] == [ErrorCode.NOT_LEADER_OR_FOLLOWER, 0, 0]
            assert (once.matched, once.fired) == (1, 1)
        with b.faults.inject("ListOffsets", error="LEADER_NOT_AVAILABLE", nth=3) as third:
            assert [_list_offsets(c, t)[0] for _ in range(4)] == [0, 0, ErrorCode.LEADER_NOT_AVAILABLE, 0]
            assert third.fired == 1
        with b.faults.inject("ListOffsets", error=ErrorCode.UNKNOWN_LEADER_EPOCH, count=2, after=1) as two:
            assert [_list_offsets(c, t)[0] for _ in range(4)] == [0, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, 0]
            assert two.fired == 2
        with b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER", count=None) as always:
            assert {_list_offsets(c, t)[0] for _ in range(5)} == {ErrorCode.NOT_LEADER_OR_FOLLOWER}
            assert always.fired == 5
        assert _list_offsets(c, t)[0] == 0  # removed on leaving the block


def test_a_seeded_probability_fires_the_same_requests_every_run(faults_broker):
    b = faults_broker
    t = _topic(b)
    runs = []
    with RawClient(b.bootstrap) as c:
        for _ in range(2):
            with b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER", count=None, probability=0.3,
                                 seed=42) as f:
                runs.append([_list_offsets(c, t)[0] != 0 for _ in range(40)])
                assert f.fired == sum(runs[-1])
    assert runs[0] == runs[1]
    assert 3 < sum(runs[0]) < 25  # about 30% of 40


def test_filters_topic_partition_client_and_version(faults_broker):
    b = faults_broker
    t, other = _topic(b, 3), _topic(b)
    with RawClient(b.bootstrap, client_id="app-a") as a, RawClient(b.bootstrap, client_id="app-b") as bb:
        with b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER", topic=t, partition=1, count=None) as f:
            # only partition 1 of t answers the error; the other partitions of the same request are handled
            assert _list_offsets(a, t, (0, 1, 2)) == {0: 0, 1: ErrorCode.NOT_LEADER_OR_FOLLOWER, 2: 0}
            assert _list_offsets(a, other) == {0: 0}
            assert f.fired == 1
        with b.faults.inject("Produce", error="REQUEST_TIMED_OUT", topic=t, partition=2, count=None):
            before = b.end_offsets(t)
            assert _codes(_produce(a, t, (0, 1, 2))) == {0: 0, 1: 0, 2: ErrorCode.REQUEST_TIMED_OUT}
            after = b.end_offsets(t)  # the error partition was not appended to, the others were
            assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == (1, 1, 0)
        with b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER", client_id="app-b", count=None):
            assert (_list_offsets(a, t)[0], _list_offsets(bb, t)[0]) == (0, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        with b.faults.inject("Metadata", error="LEADER_NOT_AVAILABLE", versions=(0, 11), count=None):
            assert _metadata(a, t, 12).topics[0].error_code == 0
            resp = _metadata(a, t, 11)
            assert resp.topics[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE
            assert len(resp.brokers) == 1  # handled, then the topic's entry replaced: the brokers stay
        with b.faults.inject("Metadata", error="LEADER_NOT_AVAILABLE", node=99, count=None) as elsewhere:
            assert _metadata(a, t).topics[0].error_code == 0
            assert elsewhere.fired == 0


def test_bad_faults_are_refused(faults_broker):
    faults = faults_broker.faults
    for kwargs in ({"api": "Produce"}, {"api": "NoSuchApi", "error": "NONE"}, {"api": "Produce", "error": "NOPE"},
                   {"api": "Produce", "error": "NONE", "action": "close"}, {"api": "Produce", "action": "explode"},
                   {"api": "Produce", "error": "NONE", "probability": 0}, {"kind": "disk.melted"},
                   {"api": "Produce", "error": "NONE", "partition": 0}, {"kind": "disk.slow"}):
        with pytest.raises(FaultError):
            faults.inject(**kwargs)
    assert faults.all() == []


def test_a_delay_holds_the_connections_later_answers_in_order(faults_broker):
    b = faults_broker
    with RawClient(b.bootstrap) as c, b.faults.inject("ApiVersions", delay_ms=300) as f:
        R = api_versions.REQUEST
        t0 = time.monotonic()
        first = c.send(api_versions.API, 3, R(client_software_name="x", client_software_version="1"))
        second = c.send(metadata.API, 12, metadata.REQUEST(topics=[]))
        assert c.recv(api_versions.API, 3)[0] == first
        assert c.recv(metadata.API, 12)[0] == second  # answered after the delayed one, never before
        assert time.monotonic() - t0 >= 0.3
        assert f.fired == 1


def test_close_before_and_after_handling_and_drop(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap) as c, b.faults.inject("Produce", action="close") as f:
        c.send(produce.API, 9, produce.REQUEST(acks=-1, timeout_ms=1000, topic_data=[produce.REQUEST.TopicProduceData(
            name=t, partition_data=[produce.REQUEST.PartitionProduceData(index=0, records=_batch(b"x"))])]))
        assert c.closed_by_peer()
        assert f.fired == 1 and b.end_offsets(t) == {0: 0}  # closed before the append
    with RawClient(b.bootstrap) as c, b.faults.inject("Produce", action="close_after") as f:
        with pytest.raises((EOFError, ConnectionResetError)):
            _produce(c, t)
        assert b.end_offsets(t) == {0: 1}  # the append happened, the answer was lost
    with RawClient(b.bootstrap, timeout=0.3) as c, b.faults.inject("ListOffsets", action="drop") as f:
        c.send(list_offsets.API, 7, list_offsets.REQUEST(replica_id=-1, topics=[]))
        c.send(metadata.API, 12, metadata.REQUEST(topics=[]))
        with pytest.raises(socket.timeout):
            c.recv_frame()  # neither the dropped answer nor the one queued behind it
        f.wait_fired(1)
    # the fault removed: the held request ends unanswered, and the connection goes on
    with RawClient(b.bootstrap) as c:
        assert _list_offsets(c, t)[0] == 0


def test_an_acks_0_produce_with_an_error_closes_the_connection(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap) as c, b.faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER") as f:
        R = produce.REQUEST
        c.send(produce.API, 9, R(acks=0, timeout_ms=1000, topic_data=[R.TopicProduceData(name=t, partition_data=[
            R.PartitionProduceData(index=0, records=_batch(b"x"))])]))
        assert c.closed_by_peer()
        assert f.fired == 1


def test_the_trace_shows_the_fault_on_the_request_it_changed(faults_broker):
    b = faults_broker
    t = _topic(b)
    text, js = io.StringIO(), io.StringIO()
    tracers = [Tracer(text), Tracer(js, fmt="json")]
    for tr in tracers:
        b.call(lambda broker, tr=tr: broker.trace_listeners.add(tr))
    try:
        with RawClient(b.bootstrap) as c, b.faults.inject("ListOffsets", error="NOT_LEADER_OR_FOLLOWER") as f:
            _list_offsets(c, t)
            _list_offsets(c, t)
    finally:
        for tr in tracers:
            b.call(lambda broker, tr=tr: broker.trace_listeners.remove(tr))
    entries = [json.loads(line) for line in js.getvalue().splitlines()]
    assert [e.get("faults") for e in entries if e["api"] == "ListOffsets"] == [
        [f"fault {f.id}: error NOT_LEADER_OR_FOLLOWER"], None]
    assert f"!! ListOffsets v7 corr=1 client=it-raw fault {f.id}: error NOT_LEADER_OR_FOLLOWER" in text.getvalue()
    (fired,) = [e for e in b.faults.history() if e["fault"] == f.id]
    assert (fired["on"], fired["correlation_id"], fired["client_id"]) == ("ListOffsets v7", 1, "it-raw")


def test_full_disk_refuses_appends_and_loses_nothing_acknowledged(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap) as c:
        assert _codes(_produce(c, t, value=b"before")) == {0: 0}
        with b.faults.disk_full(topic=t) as full:
            assert _codes(_produce(c, t, value=b"lost")) == {0: ErrorCode.KAFKA_STORAGE_ERROR}
            assert _list_offsets(c, t)[0] == 0  # reads go on
            assert full.fired == 1
        assert _codes(_produce(c, t, value=b"after")) == {0: 0}
    assert b.values(t) == [b"before", b"after"]


def test_slow_disk_delays_appends(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap) as c, b.faults.slow_disk(300, topic=t) as slow:
        t0 = time.monotonic()
        assert _codes(_produce(c, t)) == {0: 0}
        assert time.monotonic() - t0 >= 0.3
        assert slow.fired == 1
    assert b.wait_for_high_watermark(t, 0, 1) == 1
    with pytest.raises(TimeoutError):
        b.wait_for_high_watermark(t, 0, 2, timeout=0.05)
    node = b.broker.node_id
    assert b.wait_for_isr(t, 0, [node]) == [node]
    with pytest.raises(TimeoutError):
        b.wait_for_isr(t, 0, [node, node + 1], timeout=0.05)


def test_a_paused_broker_reads_nothing_until_resumed(faults_broker):
    b = faults_broker
    t = _topic(b)
    with RawClient(b.bootstrap, timeout=0.3) as c:
        assert _list_offsets(c, t)[0] == 0
        pause = b.faults.pause()
        c.send(list_offsets.API, 7, list_offsets.REQUEST(replica_id=-1, topics=[]))
        with pytest.raises(socket.timeout):
            c.recv_frame()
        with RawClient(b.bootstrap, client_id="late") as late:  # connects into the listen backlog
            assert pause.fired == 1
            assert b.faults.resume() == 1
            c.sock.settimeout(5)
            assert c.recv(list_offsets.API, 7)[1].topics == []  # read and answered once resumed
            assert _list_offsets(late, t)[0] == 0  # accepted once resumed


def test_a_component_kind_plugs_in(faults_broker):
    """The cluster adds its kinds (a leader move, a broker stopped...) the way this one is added."""
    from minibroker.faults import KINDS, register_kind

    applied: list[tuple[str, int, int | None]] = []

    class Flag:
        def apply(self, target, fault, on_fire):
            fault.fired += 1
            on_fire(fault, f"node {target.node_id} flagged")
            applied.append(("apply", target.node_id, fault.delay_ms))

        def revert(self, target, fault):
            applied.append(("revert", target.node_id, fault.delay_ms))

    register_kind("test.flag", Flag())
    try:
        node = faults_broker.broker.node_id
        with faults_broker.faults.inject(kind="test.flag", delay_ms=5, count=None) as f:
            assert f.fired == 1
            assert applied == [("apply", node, 5)]
        assert applied == [("apply", node, 5), ("revert", node, 5)]
        assert any(e["on"] == f"node {node} flagged" for e in faults_broker.faults.history())
    finally:
        del KINDS["test.flag"]


def test_a_paused_broker_closes_no_idle_connection(tmp_path):
    from minibroker.testing import BrokerThread
    from tests.helpers import TEST_OVERRIDES

    with BrokerThread(tmp_path / "data", overrides={**TEST_OVERRIDES, "connections.max.idle.ms": 200}) as b:
        t = _topic(b)
        with RawClient(b.bootstrap) as c:
            with b.faults.pause():
                # three idle periods pass while paused (a stopped process expires nothing)
                assert not c.closed_by_peer(timeout=0.6)
            assert _list_offsets(c, t)[0] == 0  # the same connection, served again
            assert c.closed_by_peer(timeout=5)  # and expired once idle after the resume
