"""dump-log: Kafka's kafka-dump-log.sh layout for every file of a partition, against seed 002's
76-byte batch, seed 003's segment and index, real clients' __consumer_offsets records, and damaged
files."""

from __future__ import annotations

import io
import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import crc32c
import pytest
from confluent_kafka import Consumer, Producer

from minibroker.testing import BrokerThread
from minibroker.tools import dump_log
from minibroker_protocol.records import legacy, v2
from tests.helpers import ROOT, TEST_OVERRIDES
from tests.storage.helpers import SEED_INDEX, SEED_TS, write_seed_segment

SEG = "00000000000000000000"


def run(*argv: str) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    rc = dump_log.main(list(argv), out=out, err=err)
    return out.getvalue(), err.getvalue(), rc


def partition_dir(tmp_path: Path, *batches: bytes) -> Path:
    d = tmp_path / "demo-0"
    d.mkdir()
    (d / f"{SEG}.log").write_bytes(b"".join(batches))
    return d


def seed_002_batch(offset: int = 0, ts: int = 1700000000000) -> bytes:
    return v2.build_batch([v2.Record(key=b"key", value=b"value")], base_offset=offset, base_timestamp=ts,
                          partition_leader_epoch=0)


def test_seed_002_record_as_kafka_prints_it(tmp_path):
    b = seed_002_batch()
    assert len(b) == 76  # seed 002: one record key="key" value="value" is 76 bytes in v2
    d = partition_dir(tmp_path, b)
    crc = crc32c.crc32c(b[21:])
    out, err, rc = run(str(d / f"{SEG}.log"), "--print-data-log")
    assert rc == 0 and err == ""
    assert out.splitlines() == [
        f"Dumping {d / SEG}.log",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: 1700000000000 size: 76 magic: 2 compresscodec: none crc: {crc} isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: [] "
        "key: key payload: value",
    ]


def test_seed_002_ten_small_records_make_a_191_byte_batch(tmp_path):
    recs = [v2.Record(offset_delta=i, value=b"abcdef") for i in range(10)]
    b = v2.build_batch(recs, base_timestamp=1, partition_leader_epoch=0)
    assert len(b) == 191
    d = partition_dir(tmp_path, b)
    out, _, _ = run(str(d / f"{SEG}.log"), "--deep-iteration")
    lines = out.splitlines()
    assert "lastOffset: 9 count: 10" in lines[2] and "size: 191" in lines[2]
    assert [ln.split(" CreateTime")[0] for ln in lines[3:]] == [f"| offset: {i}" for i in range(10)]
    assert "key:" not in out  # deep iteration alone prints no data


def test_seed_003_segment_index_and_timeindex(tmp_path):
    lg = write_seed_segment(tmp_path)
    lg.close()  # trims the indexes and appends the final time index entry, as a roll or shutdown does
    d = tmp_path / "hncscwc-0"
    out, err, rc = run(str(d / f"{SEG}.log"), str(d / f"{SEG}.index"), str(d / f"{SEG}.timeindex"),
                       "--layout", "classic")
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert lines[1] == "Starting offset: 0"  # the seed's header line in the classic layout
    masked = [re.sub(r"crc: \d+", "crc: C", ln) for ln in lines[2:4]]
    assert masked == [
        "baseOffset: 0 lastOffset: 14 count: 15 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 "
        f"CreateTime: {SEED_TS + 7} isvalid: true size: 15556 magic: 2 compresscodec: NONE crc: C",
        "baseOffset: 15 lastOffset: 29 count: 15 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 15556 "
        f"CreateTime: {SEED_TS + 8} isvalid: true size: 15556 magic: 2 compresscodec: NONE crc: C",
    ]
    i = lines.index(f"Dumping {d / SEG}.index")
    j = lines.index(f"Dumping {d / SEG}.timeindex")
    assert lines[i + 1:j] == [f"offset: {o} position: {p}" for o, p in SEED_INDEX]
    ts_entries = [tuple(map(int, re.fullmatch(r"timestamp: (\d+) offset: (\d+)", ln).groups())) for ln in lines[j + 1:]]
    assert ts_entries and all(a < b for (a, _), (b, _) in zip(ts_entries, ts_entries[1:], strict=False))
    assert ts_entries[-1][1] == 254  # the final entry: the segment's max timestamp at its last offset
    out, err, rc = run(str(d / f"{SEG}.index"), str(d / f"{SEG}.timeindex"), "--index-sanity-check")
    assert out.splitlines()[1] == f"{d / SEG}.index passed sanity check." and rc == 0
    assert out.splitlines()[3] == f"{d / SEG}.timeindex passed sanity check."


