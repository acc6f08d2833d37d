"""InitProducerId: v0-5.

Behavior:
- Without a transactional id (an idempotent producer) the answer is a fresh producer id with
  epoch 0, whatever producer id and epoch the request carries: Kafka "blindly accepts" these
  (TransactionCoordinator.handleInitProducerId), and a KIP-360 client asking to bump the epoch of
  an idempotent producer gets a new id instead. Ids come from the broker's ProducerIdManager
  (minibroker/coordinator/txn/producer_id_manager.py) and never repeat.
- With a transactional id the transaction coordinator answers (epoch bump on re-init, fencing
  and aborting an open transaction first, KIP-360 recovery); an empty transactional id is
  INVALID_REQUEST, a timeout above transaction.max.timeout.ms INVALID_TRANSACTION_TIMEOUT.
- A producer id without an epoch, or the reverse, is INVALID_REQUEST (KafkaApis).

Version notes: v1 same as v0 (throttling); v2 flexible; v3 producer id and epoch in the request
(KIP-360); v4 PRODUCER_FENCED is answered as such (older versions get INVALID_PRODUCER_EPOCH);
v5 only marks clients that can handle TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import init_producer_id
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

R = init_producer_id.RESPONSE


def _error(code: int, version: int) -> init_producer_id.InitProducerIdResponse:
    if code == ErrorCode.PRODUCER_FENCED and version < 4:
        code = ErrorCode.INVALID_PRODUCER_EPOCH  # older clients do not know PRODUCER_FENCED
    return R(error_code=code, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)


@handles(init_producer_id.API, "0-5")
async def handle_init_producer_id(ctx: RequestContext, req: init_producer_id.InitProducerIdRequest) -> init_producer_id.InitProducerIdResponse:
    services = ctx.services
    v = ctx.version
    pid, epoch = (req.producer_id, req.producer_epoch) if v >= 3 else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return _error(ErrorCode.INVALID_REQUEST, v)
    if denied := authz.init_producer_id_denied(ctx, req.transactional_id):
        return _error(denied, v)
    if req.transactional_id is None:
        try:
            return R(error_code=0, producer_id=services.producer_ids.generate_producer_id(), producer_epoch=0)
        except KafkaError as e:
            return _error(e.code, v)
        except OSError:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, v)
    coordinator = services.txn_coordinator
    if coordinator is None or not coordinator.active:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE, v)
    expected = None if pid == NO_PRODUCER_ID else (pid, epoch)
    code, new_pid, new_epoch = await coordinator.init_producer_id(req.transactional_id, req.transaction_timeout_ms,
                                                                  expected)
    if code:
        return _error(code, v)
    return R(error_code=0, producer_id=new_pid, producer_epoch=new_epoch)
