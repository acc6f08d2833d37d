"""The API registry: every API minibroker has a schema for, by key.

Which of them the broker *serves*, and at which versions, is decided by the handlers in
minibroker/handlers (ApiVersions is built from that registry), not here.
"""

from __future__ import annotations

from protocol.apis import (
    add_offsets_to_txn, add_partitions_to_txn, alter_configs, api_versions, consumer_group_describe,
    consumer_group_heartbeat, create_partitions, create_topics, delete_groups, delete_records,
    delete_topics, describe_cluster, describe_configs, describe_groups, describe_log_dirs,
    describe_producers, describe_topic_partitions, describe_transactions, end_txn, fetch,
    find_coordinator, heartbeat, incremental_alter_configs, init_producer_id, join_group, leave_group,
    list_groups, list_offsets, list_transactions, metadata, offset_commit, offset_delete, offset_fetch,
    offset_for_leader_epoch, produce, sasl_authenticate, sasl_handshake, sync_group, txn_offset_commit,
)
from protocol.schema import Api

_MODULES = [
    add_offsets_to_txn, add_partitions_to_txn, alter_configs, api_versions, consumer_group_describe,
    consumer_group_heartbeat, create_partitions, create_topics, delete_groups, delete_records,
    delete_topics, describe_cluster, describe_configs, describe_groups, describe_log_dirs,
    describe_producers, describe_topic_partitions, describe_transactions, end_txn, fetch,
    find_coordinator, heartbeat, incremental_alter_configs, init_producer_id, join_group, leave_group,
    list_groups, list_offsets, list_transactions, metadata, offset_commit, offset_delete, offset_fetch,
    offset_for_leader_epoch, produce, sasl_authenticate, sasl_handshake, sync_group, txn_offset_commit,
]

APIS: dict[int, Api] = {m.API.key: m.API for m in _MODULES}
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}

__all__ = ["APIS", "BY_NAME", "Api"]
