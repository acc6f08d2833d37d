"""minibroker_storage.log_validator: one pass over a Produce partition's batches, in the order the answers
are given, headers read once, offsets assigned in the request's own bytes."""

from __future__ import annotations

import pytest

from minibroker_protocol.compiled import compiled_in_use
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records import batch as batch_module
from minibroker_protocol.records.batch import BatchView, InvalidBatch
from minibroker_protocol.records.compression import Codec
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_protocol.records.validate import RecordValidationError
from minibroker_storage import log_validator
from minibroker_storage.config import LogConfig
from minibroker_storage.log_validator import assign_offsets, stored_magic, validate

from .helpers import SEED_TS, batch

NOW = SEED_TS + 10_000


def produce(records, config: LogConfig | None = None, version: int = 9, **kw):
    return validate(records, config or LogConfig(), now_ms=NOW, request_version=version, where="t-0", **kw)


def keyless_and_keyed() -> bytes:
    return build_batch([Record(offset_delta=0, key=None, value=b"a"), Record(offset_delta=1, key=b"k", value=b"b"),
                        Record(offset_delta=2, key=None, value=b"c")], base_timestamp=SEED_TS)


def malformed_records(b: bytes) -> bytearray:
    """The batch with its record count one too high (the walk finds a premature EOF), CRC fixed."""
    out = bytearray(b)
    out[57:61] = (int.from_bytes(out[57:61], "big") + 1).to_bytes(4, "big")
    out[23:27] = (int.from_bytes(out[23:27], "big") + 1).to_bytes(4, "big")  # lastOffsetDelta follows
    v = BatchView(out)
    out[17:21] = v.compute_crc().to_bytes(4, "big")
    return out


def test_keyless_records_on_a_compacted_topic_are_named_per_record():
    with pytest.raises(RecordValidationError) as e:
        produce(keyless_and_keyed(), LogConfig(cleanup_policy="compact"))
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in e.value.record_errors] == [0, 2]


def test_a_header_error_wins_over_the_records_errors():
    bad = malformed_records(batch(3))
    bad[-1] ^= 0xFF  # and now the CRC is wrong too
    with pytest.raises(InvalidBatch) as e:
        produce(bad)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


def test_the_records_errors_win_over_the_timestamp():
    config = LogConfig(message_timestamp_before_max_ms=1000)
    old = batch(3, base_ts=NOW - 5000)
    with pytest.raises(KafkaError) as e:
        produce(old, config)
    assert e.value.code == ErrorCode.INVALID_TIMESTAMP
    with pytest.raises(KafkaError) as e:
        produce(malformed_records(old), config)
    assert (e.value.code, e.value.message) == (ErrorCode.INVALID_RECORD,
                                               "Incorrect declared batch size, premature EOF reached")


@pytest.mark.parametrize(("records", "version", "code"), [
    (batch(1) + batch(1), 9, ErrorCode.INVALID_RECORD),  # exactly one batch from v3
    (batch(1, compression=Codec.ZSTD), 6, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),  # zstd from v7
    (b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 5, 9, ErrorCode.CORRUPT_MESSAGE),  # entry below 14 bytes
])
def test_the_requests_own_checks(records, version, code):
    with pytest.raises(KafkaError) as e:
        produce(records, version=version)
    assert e.value.code == code


@pytest.mark.skipif(compiled_in_use(), reason="a compiled module binds BatchView when it is built: the pure "
                    "modules' run (make test-pure) counts the reads")
def test_each_header_is_read_once(monkeypatch):
    reads = []

    class Counting(BatchView):
        def __init__(self, buf, pos=0):
            reads.append(pos)
            super().__init__(buf, pos)

    monkeypatch.setattr(batch_module, "BatchView", Counting)
    monkeypatch.setattr(log_validator, "BatchView", Counting)
    produce(batch(5))
    assert reads == [0]


def test_offsets_are_assigned_in_the_requests_own_bytes():
    request = bytearray(batch(4))
    mv = memoryview(request)
    validated = produce(mv)
    plan = assign_offsets(validated, LogConfig(), first_offset=100, leader_epoch=3, now_ms=NOW)
    assert plan.data is mv  # no copy
    assert BatchView(request).base_offset == 100 and BatchView(request).partition_leader_epoch == 3
    assert (plan.first_offset, plan.next_offset, plan.num_records) == (100, 104, 4)
    BatchView(request).validate()  # baseOffset and the epoch are outside the CRC


def test_read_only_bytes_are_copied_once():
    b = batch(2)
    plan = assign_offsets(validate(b, LogConfig(), now_ms=NOW), LogConfig(), first_offset=7, leader_epoch=0,
                          now_ms=NOW)
    assert BatchView(plan.data).base_offset == 7 and BatchView(b).base_offset == 0


TXN = {"producer_id": 5, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}


def test_verify_sees_the_records_in_the_logs_codec_before_the_header_checks():
    seen = []

    def verify(views):
        seen.extend(v.compression for v in views)
        raise KafkaError(ErrorCode.INVALID_TXN_STATE)

    config = LogConfig(compression_type="gzip", message_timestamp_before_max_ms=1000)
    with pytest.raises(KafkaError) as e:
        produce(batch(3, base_ts=NOW - 5000, **TXN), config, verify=verify)  # a timestamp the log would refuse
    assert e.value.code == ErrorCode.INVALID_TXN_STATE and seen == [Codec.GZIP]


def test_verify_gets_the_parsed_headers_of_transactional_batches_only():
    seen: list[list[BatchView]] = []
    plain = batch(3)
    produce(plain, verify=seen.append)
    assert seen == []  # a plain produce: no verification, no transaction coordinator
    txn = batch(3, **TXN)
    validated = produce(txn, verify=seen.append)
    (views,) = seen
    assert [(v.producer_id, v.producer_epoch) for v in views] == [(5, 0)]
    assert views[0] is validated.views[0]  # the header parsed once, for the request, the check and the log


def test_the_stored_magic_is_read_in_one_place():
    assert stored_magic(LogConfig()) == 2
    assert stored_magic(LogConfig(record_version=1)) == 1


def test_invalid_batch_carries_its_code():
    e = InvalidBatch("bad", ErrorCode.INVALID_RECORD)
    assert isinstance(e, KafkaError) and isinstance(e, ValueError)
    assert (e.code, e.message, str(e)) == (ErrorCode.INVALID_RECORD, "bad", "bad")
