"""What the streams-group tests share: the word-count topology, joining and heartbeating members
on a StreamsGroupManager, the tasks an answer assigns."""

from __future__ import annotations

import asyncio

from minibroker.coordinator.group.streams_group_manager import StreamsGroupConfig, StreamsGroupManager
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker_protocol.apis import streams_group_heartbeat

Q = streams_group_heartbeat.REQUEST


TOPICS = {"in": 4, "out": 2}


def word_count_topology(epoch: int = 0) -> streams_group_heartbeat.StreamsGroupHeartbeatRequest.Topology:
    """What Kafka Streams sends for the word count: subtopology 0 reads `in` and writes the
    repartition topic, subtopology 1 reads it and keeps a store with a changelog."""
    compact = [Q.KeyValue(key="cleanup.policy", value="compact")]
    return Q.Topology(epoch=epoch, subtopologies=[
        Q.Subtopology(subtopology_id="0", source_topics=["in"], source_topic_regex=[], state_changelog_topics=[],
                      repartition_sink_topics=["app-words-repartition"], repartition_source_topics=[],
                      copartition_groups=[]),
        Q.Subtopology(subtopology_id="1", source_topics=[], source_topic_regex=[],
                      state_changelog_topics=[Q.TopicInfo(name="app-counts-changelog", partitions=0,
                                                          replication_factor=-1, topic_configs=compact)],
                      repartition_sink_topics=[],
                      repartition_source_topics=[Q.TopicInfo(name="app-words-repartition", partitions=0,
                                                             replication_factor=-1, topic_configs=[])],
                      copartition_groups=[]),
    ])


def join(mgr: StreamsGroupManager, member: str, process: str, topics: dict[str, int]
         ) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
    return mgr.heartbeat(Q(group_id="app", member_id=member, member_epoch=0, endpoint_information_epoch=0,
                           rebalance_timeout_ms=30000, topology=word_count_topology(), active_tasks=[],
                           standby_tasks=[], warmup_tasks=[], process_id=process), "client", "/127.0.0.1", topics)


def beat(mgr: StreamsGroupManager, member: str, epoch: int, topics: dict[str, int],
         active: dict[str, list[int]] | None = None) -> streams_group_heartbeat.StreamsGroupHeartbeatResponse:
    owned = None if active is None else [Q.TaskIds(subtopology_id=s, partitions=ps) for s, ps in active.items()]
    return mgr.heartbeat(Q(group_id="app", member_id=member, member_epoch=epoch, endpoint_information_epoch=0,
                           active_tasks=owned, standby_tasks=None if owned is None else [],
                           warmup_tasks=None if owned is None else []), "client", "/127.0.0.1", topics)


def tasks(resp: streams_group_heartbeat.StreamsGroupHeartbeatResponse) -> dict[str, list[int]]:
    assert resp.active_tasks is not None
    return {t.subtopology_id: list(t.partitions) for t in resp.active_tasks}


LOOP = asyncio.new_event_loop()  # session timers are scheduled on it, never run (45 s away)


def manager(standbys: int = 0) -> StreamsGroupManager:
    mgr = StreamsGroupManager(StreamsGroupConfig(num_standby_replicas=standbys), now_ms=lambda: 0,
                              other_group_exists=lambda gid: False)
    mgr.timer = KeyedTimer(LOOP)
    return mgr
