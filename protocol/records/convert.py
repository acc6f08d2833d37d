"""Recompression of RecordBatch v2: the one case the produce path decodes records.

Seed 002: the broker keeps a producer's batch as it arrived unless the topic's compression.type
names another codec (or a format conversion is needed); then it must decompress and compress
again, and the zero-copy property is lost for that data. Offsets, timestamps, producer fields,
attributes other than the codec, and every record are kept (Kafka: LogValidator with a
target codec).
"""

from __future__ import annotations

from protocol.records.batch import TRANSACTIONAL_BIT, iter_batches
from protocol.records.compression import Codec
from protocol.records.v2 import LOG_APPEND_TIME, build_batch, decode_batch

# compression.type values (topic or broker config) -> codec; "producer" keeps what came.
CODEC_BY_NAME = {
    "uncompressed": Codec.NONE, "none": Codec.NONE, "gzip": Codec.GZIP, "snappy": Codec.SNAPPY,
    "lz4": Codec.LZ4, "zstd": Codec.ZSTD,
}


def recompress(records, codec: int, *, max_size: int = 64 * 1024 * 1024) -> bytes:
    """Every v2 batch in `records` rebuilt with `codec`; batches already in it are copied as is."""
    out = bytearray()
    for view in iter_batches(records):
        raw = memoryview(records)[view.pos:view.pos + view.size]
        if view.compression == codec or view.is_control:
            out += raw
            continue
        b = decode_batch(records, view.pos, max_size=max_size)
        out += build_batch(
            [r.to_record() for r in b.records],
            base_offset=b.base_offset,
            compression=codec,
            timestamp_type=b.timestamp_type,
            base_timestamp=b.base_timestamp,
            max_timestamp=b.max_timestamp if b.timestamp_type == LOG_APPEND_TIME else None,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence,
            is_transactional=bool(b.attributes & TRANSACTIONAL_BIT),
            partition_leader_epoch=b.partition_leader_epoch,
            last_offset_delta=b.last_offset_delta,
        )
    return bytes(out)
