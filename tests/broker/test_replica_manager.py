"""The ReplicaManager is the one door to a partition's log (issue 28): handlers and the console
never import minibroker_storage.log nor call a Log's methods; a plain Produce never builds the transaction
coordinator; a transactional batch's header reaches the verification parsed once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig
from minibroker.partition import READ_COMMITTED
from minibroker.replica_manager import FetchPartition
from minibroker.server import BrokerServer
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import ControlType, Record, build_batch, build_control_batch
from minibroker_storage.append_origin import AppendOrigin
from minibroker_storage.clock import ManualClock

ROOT = Path(__file__).resolve().parents[2]
# what a handler or console module may not call: the Log's own API (minibroker_storage.log.Log) and the
# registry's way to a Log
LOG_ONLY = {"get_log", "validate", "append_as_leader", "append_async", "read", "delete_records_before",
            "end_offset_for_epoch", "producer_state", "maybe_flush", "latest_epoch"}


def _seam_modules() -> list[Path]:
    return sorted((ROOT / "minibroker" / "handlers").glob("*.py")) + sorted((ROOT / "minibroker" / "console").glob("*.py"))


@pytest.mark.parametrize("path", _seam_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_handlers_and_console_do_not_touch_a_log(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module != "minibroker_storage.log", f"{path.name}:{node.lineno} imports minibroker_storage.log"
        if isinstance(node, ast.Attribute) and node.attr in LOG_ONLY:
            # the console's segment inspector reads a segment file (FileRecords.read), not the Log;
            # DynamicBrokerConfig.validate and ConsumerGroupConfigs.validate are config checks
            text = ast.unparse(node)
            if text in ("seg.log.read", "dyn.validate", "ConsumerGroupConfigs.validate"):
                continue
            raise AssertionError(f"{path.name}:{node.lineno} calls {text}")


@pytest.fixture
def broker(tmp_path):
    config = BrokerConfig.load(None, [], host="127.0.0.1", port=0, data_dir=str(tmp_path / "d"))
    b = BrokerServer(config, clock=ManualClock())
    b.build()  # every component, no sockets (recovery and topics loaded)
    b.topics.create("t", 1)
    yield b
    b.log_manager.shutdown()


async def test_a_plain_produce_does_not_build_the_transaction_coordinator(broker):
    calls = []

    def verifier(batches, topic, partition, lg):
        calls.append(batches)
        raise AssertionError("not transactional: no verification")

    batch = build_batch([Record(key=b"k", value=b"v")], base_timestamp=broker.clock())
    (result,) = await broker.replica_manager.append_records([(("t", 0), batch)], required_acks=-1,
                                                            request_version=11, verifier=verifier)
    assert result.error is None and result.info is not None and result.info.first_offset == 0
    assert calls == []
    assert broker.coordinators._txn is None  # nothing built as a side effect


async def test_a_transactional_batch_is_verified_with_its_parsed_header(broker):
    seen = []

    def verifier(batches, topic, partition, lg):
        seen.append((topic, partition, [(v.producer_id, v.producer_epoch) for v in batches]))

    batch = build_batch([Record(key=b"k", value=b"v")], base_timestamp=broker.clock(), producer_id=7,
                        producer_epoch=1, base_sequence=0, is_transactional=True)
    (result,) = await broker.replica_manager.append_records([(("t", 0), batch)], required_acks=1,
                                                            request_version=11, verifier=verifier)
    assert result.error is None
    assert seen == [("t", 0, [(7, 1)])]


async def test_unknown_partition_and_fetch_through_the_replica_manager(broker):
    rm = broker.replica_manager
    (result,) = await rm.append_records([(("nope", 0), b"x")], required_acks=1, request_version=11)
    assert result.error is not None and result.error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    batch = build_batch([Record(key=b"k", value=b"v")], base_timestamp=broker.clock())
    await rm.append_records([(("t", 0), batch)], required_acks=1, request_version=11)
    reads = await rm.fetch_messages([FetchPartition("t", 0, 0, 1 << 20), FetchPartition("t", 5, 0, 1 << 20)],
                                    max_bytes=1 << 20, min_bytes=1, max_wait_ms=0, isolation_level=0)
    assert reads[0].error == 0 and reads[0].high_watermark == 1 and reads[0].records is not None
    assert reads[0].records.size == len(batch)  # a file region, not bytes read into Python
    assert reads[1].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and reads[1].high_watermark == -1


def test_the_metadata_cache_follows_the_registry(broker):
    cache = broker.metadata_cache
    image = cache.topic("t")
    assert image is not None and list(image.partitions) == [0]
    assert image.partitions[0].leader_id == broker.node_id and image.partitions[0].isr == (broker.node_id,)
    broker.topics.add_partitions(broker.topics["t"], 3)
    assert list(cache.topic("t").partitions) == [0, 1, 2]
    assert broker.replica_manager.get_partition("t", 2) is not None
    broker.topics.delete("t")
    assert cache.topic("t") is None and broker.replica_manager.get_partition("t", 0) is None


def test_a_read_committed_read_of_nothing_lists_no_aborted_transaction(broker):
    # Kafka's LocalLog answers a read at the fetch limit with an empty list and no look at the
    # transaction index (emptyFetchDataInfo): every parked read_committed fetch reads so. An
    # aborted transaction that spans the last stable offset is listed only with records.
    part = broker.replica_manager.get_partition("t", 0)
    ts = broker.clock()

    def txn(producer_id: int) -> bytes:
        return build_batch([Record(key=b"k", value=b"v")], base_timestamp=ts, producer_id=producer_id,
                           producer_epoch=0, base_sequence=0, is_transactional=True)

    part.append_records_to_leader(txn(1))  # offset 0: producer 1's transaction
    part.append_records_to_leader(txn(2))  # offset 1: producer 2's, left open
    part.append_records_to_leader(build_control_batch(ControlType.ABORT, producer_id=1, producer_epoch=0,
                                                      coordinator_epoch=0, timestamp=ts),
                                  origin=AppendOrigin.COORDINATOR)  # offset 2: producer 1 aborts
    at_lso = part.read(1, 1 << 20, READ_COMMITTED, True)
    assert (at_lso.last_stable_offset, at_lso.records, at_lso.aborted_transactions) == (1, None, [])
    from_start = part.read(0, 1 << 20, READ_COMMITTED, True)
    assert from_start.records is not None
    assert [(a.producer_id, a.first_offset) for a in from_start.aborted_transactions] == [(1, 0)]
