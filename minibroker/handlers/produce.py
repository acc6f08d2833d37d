"""Produce: v0-13.

Behavior:
- Each partition's records are checked once, by the log's validator (storage.log_validator, Kafka's
  LogValidator): from v3 exactly one RecordBatch v2 and zstd only from v7 (Kafka's
  ProduceRequest.validateRecords: INVALID_RECORD / UNSUPPORTED_COMPRESSION_TYPE); every field of
  every record of a client batch, as Kafka reads them with DefaultRecord.readFrom
  (protocol.records.validate; INVALID_RECORD, an undecompressable batch UNKNOWN_SERVER_ERROR as
  Kafka answers; on a compacted topic each keyless record's index in record_errors from v8); each
  batch header (length, magic, CRC-32C, record count, size against max.message.bytes, base offset
  0, no control batch, timestamps). No record is decoded into objects; offsets are assigned by
  rewriting the base offset in the request's own bytes. The coordinators' own writes do not come
  through here.
- A batch is decoded and rebuilt only when the topic's compression.type names a codec other than
  the batch's (seed 002: the broker recompresses only then, and loses zero-copy for it), or its
  format must change (protocol.records.convert).
- A transactional batch's partition is verified (KIP-890) once the records are in the topic's
  format, before their headers are checked, as this handler always answered.
- acks: 0 gets no response at all (and an error closes the connection, as Kafka does, so the client
  notices); 1 and -1 are answered after the append. This is a single-replica broker: the ISR is
  {this broker}, so acks=-1 is acks=1, except that min.insync.replicas > 1 cannot be met
  (NOT_ENOUGH_REPLICAS).
- With flush.messages=1 (the fsync-per-append setting) the fsync happens, off the event loop,
  before the response is sent.
- Appends wake long-polling fetches on the partition.
- Old formats (issue 7): a MessageSet v0/v1 is validated (CRC-32, sizes, wrapper/inner offsets)
  and up-converted to RecordBatch v2, unless the topic's message.format.version keeps magic 0/1
  on disk; then newer producers' batches are down-converted instead (protocol.records.convert).

Version notes: v0 MessageSet (magic 0; the seeds' Produce); v1 throttle time in the response; v2
magic 1 (timestamps) and the log append time in the response; v3 adds the transactional id and
requires RecordBatch v2; v5 log start offset in the response; v7 zstd; v8 per-batch record errors
and an error message; v9 flexible; v10 leader hints; v11 TRANSACTION_ABORTABLE; v12 lets a transaction's
produce add its partitions implicitly (KIP-890 part 2), which it does here since the broker finalizes
transaction.version 2 (minibroker/features.py; the Java producer 4.x then stops sending
AddPartitionsToTxn); v13 names topics by
topic id (KIP-516), an unknown id being UNKNOWN_TOPIC_ID, and the response echoes the id. Kafka 4.0 removed
v0-2 (KIP-896) but still advertises them because librdkafka misbehaves otherwise (KAFKA-18659);
Kafka never checked which magic a v0-2 request carries, and neither do we.
"""

from __future__ import annotations

import functools
import logging

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from protocol.apis import produce
from protocol.errors import ErrorCode, KafkaError
from protocol.records.validate import RecordValidationError

log = logging.getLogger("minibroker.produce")
R = produce.RESPONSE
_PartitionResponse = R.PartitionProduceResponse  # looked up once: built per partition
_TopicResponse = R.TopicProduceResponse


@handles(produce.API, "0-13")
async def handle_produce(ctx: RequestContext, req: produce.ProduceRequest) -> produce.ProduceResponse | None:
    services = ctx.services
    acks = req.acks
    responses = []
    failed = False
    for td in req.topic_data:
        parts = []
        if ctx.version >= 13:  # KIP-516: the topic comes by id; its name is only ours to know
            topic = services.topics.by_id(td.topic_id)
            name = topic.name if topic is not None else ""
        else:
            topic = services.topics.get(td.name)
            name = td.name
        for pd in td.partition_data:
            pr = _PartitionResponse(index=pd.index, error_code=0, base_offset=-1)
            try:
                if acks not in (-1, 0, 1):
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
                authz.require_produce(ctx, req.transactional_id if ctx.version >= 3 else None, name)
                if topic is None and ctx.version >= 13:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
                if topic is None or pd.index not in topic.partitions:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                if topic.is_internal:
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                     f"Cannot append to internal topic {topic.name}")
                if acks == -1 and topic.config.get("min.insync.replicas", 1) > 1:
                    raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                     "The size of the current ISR 1 is insufficient to satisfy the "
                                     f"min.isr requirement of {topic.config['min.insync.replicas']}")
                records = pd.records
                if records is None or len(records) == 0:
                    raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records")
                lg = topic.partitions[pd.index]
                verify = None
                if ctx.version >= 3:  # a transaction's first write to a partition is verified (KIP-890)
                    # here, not at the top: the transaction coordinator is not imported at start (issue 22)
                    from minibroker.coordinator.transaction_coordinator import check_transactional_produce

                    verify = functools.partial(check_transactional_produce, services.txn_coordinator,
                                               req.transactional_id, topic=name, partition=pd.index, lg=lg,
                                               version=ctx.version)
                # every check of the log's, once (storage.log_validator), the verification among them
                validated = lg.validate(records, request_version=ctx.version, verify=verify)
                info = await services.replica_manager.append_async(lg, validated)
                pr.base_offset = info.first_offset
                pr.log_append_time_ms = info.log_append_time
                pr.log_start_offset = info.log_start_offset
            except KafkaError as e:  # InvalidBatch and RecordValidationError are KafkaErrors with their code
                failed = True
                pr.error_code = e.code
                pr.error_message = e.message
                if isinstance(e, RecordValidationError):
                    if topic is not None:  # always, past the checks above
                        pr.log_start_offset = topic.partitions[pd.index].log_start_offset  # as Kafka reports it
                    if ctx.version >= 8:  # Kafka: RecordErrors, from v8
                        pr.record_errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                            for i, m in e.record_errors]
            except OSError as e:
                failed = True
                log.error("append to %s-%d failed: %s", name, pd.index, e)
                pr.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                pr.error_message = str(e)
            parts.append(pr)
        responses.append(_TopicResponse(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    if acks == 0:
        if failed and ctx.connection is not None:
            ctx.connection.close("error on an acks=0 produce")
        return None
    return R(responses=responses)
