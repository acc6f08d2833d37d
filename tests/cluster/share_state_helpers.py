"""The share coordinator's inter-broker APIs as raw requests, for the cluster tests that read or
write a share partition's state directly (test_coordinators_on_kraft, test_share_groups_on_kraft)."""

from __future__ import annotations

import uuid

from minibroker_protocol.apis import find_coordinator, read_share_group_state, write_share_group_state
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient


def share_coordinator(bootstrap: str, key: str) -> tuple[int, str]:
    """FindCoordinator v6, key type SHARE: (node id, "host:port") of the key's share coordinator."""
    F = find_coordinator.REQUEST
    with RawClient(bootstrap.split(",")[0]) as raw:
        resp = raw.call(find_coordinator.API, 6, F(key_type=2, coordinator_keys=[key]))
    co = resp.coordinators[0]
    assert co.error_code == ErrorCode.NONE, co
    return co.node_id, f"{co.host}:{co.port}"


def write_state(bootstrap: str, group: str, tid: uuid.UUID, batches: list[tuple[int, int, int, int]],
                 start: int) -> int:
    W = write_share_group_state.REQUEST
    with RawClient(bootstrap) as raw:
        resp = raw.call(write_share_group_state.API, 1, W(group_id=group, topics=[W.WriteStateData(
            topic_id=tid, partitions=[W.PartitionData(
                partition=0, state_epoch=1, leader_epoch=0, start_offset=start, state_batches=[
                    W.StateBatch(first_offset=f, last_offset=last, delivery_state=s, delivery_count=n)
                    for f, last, s, n in batches])])]))
    return int(resp.results[0].partitions[0].error_code)


def read_state(bootstrap: str, group: str, tid: uuid.UUID) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    R = read_share_group_state.REQUEST
    with RawClient(bootstrap) as raw:
        resp = raw.call(read_share_group_state.API, 0, R(group_id=group, topics=[R.ReadStateData(
            topic_id=tid, partitions=[R.PartitionData(partition=0, leader_epoch=-1)])]))
    p = resp.results[0].partitions[0]
    return p.error_code, p.start_offset, [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                          for b in p.state_batches]


def group_coordinator(bootstrap: str, group: str) -> int:
    """FindCoordinator v6, key type GROUP: the node id of the group's coordinator."""
    F = find_coordinator.REQUEST
    with RawClient(bootstrap.split(",")[0]) as raw:
        resp = raw.call(find_coordinator.API, 6, F(key_type=0, coordinator_keys=[group]))
    co = resp.coordinators[0]
    assert co.error_code == ErrorCode.NONE, co
    return int(co.node_id)
