"""The API registry: every API minibroker has a schema for, by key.

Which of them the broker *serves*, and at which versions, is decided by the handlers in
minibroker/handlers (ApiVersions is built from that registry), not here.
"""

from __future__ import annotations

import importlib

from protocol.schema import Api

MODULES: tuple[str, ...] = (
    "produce", "fetch", "list_offsets", "metadata", "offset_commit", "offset_fetch", "find_coordinator",
    "join_group", "heartbeat", "leave_group", "sync_group", "describe_groups", "list_groups",
    "sasl_handshake", "api_versions", "create_topics", "delete_topics", "delete_records", "init_producer_id",
    "offset_for_leader_epoch", "add_partitions_to_txn", "add_offsets_to_txn", "end_txn", "txn_offset_commit",
    "describe_configs", "alter_configs", "describe_log_dirs", "sasl_authenticate", "create_partitions",
    "delete_groups", "incremental_alter_configs", "offset_delete", "describe_cluster", "describe_producers",
    "describe_transactions", "list_transactions", "consumer_group_heartbeat", "consumer_group_describe",
    "describe_topic_partitions", "describe_client_quotas", "alter_client_quotas",
    "describe_user_scram_credentials", "alter_user_scram_credentials",
)
# KIP-932 share groups
MODULES += (
    "share_group_heartbeat", "share_group_describe", "share_fetch", "share_acknowledge",
    "describe_share_group_offsets", "alter_share_group_offsets", "delete_share_group_offsets",
)
# ACLs (issue 19)
MODULES += ("describe_acls", "create_acls", "delete_acls")

APIS: dict[int, Api] = {}
for _name in MODULES:
    _api = importlib.import_module(f"protocol.apis.{_name}").API
    APIS[_api.key] = _api
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}

__all__ = ["APIS", "BY_NAME", "MODULES", "Api"]