def test_index_entry_not_at_a_batch_end_is_reported(tmp_path):
    d = partition_dir(tmp_path, seed_002_batch(0), seed_002_batch(1), seed_002_batch(2))
    (d / f"{SEG}.index").write_bytes(struct.pack(">ii", 1, 76) + struct.pack(">ii", 5, 152))
    out, err, rc = run(str(d / f"{SEG}.index"))
    assert out.splitlines()[1:] == ["offset: 1 position: 76", "offset: 5 position: 152"]
    assert err.splitlines() == [f"Mismatches in :{(d / SEG).resolve()}.index", "  Index offset: 5, log offset: 2"]
    out, err, _ = run(str(d / f"{SEG}.index"), "--verify-index-only")
    assert out.splitlines()[1:] == [] and "Index offset: 5" in err


def test_trailing_garbage_and_gaps(tmp_path):
    d = partition_dir(tmp_path, seed_002_batch(0), seed_002_batch(5), b"\x00\x00\x00")
    out, err, _ = run(str(d / f"{SEG}.log"), "--deep-iteration")
    assert out.splitlines()[-1] == f"Found 3 invalid bytes at the end of {SEG}.log"
    assert err.splitlines() == [f"Non-consecutive offsets in {(d / SEG).resolve()}.log", "  0 is followed by 5"]


def test_corrupted_crc_is_shown_not_raised(tmp_path):
    b = bytearray(seed_002_batch())
    b[-1] ^= 0xFF
    d = partition_dir(tmp_path, bytes(b))
    out, _, rc = run(str(d / f"{SEG}.log"))
    assert rc == 0 and out.splitlines()[2].endswith("isvalid: false")


def test_legacy_messages_print_offset_lines(tmp_path):
    ms = bytearray(legacy.build_message_set([legacy.RecordData(7, 1234, b"k", b"v")], magic=1))
    crc = zlib.crc32(ms[16:]) & 0xFFFFFFFF  # v0/v1 CRC: from the magic byte to the end of the message
    assert struct.unpack_from(">I", ms, 12)[0] == crc
    bad = bytearray(legacy.build_message_set([legacy.RecordData(8, 1235, b"k", b"v")], magic=1))
    bad[-1] ^= 1
    d = partition_dir(tmp_path, bytes(ms), bytes(bad))
    out, _, _ = run(str(d / f"{SEG}.log"), "--print-data-log")
    lines = out.splitlines()
    assert lines[2].startswith("offset: 7 position: 0 CreateTime: 1234 size: ") and "magic: 1" in lines[2]
    # Kafka's own line, stray closing brace included
    assert lines[3] == f"| offset: 7 CreateTime: 1234 keySize: 1 valueSize: 1 isValid: true crc: {crc}}} key: k payload: v"
    assert lines[4].endswith("isvalid: false") and " isValid: false crc: " in lines[5]


def test_compressed_legacy_wrapper_prints_its_inner_messages(tmp_path):
    recs = [legacy.RecordData(i, 1000 + i, None, b"m%d" % i) for i in range(3)]
    ms = legacy.build_message_set(recs, magic=1, compression=1)
    d = partition_dir(tmp_path, ms)
    out, _, _ = run(str(d / f"{SEG}.log"), "--deep-iteration")
    lines = out.splitlines()
    assert lines[2].startswith("offset: 2 position: 0 ") and "compresscodec: gzip" in lines[2]
    inner = list(legacy.iter_deep(ms))
    assert lines[3:] == [f"| offset: {m.offset} CreateTime: {m.timestamp} keySize: -1 valueSize: 2 "
                         f"isValid: true crc: {m.crc}}}" for m in inner]


def test_consumer_offsets_decoded(tmp_path):
    with BrokerThread(tmp_path / "data", overrides={**TEST_OVERRIDES, "offsets.topic.num.partitions": 1}) as b:
        b.create_topic("orders")
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(3):
            p.produce("orders", b"v%d" % i)
        assert p.flush(10) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "billing", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe(["orders"])
        got = 0
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got += 1
                if got == 3:
                    c.commit(m, asynchronous=False)
                    break
        c.close()
        assert b.committed("billing", "orders") == 3
        data_dir = b.data_dir
        b.call(lambda broker: broker.get_log("__consumer_offsets", 0).flush())
        out, err, rc = run(str(data_dir / "__consumer_offsets-0" / f"{SEG}.log"), "--offsets-decoder")
    assert rc == 0, err
    pairs = [re.search(r" key: (.*) payload: (.*)$", ln).groups() for ln in out.splitlines() if " key: " in ln]
    commits = [(json.loads(k), json.loads(v)) for k, v in pairs if json.loads(k)["type"] == "1"]
    assert commits and commits[-1][0] == {"type": "1", "data": {"group": "billing", "topic": "orders", "partition": 0}}
    value = commits[-1][1]
    assert value["version"] == "3" and value["data"]["offset"] == 3 and value["data"]["leaderEpoch"] >= -1
    assert set(value["data"]) == {"offset", "leaderEpoch", "metadata", "commitTimestamp"}
    groups = [json.loads(v) for k, v in pairs if json.loads(k)["type"] == "2" and v != "<DELETE>"]
    stable = [g for g in groups if g["data"]["members"]]  # the last one is Empty: the consumer left
    member = stable[-1]["data"]["members"][0]
    assert stable[-1]["data"]["protocolType"] == "consumer" and not groups[-1]["data"]["members"]
    assert member["subscription"]["topics"] == ["orders"]
    assert member["assignment"]["assignedPartitions"] == [{"topic": "orders", "partitions": [0]}]


