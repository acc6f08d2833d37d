"""Broker-side schema validation (Confluent Server's confluent.key.schema.validation and
confluent.value.schema.validation topic keys): a produced record's key or value must be framed as
Confluent's serializers frame it, magic byte 0 then a 4-byte big-endian schema id, with an id that
the registry holds under the topic's subject by the topic name strategy (<topic>-key,
<topic>-value; soft-deleted versions count: data written with them stays readable).

Theory of operation. The ReplicaManager calls `SchemaValidator` before the append, only for the
partitions of topics that set one of the keys (a flag on the Partition: other topics pay one
attribute test per produced partition). It reads, per record, the varints up to the key and value
and their first five bytes, in the request's own bytes (a compressed batch is decompressed once,
as the log validator does too); nothing is decoded into objects. A batch whose structure it cannot
walk is left to the log validator, which refuses it with Kafka's own message. Null keys and values
(tombstones, keyless records) pass: there is nothing to frame. Refused records are reported as
Kafka reports record errors (RecordValidationException: INVALID_RECORD with each record's batch
index and reason, returned by Produce v8+), and the whole request's partition is not appended.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import InvalidBatch, iter_batches
from minibroker_protocol.records.validate import RecordValidationError, record_section

MAGIC_BYTE = 0
FRAME = 5  # magic byte + schema id


def _varint(b: bytes | memoryview, p: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at p: (value, position after it)."""
    raw = shift = 0
    while True:
        byte = b[p]
        p += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


class SchemaValidator:
    """Checks produced records against the ids `known_ids(subject)` returns."""

    def __init__(self, known_ids: Callable[[str], Collection[int]]) -> None:
        self.known_ids = known_ids

    def __call__(self, topic: str, partition: int, records: bytes | bytearray | memoryview, *, key: bool,
                 value: bool) -> None:
        key_ids = self.known_ids(f"{topic}-key") if key else None
        value_ids = self.known_ids(f"{topic}-value") if value else None
        refused: list[tuple[int, str]] = []
        index = 0
        try:
            for view in iter_batches(records):
                if view.magic != 2:
                    raise KafkaError(ErrorCode.INVALID_RECORD, f"Topic {topic} validates record schemas, which needs "
                                                               f"RecordBatch v2 (this batch has magic {view.magic})")
                body = record_section(view)
                p = 0
                for _ in range(view.records_count):
                    # one-byte varints (most lengths and sizes) inline: this loop is the cost per record
                    b = body[p]
                    if b < 0x80:
                        length, p = (b >> 1) ^ -(b & 1), p + 1
                    else:
                        length, p = _varint(body, p)
                    end = p + length
                    q = p + 1  # past the attributes
                    while body[q] & 0x80:  # timestampDelta: skipped, not decoded
                        q += 1
                    q += 1
                    while body[q] & 0x80:  # offsetDelta
                        q += 1
                    q += 1
                    b = body[q]
                    if b < 0x80:
                        key_len, q = (b >> 1) ^ -(b & 1), q + 1
                    else:
                        key_len, q = _varint(body, q)
                    if key_ids is not None and key_len >= 0:
                        reason = _check(body, q, key_len, key_ids, f"{topic}-key")
                        if reason:
                            refused.append((index, f"the key {reason} (confluent.key.schema.validation)"))
                    q += max(key_len, 0)
                    b = body[q]
                    if b < 0x80:
                        value_len, q = (b >> 1) ^ -(b & 1), q + 1
                    else:
                        value_len, q = _varint(body, q)
                    if value_ids is not None and value_len >= 0:
                        reason = _check(body, q, value_len, value_ids, f"{topic}-value")
                        if reason:
                            refused.append((index, f"the value {reason} (confluent.value.schema.validation)"))
                    p = end
                    index += 1
        except (InvalidBatch, ValueError, IndexError):
            if not refused:
                return  # a batch the log validator will refuse with Kafka's own message
        if refused:
            raise RecordValidationError([(i, f"Record {i} of {topic}-{partition}: {why}") for i, why in refused])


def _check(body: bytes | memoryview, start: int, length: int, ids: Collection[int], subject: str) -> str | None:
    """Why the field at body[start:start+length] is not framed with a known id (None: it is)."""
    if length < FRAME or body[start] != MAGIC_BYTE:
        return "does not start with the magic byte 0 and a schema id (Confluent's wire format)"
    schema_id = int.from_bytes(body[start + 1:start + FRAME], "big")
    if schema_id not in ids:
        return f"has schema id {schema_id}, which the schema registry does not hold under subject '{subject}'"
    return None
