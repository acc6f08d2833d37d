"""Produce: v0-13.

Behavior:
- Each partition's records go to storage as the bytes that arrived: the log validates every batch
  from its header (length, magic, CRC-32C, record count, size against max.message.bytes), assigns
  offsets by rewriting the base offset, and appends.
- Before that, each client v2 batch's records are checked, as Kafka's LogValidator reads them with
  DefaultRecord.readFrom (protocol.records.validate): exactly recordsCount records ending at the
  batch's end, and every field of every record well-formed (else INVALID_RECORD); a compressed batch
  is decompressed for it (undecompressable: UNKNOWN_SERVER_ERROR, as Kafka answers); on a compacted
  topic every record needs a key (INVALID_RECORD with, from v8, each keyless record's index in
  record_errors). Runs of equal-size records are checked by layout with slice compares in C; no
  record is decoded into objects. The coordinators' own writes do not come through here.
- A batch is decoded and rebuilt only when the topic's compression.type names a codec other than
  the batch's (seed 002: the broker recompresses only then, and loses zero-copy for it).
- From v3, a partition's data must be exactly one RecordBatch v2, and zstd needs v7, as Kafka's
  ProduceRequest.validateRecords requires (INVALID_RECORD / UNSUPPORTED_COMPRESSION_TYPE).
- acks: 0 gets no response at all (and an error closes the connection, as Kafka does, so the client
  notices); 1 and -1 are answered after the append. This is a single-replica broker: the ISR is
  {this broker}, so acks=-1 is acks=1, except that min.insync.replicas > 1 cannot be met
  (NOT_ENOUGH_REPLICAS).
- With flush.messages=1 (the fsync-per-append setting) the fsync happens, off the event loop,
  before the response is sent.
- Appends wake long-polling fetches on the partition.
- Old formats (issue 7): a MessageSet v0/v1 is validated (CRC-32, sizes, wrapper/inner offsets)
  and up-converted to RecordBatch v2, unless the topic's message.format.version keeps magic 0/1
  on disk; then newer producers' batches are down-converted instead (minibroker.handlers.legacy).

Version notes: v0 MessageSet (magic 0; the seeds' Produce); v1 throttle time in the response; v2
magic 1 (timestamps) and the log append time in the response; v3 adds the transactional id and
requires RecordBatch v2; v5 log start offset in the response; v7 zstd; v8 per-batch record errors
and an error message; v9 flexible; v10 leader hints; v11 TRANSACTION_ABORTABLE; v12 lets a transaction's
produce add its partitions implicitly (KIP-890 part 2), but only once the broker finalizes the feature
transaction.version >= 2; we do not, so clients keep sending AddPartitionsToTxn (Kafka's Java producer and
franz-go cap a transactional Produce at v11 without that feature) and v12 is v11 here; v13 names topics by
topic id (KIP-516), an unknown id being UNKNOWN_TOPIC_ID, and the response echoes the id. Kafka 4.0 removed
v0-2 (KIP-896) but still advertises them because librdkafka misbehaves otherwise (KAFKA-18659);
Kafka never checked which magic a v0-2 request carries, and neither do we.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from minibroker.coordinator.transaction_coordinator import check_transactional_produce
from minibroker.handlers import legacy
from minibroker.handlers.registry import RequestContext, handles
from protocol.apis import produce
from protocol.errors import ErrorCode, KafkaError
from protocol.records.batch import LOG_OVERHEAD, V2_HEADER_SIZE, InvalidBatch, iter_batches
from protocol.records.validate import RecordValidationError, validate_records

log = logging.getLogger("minibroker.produce")
R = produce.RESPONSE
_PartitionResponse = R.PartitionProduceResponse  # looked up once: built per partition
_TopicResponse = R.TopicProduceResponse
ZSTD = 4  # compression codec id in a batch's attributes
_MIN_ENTRY_SIZE = 14  # Kafka: LegacyRecord.RECORD_OVERHEAD_V0
_I32 = struct.Struct(">i")


@handles(produce.API, "0-13")
async def handle_produce(ctx: RequestContext, req: Any) -> Any:
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
                records = _conform(topic, records, ctx.version, lg.config, f"{name}-{pd.index}")
                if ctx.version >= 3:  # a transaction's first write to a partition is verified (KIP-890)
                    check_transactional_produce(services.txn_coordinator, req.transactional_id, records, name, pd.index, lg,
                                                ctx.version)
                info = await services.replica_manager.append_async(lg, records)
                pr.base_offset = info.first_offset
                pr.log_append_time_ms = info.log_append_time
                pr.log_start_offset = info.log_start_offset
            except KafkaError as e:
                failed = True
                pr.error_code = e.code
                pr.error_message = e.message
            except RecordValidationError as e:  # Kafka: RecordValidationException, per record from v8
                failed = True
                pr.error_code = ErrorCode.INVALID_RECORD
                pr.error_message = str(e)
                if topic is not None:  # always, past the checks above
                    pr.log_start_offset = topic.partitions[pd.index].log_start_offset  # as Kafka reports it
                if ctx.version >= 8:
                    pr.record_errors = [R.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                        for i, m in e.record_errors]
            except InvalidBatch as e:  # from the record walk, or decoding for recompression or conversion
                failed = True
                pr.error_code = ErrorCode[e.error]
                pr.error_message = str(e)
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


def _conform(topic: Any, records: Any, version: int, config: Any, where: str) -> Any:
    """Validate the producer's records, then bring the batches to what the topic requires: its stored
    magic (2 unless message.format.version says otherwise), and its compression.type if set."""
    wanted = topic.config.get("compression.type", "producer")
    if version >= 3:
        views = _validate_v3(records, version)  # exactly one v2 batch: one pass over the data
        magics = {2}
    else:
        views = None
        magics = legacy.entry_magics(records)
    if magics == {2}:  # before any conversion, which would otherwise be the first to trip on bad records
        _check_records(views if views is not None else iter_batches(records), config, where, config.compact)
    stored = legacy.stored_magic(topic)
    if stored != 2 or magics - {2}:
        out = legacy.conform_produce(records, magics=magics, stored=stored, compression_type=wanted,
                                     log_append_time=topic.config.get("message.timestamp.type") == "LogAppendTime")
        if stored == 2 and 2 not in magics and config.compact:  # up-converted v0/v1: the keys are still to check
            _check_records(iter_batches(out), config, where, True)
        return out
    if wanted in ("producer", None):
        return records
    from protocol.records.convert import CODEC_BY_NAME, recompress

    codec = CODEC_BY_NAME[wanted]
    if all(view.compression == codec for view in (views if views is not None else iter_batches(records))):
        return records
    return recompress(records, codec)


def _check_records(views: Any, config: Any, where: str, require_keys: bool) -> None:
    """Kafka's LogValidator record loop for client appends only (the coordinators and replication
    append through the log directly): each v2 batch must hold exactly its recordsCount records, and
    on a compacted topic each record needs a key. Batches the log refuses from their header anyway
    (too large, incomplete, no records, control, base offset not 0) are left to it, so that its
    answer, which Kafka gives first, is the one sent."""
    for view in views:
        if (view.magic != 2 or view.batch_length < V2_HEADER_SIZE - LOG_OVERHEAD or not view.is_complete()
                or view.size > config.max_message_bytes or view.records_count <= 0 or view.is_control
                or view.base_offset != 0):
            continue
        validate_records(view, require_keys=require_keys, where=where)


def _validate_v3(records: Any, version: int) -> list[Any]:
    """Kafka's ProduceRequest.validateRecords: from v3 a partition carries exactly one batch, of
    magic 2, and a zstd batch needs v7 (KIP-110: older clients could not read it back)."""
    _check_entry_sizes(records)
    try:
        views = list(iter_batches(records))
    except InvalidBatch as e:
        raise KafkaError(ErrorCode[e.error], str(e)) from None
    if not views:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce requests with version {version} must have at least one record batch per partition")
    if views[0].magic != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   "contain record batches with magic version 2")
    if version < 7 and views[0].compression == ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if len(views) > 1:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   "contain exactly one record batch per partition")
    return views


def _check_entry_sizes(records: Any) -> None:
    """Kafka's ByteBufferLogInputStream.nextBatchSize over the entries: a size below the smallest
    entry (14, a v0 message) or a magic outside 0-2 is CORRUPT_MESSAGE; a partial last entry ends the
    data quietly (so a request whose only entry is partial has no batch at all)."""
    end = len(records)
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        size = _I32.unpack_from(records, pos + 8)[0]
        if size < _MIN_ENTRY_SIZE:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                             f"Record size {size} is less than the minimum record overhead ({_MIN_ENTRY_SIZE})")
        if end - pos < LOG_OVERHEAD + 5:
            return
        magic = struct.unpack_from(">b", records, pos + 16)[0]
        if magic < 0 or magic > 2:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
        if pos + LOG_OVERHEAD + size > end:
            return
        pos += LOG_OVERHEAD + size
