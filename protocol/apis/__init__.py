"""The API registry: every API minibroker has a schema for, by key.

Which of them the broker *serves*, and at which versions, is stated by the handlers in
minibroker/handlers (their `@handles` lines, collected in minibroker/handlers/api_table.py, which
ApiVersions is built from), not here: a schema's `versions` are what Kafka's JSON defines.

The schemas are imported one by one when first needed (`api(key)`, `from minibroker_protocol.apis import
fetch`): reading a request header needs only its own API's flexible versions, and the broker
answers its first ApiVersions without importing the other schemas (issue 22). `APIS` and
`BY_NAME`, the whole registry, import every schema on first access. `KEYS` is checked against
each module's `API.key` by tests/protocol/test_codec_schemas.py.
"""

from __future__ import annotations

import importlib
from typing import Any

from minibroker_protocol.schema import Api

# api key -> the schema module under minibroker_protocol.apis
KEYS: dict[int, str] = {
    0: "produce", 1: "fetch", 2: "list_offsets", 3: "metadata", 8: "offset_commit", 9: "offset_fetch",
    10: "find_coordinator", 11: "join_group", 12: "heartbeat", 13: "leave_group", 14: "sync_group",
    15: "describe_groups", 16: "list_groups", 17: "sasl_handshake", 18: "api_versions", 19: "create_topics",
    20: "delete_topics", 21: "delete_records", 22: "init_producer_id", 23: "offset_for_leader_epoch",
    24: "add_partitions_to_txn", 25: "add_offsets_to_txn", 26: "end_txn", 28: "txn_offset_commit",
    32: "describe_configs", 33: "alter_configs", 35: "describe_log_dirs", 36: "sasl_authenticate",
    37: "create_partitions", 42: "delete_groups", 44: "incremental_alter_configs", 47: "offset_delete",
    60: "describe_cluster", 61: "describe_producers", 65: "describe_transactions", 66: "list_transactions",
    68: "consumer_group_heartbeat", 69: "consumer_group_describe", 75: "describe_topic_partitions",
    48: "describe_client_quotas", 49: "alter_client_quotas", 50: "describe_user_scram_credentials",
    51: "alter_user_scram_credentials",
    # KIP-932 share groups
    76: "share_group_heartbeat", 77: "share_group_describe", 78: "share_fetch", 79: "share_acknowledge",
    90: "describe_share_group_offsets", 91: "alter_share_group_offsets", 92: "delete_share_group_offsets",
    # ACLs (issue 19)
    29: "describe_acls", 30: "create_acls", 31: "delete_acls",
    # KRaft: between brokers and the controller (issue 29)
    27: "write_txn_markers", 43: "elect_leaders", 45: "alter_partition_reassignments",
    46: "list_partition_reassignments", 55: "describe_quorum", 56: "alter_partition", 57: "update_features",
    59: "fetch_snapshot", 62: "broker_registration", 63: "broker_heartbeat", 64: "unregister_broker",
    67: "allocate_producer_ids", 70: "controller_registration", 58: "envelope",
    # the rest of Kafka 4.4's broker API (issue 35)
    74: "list_config_resources", 94: "unregister_controller",
    # KIP-1071 streams groups (issue 35)
    88: "streams_group_heartbeat", 89: "streams_group_describe", 93: "streams_group_topology_description_update",
    # delegation tokens (KIP-48; issue 35)
    38: "create_delegation_token", 39: "renew_delegation_token", 40: "expire_delegation_token",
    41: "describe_delegation_token",
    # several log directories (issue 35)
    34: "alter_replica_log_dirs",
    # KIP-858 directory assignment, broker to controller (issue 29)
    73: "assign_replicas_to_dirs",
    # the share coordinator between brokers (KIP-932; issue 29)
    83: "initialize_share_group_state", 84: "read_share_group_state", 85: "write_share_group_state",
    86: "delete_share_group_state", 87: "read_share_group_state_summary",
}
MODULES: tuple[str, ...] = tuple(KEYS.values())

# the schemas imported so far, by key (what `api` has looked up)
LOADED: dict[int, Api] = {}


def api(key: int) -> Api | None:
    """The schema of api `key` (its module imported on first use), None for a key we do not know."""
    found = LOADED.get(key)
    if found is None:
        name = KEYS.get(key)
        if name is None:
            return None
        found = LOADED[key] = importlib.import_module(f"minibroker_protocol.apis.{name}").API
    return found


def __getattr__(name: str) -> Any:
    # PEP 562: the whole registry is built (every schema imported) the first time it is asked for
    if name == "APIS":
        apis = {key: a for key in KEYS if (a := api(key)) is not None}
        globals()["APIS"] = apis
        return apis
    if name == "BY_NAME":
        by_name = {a.name: a for a in __getattr__("APIS").values()}
        globals()["BY_NAME"] = by_name
        return by_name
    raise AttributeError(f"module 'minibroker_protocol.apis' has no attribute {name!r}")


APIS: dict[int, Api]
BY_NAME: dict[str, Api]

__all__ = ["APIS", "BY_NAME", "KEYS", "LOADED", "MODULES", "Api", "api"]
