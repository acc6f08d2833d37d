"""AlterClientQuotas decided (Kafka: ClientQuotaControlManager.alterClientQuotas): the changes
a request makes and each entry's answer. Shared by the broker's handler (one broker: the quotas
file) and the controller (a cluster: ClientQuotaRecords of the metadata log), so both answer
alike: a bad entity or key, or a key twice in one entry, is INVALID_REQUEST for that entry only;
a value sets a key, `remove` removes it."""

from __future__ import annotations

from minibroker.quotas.store import Entity, QuotaError, check_value, make_entity
from minibroker_protocol.apis import alter_client_quotas
from minibroker_protocol.apis.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from minibroker_protocol.errors import ErrorCode

A = alter_client_quotas.RESPONSE
Changes = list[tuple[Entity, dict[str, float | None]]]  # entity -> key -> value, None = removed


def _entity_data(entry: AlterClientQuotasRequest.EntryData) -> list[AlterClientQuotasResponse.EntityData]:
    return [A.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]


def plan(req: AlterClientQuotasRequest) -> tuple[Changes, AlterClientQuotasResponse]:
    results = []
    changes: Changes = []
    for entry in req.entries:
        code, message = 0, None
        try:
            entity = make_entity([(e.entity_type, e.entity_name) for e in entry.entity])
            ops: dict[str, float | None] = {}
            for op in entry.ops:
                if op.key in ops:
                    raise QuotaError(ErrorCode.INVALID_REQUEST, f"Duplicate quota key {op.key} not updated")
                if op.remove:
                    check_value(entity, op.key, 1.0)  # the key must exist for this entity type
                    ops[op.key] = None
                else:
                    check_value(entity, op.key, op.value)
                    ops[op.key] = op.value
            changes.append((entity, ops))
        except QuotaError as e:
            code, message = e.code, e.message
        results.append(A.EntryData(error_code=code, error_message=message, entity=_entity_data(entry)))
    return changes, A(throttle_time_ms=0, entries=results)


def refused(req: AlterClientQuotasRequest, code: int, message: str) -> AlterClientQuotasResponse:
    """ALTER_CONFIGS on the cluster refused: every entry answers it."""
    return A(throttle_time_ms=0, entries=[A.EntryData(error_code=code, error_message=message,
                                                      entity=_entity_data(entry)) for entry in req.entries])
