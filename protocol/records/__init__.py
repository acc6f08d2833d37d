"""Record data in Kafka's formats.

    batch        header view of any entry (v2 batch or v0/v1 message), in-place rewrites; what the
                 broker and storage use on the hot path
    compression  the codecs (gzip, xerial snappy, lz4 frame with the KAFKA-3160 quirk, zstd), bounded
    v2           RecordBatch v2: records, build/decode, control records (transaction markers)
    legacy       MessageSet v0/v1: messages, wrappers, validation, offset assignment, conversions
    dump         summaries and DumpLogSegments-style lines for trace and dump tools
    xxhash32     the LZ4 frame descriptor checksum

Nothing but the compiled modules' path hook is imported here, so that importing
`minibroker_protocol.records.batch` does not load the codecs.
"""

from minibroker_protocol.compiled import extend_path

# the compiled twins of the hot modules first, when built and current (minibroker_protocol.compiled)
__path__ = extend_path(__path__, __name__)
