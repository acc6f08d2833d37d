"""Producer state: Kafka's sequence and epoch rules, transactions and the LSO, `.snapshot` files,
and the log's use of them (duplicates, restarts, recovery, `.txnindex`)."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import iter_batches
from minibroker_protocol.records.v2 import ControlType, build_control_batch
from minibroker_storage.config import LogConfig
from minibroker_storage.log import AppendOrigin, Log
from minibroker_storage.producer_state import (
    INT32_MAX,
    BatchMetadata,
    CompletedTxn,
    CorruptSnapshot,
    EndTxnMarker,
    ProducerStateEntry,
    ProducerStateManager,
    read_snapshot,
    snapshot_file,
    write_snapshot,
)
from minibroker_storage.txn_index import AbortedTxn

from .helpers import SEED_TS, Clock, batch


def pbatch(n: int, seq: int, pid: int = 7, epoch: int = 0, txn: bool = False, **kw) -> bytes:
    return batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn, **kw)


def marker(kind: ControlType, pid: int = 7, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return build_control_batch(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch,
                               timestamp=SEED_TS)


def open_log(d, clock=None, **cfg) -> Log:
    return Log.open(d, LogConfig(**cfg), now_ms=clock or Clock())


def code_of(fn) -> int:
    with pytest.raises(KafkaError) as e:
        fn()
    return e.value.code


# -- sequences and epochs (ProducerAppendInfo) ---------------------------------------------------


def test_sequences_must_follow_and_a_gap_is_out_of_order(tmp_path):
    lg = open_log(tmp_path / "t-0")
    assert lg.append_as_leader(pbatch(3, 0)).first_offset == 0
    assert lg.append_as_leader(pbatch(2, 3)).first_offset == 3
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 6))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 4))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert lg.log_end_offset == 5
    assert lg.append_as_leader(pbatch(1, 5)).first_offset == 5


def test_retry_of_any_of_the_last_five_batches_returns_its_offsets_and_writes_nothing(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(batch(2))  # another writer first, so producer offsets differ from sequences
    firsts = [lg.append_as_leader(pbatch(2, 2 * i)).first_offset for i in range(7)]
    size = lg.size_in_bytes()
    for i in range(2, 7):  # the last five are cached
        dup = lg.append_as_leader(pbatch(2, 2 * i))
        assert dup.duplicate and (dup.first_offset, dup.last_offset) == (firsts[i], firsts[i] + 1)
        assert dup.log_append_time == SEED_TS  # Kafka answers the cached batch's timestamp here
    assert lg.size_in_bytes() == size and lg.log_end_offset == 16
    # the sixth-newest fell out of the cache: now it is simply out of order
    assert code_of(lambda: lg.append_as_leader(pbatch(2, 2))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # same sequence range but another range length is not a duplicate either
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 12))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs_fence_and_restart_sequences(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(2, 0, epoch=1))
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 2, epoch=0))) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 5, epoch=2))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    lg.append_as_leader(pbatch(1, 0, epoch=2))
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 1, epoch=1))) == ErrorCode.INVALID_PRODUCER_EPOCH
    # a duplicate from an old epoch is not a duplicate
    assert code_of(lambda: lg.append_as_leader(pbatch(2, 0, epoch=1))) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_may_start_anywhere_and_sequences_wrap(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(2, INT32_MAX - 1))  # no entry yet: any sequence is accepted (KIP-360)
    lg.append_as_leader(pbatch(3, 0))  # MAX-1, MAX, then 0: wrapped
    entry = lg.producer_state.last_entry(7)
    assert (entry.first_seq, entry.last_seq) == (INT32_MAX - 1, 2)
    # a batch whose range wraps is recognised as a duplicate too
    wrap = pbatch(4, INT32_MAX - 1, pid=8)
    lg.append_as_leader(wrap)
    assert lg.append_as_leader(wrap).duplicate


def test_expired_producers_are_forgotten_but_not_while_in_a_transaction(tmp_path):
    clock = Clock(SEED_TS)
    lg = open_log(tmp_path / "t-0", clock)
    lg.producer_state.producer_id_expiration_ms = 1000
    lg.append_as_leader(pbatch(1, 0, pid=1))
    lg.append_as_leader(pbatch(1, 0, pid=2, txn=True))
    clock.advance(5000)
    assert lg.remove_expired_producers() == 1
    assert set(lg.producer_state.producers) == {2}
    lg.append_as_leader(pbatch(1, 40, pid=1))  # forgotten: any sequence again


def test_coordinator_origin_checks_epochs_only(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(1, 0, epoch=3, txn=True), origin=AppendOrigin.COORDINATOR)
    lg.append_as_leader(pbatch(1, 9, epoch=3, txn=True), origin=AppendOrigin.COORDINATOR)  # no sequence check
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 10, epoch=2, txn=True), origin=AppendOrigin.COORDINATOR)
                   ) == ErrorCode.INVALID_PRODUCER_EPOCH


# -- transactions ---------------------------------------------------------------------------------


def test_lso_waits_for_the_oldest_open_transaction_and_aborts_are_indexed(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(batch(2))  # 0-1
    lg.append_as_leader(pbatch(2, 0, pid=1, txn=True))  # 2-3: txn of producer 1 opens
    lg.append_as_leader(pbatch(1, 0, pid=2, txn=True))  # 4: txn of producer 2 opens
    lg.append_as_leader(batch(1))  # 5
    assert (lg.high_watermark, lg.last_stable_offset) == (6, 2)
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 2, pid=1))) == ErrorCode.INVALID_TXN_STATE
    lg.append_as_leader(marker(ControlType.ABORT, pid=1), origin=AppendOrigin.COORDINATOR)  # 6
    assert lg.last_stable_offset == 4  # producer 2 still open
    lg.append_as_leader(marker(ControlType.COMMIT, pid=2), origin=AppendOrigin.COORDINATOR)  # 7
    assert lg.last_stable_offset == lg.high_watermark == 8
    # the abort's LSO was 4 (producer 2 open), the commit is not indexed
    assert lg.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(1, 2, 6, 4)]
    assert lg.aborted_transactions(0, 8) == [AbortedTxn(1, 2, 6, 4)]
    assert lg.aborted_transactions(7, 8) == []
    entry = lg.producer_state.last_entry(1)
    assert entry.current_txn_first_offset is None and entry.coordinator_epoch == 0


def test_markers_from_an_older_coordinator_are_fenced(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(1, 0, txn=True))
    lg.append_as_leader(marker(ControlType.COMMIT, coordinator_epoch=5), origin=AppendOrigin.COORDINATOR)
    lg.append_as_leader(pbatch(1, 1, txn=True))
    assert code_of(lambda: lg.append_as_leader(marker(ControlType.ABORT, coordinator_epoch=4),
                                               origin=AppendOrigin.COORDINATOR)
                   ) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # a marker with no data of the producer here completes nothing (no index entry, no LSO change)
    lg.append_as_leader(marker(ControlType.ABORT, pid=99), origin=AppendOrigin.COORDINATOR)
    assert lg.aborted_transactions(0, lg.log_end_offset) == []


def test_aborted_transactions_are_found_across_segments(tmp_path):
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(1, 0, pid=1, txn=True))  # 0
    lg.roll()
    lg.append_as_leader(pbatch(1, 0, pid=2, txn=True))  # 1
    lg.append_as_leader(marker(ControlType.ABORT, pid=2), origin=AppendOrigin.COORDINATOR)  # 2: LSO 0
    lg.roll()
    lg.append_as_leader(batch(1))  # 3
    lg.roll()
    lg.append_as_leader(marker(ControlType.ABORT, pid=1), origin=AppendOrigin.COORDINATOR)  # 4: LSO 5
    expected = [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 5)]
    assert lg.aborted_transactions(0, 5) == expected  # from segment 0 the search runs to segment 4
    assert lg.aborted_transactions(3, 5) == [AbortedTxn(1, 0, 4, 5)]
    assert [s.base_offset for s in lg.segments if s.txn_index.path.exists()] == [1, 4]


# -- snapshots ------------------------------------------------------------------------------------


def test_snapshot_file_layout_is_kafkas_producer_snapshot_v1(tmp_path):
    e1 = ProducerStateEntry(5, producer_epoch=2, coordinator_epoch=3, last_timestamp=1000,
                            current_txn_first_offset=40)
    e1.batches.append(BatchMetadata(last_seq=9, last_offset=44, offset_delta=4, timestamp=1000))
    e2 = ProducerStateEntry(1, producer_epoch=0, coordinator_epoch=-1, last_timestamp=77)  # no batch
    path = tmp_path / "00000000000000000045.snapshot"
    write_snapshot(path, [e1, e2], sync=False)
    raw = path.read_bytes()
    body = (struct.pack(">i", 2)
            + struct.pack(">qhiqiqiq", 1, 0, -1, -1, 0, 77, -1, -1)
            + struct.pack(">qhiqiqiq", 5, 2, 9, 44, 4, 1000, 3, 40))
    assert raw == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(raw) == 2 + 4 + 4 + 2 * 46
    loaded = {e.producer_id: e for e in read_snapshot(path)}
    assert loaded[5].current_txn_first_offset == 40 and list(loaded[5].batches) == list(e1.batches)
    assert loaded[1].is_empty and loaded[1].current_txn_first_offset is None
    bad = bytearray(raw)
    bad[-1] ^= 1
    path.write_bytes(bad)
    with pytest.raises(CorruptSnapshot):
        read_snapshot(path)


def test_state_survives_a_clean_restart_through_the_snapshot(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d)
    lg.append_as_leader(pbatch(3, 0))
    lg.append_as_leader(pbatch(1, 0, pid=9, txn=True))
    lg.close()
    assert snapshot_file(d, 4).exists()
    lg = open_log(d)
    assert lg.append_as_leader(pbatch(3, 0)).duplicate  # the last batch is in the snapshot
    assert code_of(lambda: lg.append_as_leader(pbatch(1, 5))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert lg.last_stable_offset == 3  # producer 9's transaction is still open
    lg.append_as_leader(marker(ControlType.ABORT, pid=9), origin=AppendOrigin.COORDINATOR)
    assert lg.aborted_transactions(0, 10) == [AbortedTxn(9, 3, 4, 5)]
    lg.close()


def test_roll_writes_a_snapshot_and_a_crash_replays_from_it(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d)
    lg.append_as_leader(pbatch(2, 0))
    lg.roll()
    assert snapshot_file(d, 2).exists()
    lg.append_as_leader(pbatch(2, 2))
    lg.append_as_leader(pbatch(1, 0, pid=3, txn=True))
    lg.close_handlers()  # crash: no snapshot at the end
    assert sorted(p.name for p in d.glob("*.snapshot")) == ["00000000000000000002.snapshot"]
    lg = open_log(d)
    assert lg.append_as_leader(pbatch(2, 2)).first_offset == 2  # replayed past the snapshot
    assert lg.last_stable_offset == 4
    lg.close()


def test_without_snapshots_an_unclean_start_rebuilds_everything_from_the_log(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d, segment_bytes=300)
    for i in range(10):
        lg.append_as_leader(pbatch(1, i, value_size=50))
    lg.append_as_leader(pbatch(1, 0, pid=4, txn=True))
    lg.append_as_leader(marker(ControlType.ABORT, pid=4), origin=AppendOrigin.COORDINATOR)
    assert lg.num_segments > 3
    index_bytes = {s.base_offset: s.txn_index.path.read_bytes() for s in lg.segments if s.txn_index.path.exists()}
    lg.close_handlers()
    for p in d.glob("*.snapshot"):
        p.unlink()
    for p in d.glob("*.txnindex"):
        p.unlink()  # recovery (recovery point 0) resets and rebuilds them
    lg = open_log(d, segment_bytes=300)
    assert lg.append_as_leader(pbatch(1, 9, value_size=50)).duplicate
    assert {s.base_offset: s.txn_index.path.read_bytes() for s in lg.segments if s.txn_index.path.exists()
            } == index_bytes
    assert lg.aborted_transactions(0, lg.log_end_offset) == [AbortedTxn(4, 10, 11, 12)]
    lg.close()


def test_a_corrupt_latest_snapshot_falls_back_to_an_older_one(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d)
    lg.append_as_leader(pbatch(1, 0))
    lg.roll()
    lg.append_as_leader(pbatch(1, 1))
    lg.close()
    latest = snapshot_file(d, 2)
    latest.write_bytes(latest.read_bytes()[:-3])
    lg = open_log(d)
    assert [e.last_seq for e in read_snapshot(latest)] == [1]  # deleted, replayed from 1, rewritten
    assert lg.append_as_leader(pbatch(1, 1)).duplicate
    lg.close()


def test_retention_deletes_the_snapshot_of_a_deleted_segment(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d)
    for i in range(3):
        lg.append_as_leader(pbatch(1, i))
        lg.roll()
    assert sorted(p.name for p in d.glob("*.snapshot")) == [f"{o:020d}.snapshot" for o in (1, 2, 3)]
    lg.delete_records_before(2)
    assert sorted(p.name for p in d.glob("*.snapshot")) == [f"{o:020d}.snapshot" for o in (2, 3)]
    lg.close()


def test_stray_snapshots_are_removed_at_load(tmp_path):
    d = tmp_path / "t-0"
    lg = open_log(d)
    for seq in (0, 2, 4):
        lg.append_as_leader(pbatch(2, seq))
        if seq < 4:
            lg.roll()
    lg.close()  # segments 0, 2, 4; snapshots at 2, 4 (rolls) and 6 (close)
    write_snapshot(snapshot_file(d, 1), [], sync=False)  # matches no segment and is below the last one
    lg = open_log(d)
    assert sorted(p.name for p in d.glob("*.snapshot")) == [f"{o:020d}.snapshot" for o in (2, 4, 6)]
    assert lg.append_as_leader(pbatch(2, 4)).duplicate
    lg.close()


# -- the manager alone ----------------------------------------------------------------------------


def test_last_stable_offset_of_a_completed_transaction(tmp_path):
    psm = ProducerStateManager(tmp_path)
    for pid, first in ((1, 10), (2, 12), (3, 15)):
        info = psm.prepare_update(pid, AppendOrigin.CLIENT)
        info.append_data_batch(0, 0, 0, SEED_TS, first, first, True)
        psm.update(info)
    assert psm.first_unstable_offset() == 10
    done = CompletedTxn(2, 12, 20, True)
    assert psm.last_stable_offset(done) == 10  # producer 1 is older and still open
    info = psm.prepare_update(2, AppendOrigin.COORDINATOR)
    assert info.append_end_txn_marker(EndTxnMarker(ControlType.ABORT, 0), 0, 20, SEED_TS) == done
    psm.update(info)
    psm.complete_txn(done)
    one = CompletedTxn(1, 10, 21, False)
    assert psm.last_stable_offset(one) == 15
    psm.complete_txn(one)
    assert psm.last_stable_offset(CompletedTxn(3, 15, 22, False)) == 23


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6)), min_size=1, max_size=25))
def test_retries_never_duplicate_or_reorder_records(tmp_path_factory, plan):
    """Each step sends the next batch of `n` records, then retries one of the last `back`
    batches (back 0 = none). Whatever the retries, the log holds every sequence once, in order,
    and a retry of one of the last five batches gets its original offsets."""
    lg = open_log(tmp_path_factory.mktemp("p") / "t-0")
    sent: list[tuple[int, int, int]] = []  # (first seq, n, first offset)
    seq = 0
    for n, back in plan:
        info = lg.append_as_leader(pbatch(n, seq))
        sent.append((seq, n, info.first_offset))
        seq += n
        if back and back <= len(sent):
            s, m, off = sent[-back]
            if back <= 5:
                assert lg.append_as_leader(pbatch(m, s)).first_offset == off
            else:
                assert code_of(lambda s=s, m=m: lg.append_as_leader(pbatch(m, s))
                               ) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    data = b"".join(s.log.read(0, s.size) for s in lg.segments)
    seqs = [(v.base_sequence, v.records_count) for v in iter_batches(data)]
    assert [s for s, _ in seqs] == [s for s, _, _ in sent]
    assert sum(c for _, c in seqs) == seq == lg.log_end_offset
    lg.close()


def test_an_open_transaction_is_one_of_the_producers_current_epoch(tmp_path):
    """UnifiedLog.hasOngoingTransaction(producerId, producerEpoch): with transactions v2 the next
    transaction comes with the epoch the last one's end bumped, maybe before that one's marker is
    written here; it is a new transaction (verified with the coordinator), not the open one."""
    lg = open_log(tmp_path / "t-0")
    lg.append_as_leader(pbatch(1, 0, pid=1, epoch=3, txn=True))
    assert lg.has_ongoing_transaction(1) and lg.has_ongoing_transaction(1, 3)
    assert not lg.has_ongoing_transaction(1, 4) and not lg.has_ongoing_transaction(2, 3)
    lg.append_as_leader(marker(ControlType.COMMIT, pid=1, epoch=4), origin=AppendOrigin.COORDINATOR)
    assert not lg.has_ongoing_transaction(1, 4) and not lg.has_ongoing_transaction(1)