def test_offsets_decoder_reports_unknown_types_and_tombstones():
    r = dump_log.RecordSummary(5, 0, struct.pack(">h", 9) + b"x", b"v")
    assert dump_log.offsets_parser(r) == ("Unknown record type 9 at offset 5, skipping.", None)
    key = struct.pack(">h", 2) + struct.pack(">h", 1) + b"g"
    assert dump_log.offsets_parser(dump_log.RecordSummary(6, 0, key, None)) == (
        '{"type":"2","data":{"group":"g"}}', "<DELETE>")
    assert dump_log.offsets_parser(dump_log.RecordSummary(7, 0, struct.pack(">h", 1), b"")).__getitem__(0) \
        .startswith("Error at offset 7, skipping.")


def test_producer_snapshot(tmp_path):
    ps = pytest.importorskip("minibroker_storage.producer_state")
    from collections import deque

    e = ps.ProducerStateEntry(4000, 2, 0, 1700000000123, 17,
                              deque([ps.BatchMetadata(last_seq=9, last_offset=20, offset_delta=4, timestamp=1700000000123)]))
    path = tmp_path / "00000000000000000021.snapshot"
    ps.write_snapshot(path, [e], sync=False)
    out, err, rc = run(str(path))
    assert out.splitlines()[1] == ("producerId: 4000 producerEpoch: 2 coordinatorEpoch: 0 "
                                   "currentTxnFirstOffset: OptionalLong[17] lastTimestamp: 1700000000123 "
                                   "firstSequence: 5 lastSequence: 9 lastOffset: 20 offsetDelta: 4 "
                                   "timestamp: 1700000000123")
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    out, err, _ = run(str(path))
    assert out.splitlines()[1:] == [] and "CRC" in err


def test_txn_index(tmp_path):
    ti = pytest.importorskip("minibroker_storage.txn_index")
    path = tmp_path / f"{SEG}.txnindex"
    path.write_bytes(ti.AbortedTxn(4000, 3, 9, 10).to_bytes() + ti.AbortedTxn(4001, 12, 15, 16).to_bytes())
    out, _, _ = run(str(path))
    assert out.splitlines()[1:] == [
        "version: 0 producerId: 4000 firstOffset: 3 lastOffset: 9 lastStableOffset: 10",
        "version: 0 producerId: 4001 firstOffset: 12 lastOffset: 15 lastStableOffset: 16"]


