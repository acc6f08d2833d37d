"""DescribeClientQuotas v0-1 and AlterClientQuotas v0-1 (KIP-546): the client quota
configuration (minibroker.quotas.store), which the broker enforces (minibroker.quotas.manager).

Behavior, as Kafka's ClientQuotaControlManager and ClientQuotasImage:
- entities are sets of `user`, `client-id`, `ip` with a name, or a null name for the default;
  `ip` is not combined with the others; user/client-id take producer_byte_rate,
  consumer_byte_rate, request_percentage and controller_mutation_rate, ip takes
  connection_creation_rate; a bad entity or key is INVALID_REQUEST for that entry only;
- Alter applies every valid entry (a value sets a key, `remove` removes it) unless validate_only,
  persisted in the data directory, in force at once;
- Describe filters: a component matches a name exactly (0), the default entity (1), or any
  non-default name (2); strict means the entity has no other types. A type twice, or ip with the
  others, is INVALID_REQUEST for the whole request.
Version notes: v1 is flexible.
"""

from __future__ import annotations

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.quotas import alterations
from minibroker.quotas.store import (
    CLIENT_ID,
    ENTITY_TYPES,
    IP,
    USER,
    Entity,
)
from minibroker_protocol.apis import alter_client_quotas, describe_client_quotas
from minibroker_protocol.errors import ErrorCode

D = describe_client_quotas.RESPONSE
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


@handles(describe_client_quotas.API, "0-1")
async def handle_describe_client_quotas(ctx: RequestContext, req: describe_client_quotas.DescribeClientQuotasRequest) -> describe_client_quotas.DescribeClientQuotasResponse:
    if code := authz.cluster_denied(ctx, authz.Op.DESCRIBE_CONFIGS):  # DESCRIBE_CONFIGS on the cluster
        return D(error_code=code, error_message=None, entries=None)  # no message, as Kafka 4.4
    filters: dict[str, tuple[int, str | None]] = {}
    for c in req.components:
        if c.entity_type in filters:
            return _describe_error(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.entity_type not in ENTITY_TYPES:
            return _describe_error(f"Custom entity type {c.entity_type} not supported")
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return _describe_error(f"Unknown match type {c.match_type}")
        if c.match_type == MATCH_EXACT and c.match is None:
            return _describe_error(f"Exact match of {c.entity_type} needs a name")
        filters[c.entity_type] = (c.match_type, c.match)
    if IP in filters and (USER in filters or CLIENT_ID in filters):
        return _describe_error("Invalid entity filter component combination, IP filter component should not be "
                               "used with user or clientId filter component.")
    entries = []
    for entity, values in sorted(ctx.services.quota_store.quotas.items(),
                                 key=lambda kv: [(k, n or "") for k, n in kv[0]]):
        if _matches(entity, filters, req.strict):
            entries.append(D.EntryData(
                entity=[D.EntityData(entity_type=k, entity_name=n) for k, n in entity],
                values=[D.ValueData(key=k, value=v) for k, v in sorted(values.items())]))
    return D(error_code=0, error_message=None, entries=entries)


def _matches(entity: Entity, filters: dict[str, tuple[int, str | None]], strict: bool) -> bool:
    names = dict(entity)
    if strict and set(names) != set(filters):
        return False
    for kind, (match_type, match) in filters.items():
        if kind not in names:
            return False
        name = names[kind]
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name is not None:
            return False
        if match_type == MATCH_SPECIFIED and name is None:
            return False
    return True


def _describe_error(message: str) -> describe_client_quotas.DescribeClientQuotasResponse:
    return D(error_code=ErrorCode.INVALID_REQUEST, error_message=message, entries=None)


@handles(alter_client_quotas.API, "0-1")
async def handle_alter_client_quotas(ctx: RequestContext, req: alter_client_quotas.AlterClientQuotasRequest) -> alter_client_quotas.AlterClientQuotasResponse:
    if code := authz.cluster_denied(ctx, authz.Op.ALTER_CONFIGS):  # ALTER_CONFIGS on the cluster, per entry
        return alterations.refused(req, code, authz.MESSAGES[code])
    changes, response = alterations.plan(req)
    if changes and not req.validate_only:
        ctx.services.quota_store.apply(changes)
    return response
