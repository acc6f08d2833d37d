"""A KIP-1071 streams-group member spoken raw (StreamsGroupHeartbeat v0 over one TCP connection):
what a Kafka Streams client sends, without the JVM, so a test can drive the same group on
minibroker and on Kafka 4.4 request by request."""

from __future__ import annotations

import time
from typing import Any

from minibroker_protocol.apis import find_coordinator as find_coordinator_api
from minibroker_protocol.apis import (
    offset_commit,
    offset_fetch,
    streams_group_describe,
    streams_group_heartbeat,
)
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient

Q = streams_group_heartbeat.REQUEST
_COORDINATOR_NOT_READY = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                          ErrorCode.NOT_COORDINATOR}


def topology(source: str, changelog: str | None = None) -> streams_group_heartbeat.StreamsGroupHeartbeatRequest.Topology:
    """One subtopology reading `source`; with `changelog`, a store backed by that compacted topic."""
    logs = [] if changelog is None else [
        Q.TopicInfo(name=changelog, partitions=0, replication_factor=-1,
                    topic_configs=[Q.KeyValue(key="cleanup.policy", value="compact")])]
    return Q.Topology(epoch=0, subtopologies=[
        Q.Subtopology(subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=logs,
                      repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def find_coordinator(client: RawClient, group: str) -> None:
    """FindCoordinator v4 until the group's coordinator answers: Kafka creates __consumer_offsets
    on the first lookup and a heartbeat before it gets NOT_COORDINATOR (one node: it is this one)."""
    R = find_coordinator_api.REQUEST
    for _ in range(120):
        resp = client.call(find_coordinator_api.API, 4, R(key_type=0, coordinator_keys=[group]))
        if resp.coordinators[0].error_code == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"no coordinator for {group}: {resp}")


class StreamsMember:
    """One member: joins with the topology, then heartbeats reporting the active tasks it owns
    (a member owns what the last response assigned; it gives up what it was told to)."""

    def __init__(self, bootstrap: str, group: str, member_id: str, process_id: str,
                 topo: streams_group_heartbeat.StreamsGroupHeartbeatRequest.Topology, version: int = 0) -> None:
        self.client = RawClient(bootstrap, client_id="streams-raw")
        self.group, self.member_id, self.process_id, self.topology = group, member_id, process_id, topo
        self.version = version  # of StreamsGroupHeartbeat: v1 adds the answer's AcceptableRecoveryLag
        self.warmups_seen: list[dict[str, list[int]]] = []  # every non-empty WarmupTasks answered
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        find_coordinator(self.client, group)

    def beat(self) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
        owned = [Q.TaskIds(subtopology_id=s, partitions=ps) for s, ps in sorted(self.active.items())]
        joining = self.epoch == 0
        req = Q(group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, endpoint_information_epoch=0,
                rebalance_timeout_ms=30000 if joining else -1, topology=self.topology if joining else None,
                process_id=self.process_id if joining else None,
                active_tasks=owned, standby_tasks=[], warmup_tasks=[])
        resp: streams_group_heartbeat.StreamsGroupHeartbeatResponse = self.client.call(
            streams_group_heartbeat.API, self.version, req)
        for _ in range(60):  # a fresh broker makes __consumer_offsets and loads it first (one node: no lookup)
            if resp.error_code not in _COORDINATOR_NOT_READY:
                break
            time.sleep(0.5)
            resp = self.client.call(streams_group_heartbeat.API, self.version, req)
        assert resp.error_code == 0, (self.member_id, resp.error_code, resp.error_message)
        self.epoch = resp.member_epoch
        if resp.active_tasks is not None:
            self.active = {t.subtopology_id: list(t.partitions) for t in resp.active_tasks}
        if resp.warmup_tasks:
            self.warmups_seen.append({t.subtopology_id: list(t.partitions) for t in resp.warmup_tasks})
        return resp

    def leave(self) -> None:
        self.epoch = -1
        self.client.call(streams_group_heartbeat.API, 0, Q(group_id=self.group, member_id=self.member_id,
                                                           member_epoch=-1, endpoint_information_epoch=0))

    def commit(self, topic: str, partition: int, offset: int) -> int:
        """OffsetCommit v9 as a streams member commits (member id and epoch); the error code."""
        R = offset_commit.REQUEST
        resp = self.client.call(offset_commit.API, 9, R(
            group_id=self.group, generation_id_or_member_epoch=self.epoch, member_id=self.member_id,
            topics=[R.OffsetCommitRequestTopic(name=topic, partitions=[R.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
                committed_metadata="")])]))
        return int(resp.topics[0].partitions[0].error_code)

    def close(self) -> None:
        self.client.close()


def describe(bootstrap: str, group: str) -> dict[str, Any]:
    with RawClient(bootstrap, client_id="streams-raw") as c:
        resp = c.call(streams_group_describe.API, 0, streams_group_describe.REQUEST(group_ids=[group]))
    return resp.to_dict()["groups"][0]  # type: ignore[no-any-return]


def committed(bootstrap: str, group: str, topic: str, partition: int) -> int:
    R = offset_fetch.REQUEST
    with RawClient(bootstrap, client_id="streams-raw") as c:
        resp = c.call(offset_fetch.API, 8, R(groups=[R.OffsetFetchRequestGroup(
            group_id=group, topics=[R.OffsetFetchRequestTopics(name=topic, partition_indexes=[partition])])]))
    return int(resp.groups[0].topics[0].partitions[0].committed_offset)


def settle(members: list[StreamsMember], bootstrap: str, group: str, rounds: int = 120) -> dict[str, Any]:
    """Heartbeat every member in turn until the group is Stable; its description. Kafka 4.4 may
    delay an assignment (status ASSIGNMENT_DELAYED), so the rounds are spaced."""
    for _ in range(rounds):
        statuses = [m.beat().status for m in members]
        d = describe(bootstrap, group)
        if d["group_state"] == "Stable":
            return d
        time.sleep(0.25)
    print("last statuses:", statuses)
    raise AssertionError(f"group {group} not Stable after {rounds} rounds: {describe(bootstrap, group)}")