def test_cli_dispatch_and_kafka_style_files_option(tmp_path):
    d = partition_dir(tmp_path, seed_002_batch())
    r = subprocess.run([sys.executable, "-m", "minibroker", "dump-log", "--files", f"{d / SEG}.log,{d / 'x.unknown'}"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stdout.splitlines()[0] == f"Dumping {d / SEG}.log"
    assert "size: 76" in r.stdout
    assert "no such file" in r.stderr and r.returncode == 1


def test_transaction_log_decoder(tmp_path):
    from minibroker_protocol import coordinator_records as cr
    from minibroker_protocol.codec import encode

    def prefixed(schema, version, obj):
        return struct.pack(">h", version) + bytes(encode(schema, version, obj))

    key = prefixed(cr.TRANSACTION_LOG_KEY, 0, cr.TRANSACTION_LOG_KEY(transactional_id="tx-1"))
    V = cr.TRANSACTION_LOG_VALUE
    value = prefixed(V, 0, V(producer_id=4000, producer_epoch=3, transaction_timeout_ms=60000, transaction_status=1,
                              transaction_partitions=[V.PartitionsSchema(topic="orders", partition_ids=[0, 2])],
                              transaction_last_update_timestamp_ms=1700000000000,
                              transaction_start_timestamp_ms=1700000000000))
    b = v2.build_batch([v2.Record(key=key, value=value), v2.Record(offset_delta=1, key=key, value=None),
                        v2.Record(offset_delta=2, key=struct.pack(">h", 5), value=b"")], base_timestamp=1)
    d = partition_dir(tmp_path, b)
    out, _, _ = run(str(d / f"{SEG}.log"), "--transaction-log-decoder")
    tails = [ln.split(" headerKeys: [] ", 1)[1] for ln in out.splitlines() if ln.startswith("| offset:")]
    # Kafka 4.x's decoder prints JSON, as for __consumer_offsets (checked against Kafka 4.4.0's
    # kafka-dump-log on this very file; tests/reference compares whole files)
    tails = [t.replace(f"at offset {i}, ", "at offset N, ") for i, t in enumerate(tails)]
    assert tails == [
        'key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: {"version":"0","data":{"producerId":4000,'
        '"producerEpoch":3,"transactionTimeoutMs":60000,"transactionStatus":"Ongoing","transactionPartitions":'
        '[{"topic":"orders","partitionIds":[0,2]}],"transactionLastUpdateTimestampMs":1700000000000,'
        '"transactionStartTimestampMs":1700000000000}}',
        'key: {"type":"0","data":{"transactionalId":"tx-1"}} payload: <DELETE>',
        "key: Unknown record type 5 at offset N, skipping.",
    ]


def test_group_metadata_json_is_kafkas(tmp_path):
    # The expected string is the one Kafka's DumpLogSegmentsTest.testOffsetsMessageParser asserts
    # for the same group (OffsetsMessageParser on a GroupMetadataValue v4 with the consumer protocol).
    from minibroker_protocol import coordinator_records as cr
    from minibroker_protocol.codec import encode

    sub_schema, assign_schema = dump_log.consumer_protocol_schemas()
    sub = struct.pack(">h", 3) + bytes(encode(sub_schema, 3, sub_schema(
        topics=["foo"], user_data=None, owned_partitions=[sub_schema.TopicPartition(topic="foo", partitions=[0])],
        generation_id=0, rack_id="rack")))
    assign = struct.pack(">h", 3) + bytes(encode(assign_schema, 3, assign_schema(
        assigned_partitions=[assign_schema.TopicPartition(topic="foo", partitions=[0])], user_data=None)))
    V = cr.GROUP_METADATA_VALUE

    def record(subscription: bytes, assignment: bytes) -> dump_log.RecordSummary:
        value = struct.pack(">h", 4) + bytes(encode(V, 4, V(
            protocol_type="consumer", generation=10, protocol="range", leader="member", current_state_timestamp=-1,
            members=[V.MemberMetadata(member_id="member", group_instance_id="instance", client_id="client",
                                      client_host="host", rebalance_timeout=1000, session_timeout=100,
                                      subscription=subscription, assignment=assignment)])))
        key = struct.pack(">h", 2) + struct.pack(">h", 5) + b"group"
        return dump_log.RecordSummary(0, 0, key, value)

    head = ('{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
            '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
            '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
            '"rebalanceTimeout":1000,"sessionTimeout":100,')
    assert dump_log.offsets_parser(record(sub, assign)) == (
        '{"type":"2","data":{"group":"group"}}',
        head + '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo",'
        '"partitions":[0]}],"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')
    # not the consumer protocol after all: the bytes stay, base64, as Kafka keeps them
    assert dump_log.offsets_parser(record(b"Subscription", b"Assignment"))[1] == (
        head + '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}')


def test_snapshot_and_txnindex_written_by_the_broker(tmp_path):
    """Real files: an idempotent producer's state in the .snapshot of a clean shutdown, and an
    aborted transaction in the .txnindex."""
    data = tmp_path / "data"
    with BrokerThread(data, overrides=dict(TEST_OVERRIDES)) as b:
        b.create_topic("idem")
        b.create_topic("txn")
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
        for i in range(3):
            p.produce("idem", b"v%d" % i)
            assert p.flush(10) == 0
        t = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-dump"})
        t.init_transactions(10)
        t.begin_transaction()
        t.produce("txn", b"never")
        t.produce("txn", b"seen")
        assert t.flush(10) == 0
        t.abort_transaction(10)
        txn_data = b.call(lambda broker: broker.get_log("txn", 0).read(0, 1 << 20).region.read_all())
    snaps = sorted((data / "idem-0").glob("*.snapshot"))
    assert snaps, "a clean shutdown writes a producer snapshot at the log end"
    out, err, rc = run(str(snaps[-1]))
    line = out.splitlines()[1]
    assert rc == 0 and err == ""
    assert re.fullmatch(r"producerId: \d+ producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
                        r"OptionalLong.empty lastTimestamp: \d+ firstSequence: 2 lastSequence: 2 lastOffset: 2 "
                        r"offsetDelta: 0 timestamp: \d+", line), line
    producer_id = struct.unpack_from(">q", txn_data, 43)[0]  # the producer id field of the first batch
    out, err, rc = run(str(data / "txn-0" / f"{SEG}.txnindex"))
    assert out.splitlines()[1:] == [
        f"version: 0 producerId: {producer_id} firstOffset: 0 lastOffset: 2 lastStableOffset: 3"]
