"""`.txnindex`: Kafka's 34-byte AbortedTxn entries, appends, search, truncation, reload."""

from __future__ import annotations

import struct

import pytest

from minibroker_storage.index import CorruptIndex
from minibroker_storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


def test_entry_layout_is_kafkas_abortedtxn():
    # version int16 | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
    raw = AbortedTxn(producer_id=0x0102030405060708, first_offset=5, last_offset=9, last_stable_offset=10).to_bytes()
    assert ENTRY_SIZE == 34 and len(raw) == 34
    assert raw.hex() == ("0000" "0102030405060708" "0000000000000005" "0000000000000009" "000000000000000a")
    assert AbortedTxn.from_bytes(raw) == AbortedTxn(0x0102030405060708, 5, 9, 10)


def test_file_is_created_only_by_the_first_append(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    assert not path.exists() and idx.all_aborted_txns() == []
    assert idx.collect_aborted_txns(0, 100) == ([], False)
    idx.append(AbortedTxn(1, 0, 4, 5))
    assert path.stat().st_size == 34
    idx.close()


def test_appends_survive_reopen_and_last_offset_must_grow(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    txns = [AbortedTxn(1, 0, 10, 11), AbortedTxn(2, 3, 15, 16), AbortedTxn(1, 20, 30, 31)]
    for t in txns:
        idx.append(t)
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(3, 25, 30, 31))
    idx.close()
    again = TransactionIndex(0, path)
    assert again.all_aborted_txns() == txns
    assert again.last_offset == 30
    with pytest.raises(ValueError):
        again.append(AbortedTxn(3, 25, 29, 31))
    again.close()


def test_collect_overlapping_and_stop_at_a_stable_offset_past_the_bound(tmp_path):
    idx = TransactionIndex(0, tmp_path / "00000000000000000000.txnindex")
    a, b, c, d = (AbortedTxn(1, 0, 10, 11), AbortedTxn(2, 5, 20, 21), AbortedTxn(3, 21, 30, 31),
                  AbortedTxn(4, 40, 50, 51))
    for t in (a, b, c, d):
        idx.append(t)
    # overlap: lastOffset >= fetchOffset and firstOffset < upperBound
    assert idx.collect_aborted_txns(11, 21) == ([b], True)  # b's LSO 21 >= 21: complete
    assert idx.collect_aborted_txns(0, 5) == ([a], True)
    assert idx.collect_aborted_txns(25, 100) == ([c, d], False)  # may go on in later segments
    assert idx.collect_aborted_txns(60, 100) == ([], False)
    idx.close()


def test_truncate_reset_and_partial_tail(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    for t in (AbortedTxn(1, 0, 10, 11), AbortedTxn(2, 12, 20, 21), AbortedTxn(3, 22, 30, 31)):
        idx.append(t)
    idx.truncate_to(20)  # markers at 20 and later go
    assert [t.last_offset for t in idx.all_aborted_txns()] == [10]
    assert path.stat().st_size == 34
    idx.append(AbortedTxn(4, 15, 25, 26))
    idx.close()
    with open(path, "ab") as f:
        f.write(b"\0" * 20)  # a torn write: not an entry
    idx = TransactionIndex(0, path)
    assert [t.producer_id for t in idx.all_aborted_txns()] == [1, 4]
    idx.reset()
    assert idx.all_aborted_txns() == [] and path.stat().st_size == 0
    idx.close()


def test_sanity_check_and_unknown_version(tmp_path):
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(AbortedTxn(1, 0, 50, 51).to_bytes())
    with pytest.raises(CorruptIndex):
        TransactionIndex(100, path).sanity_check()
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 100, 110, 111))
    with pytest.raises(CorruptIndex):
        TransactionIndex(100, path)


def test_rename_moves_an_existing_file_and_tracks_a_missing_one(tmp_path):
    idx = TransactionIndex(0, tmp_path / "a.txnindex")
    idx.rename_to(tmp_path / "b.txnindex")  # nothing written yet: only the path changes
    assert idx.path.name == "b.txnindex" and not idx.path.exists()
    idx.append(AbortedTxn(1, 0, 1, 2))
    idx.rename_to(tmp_path / "c.txnindex.deleted")
    assert (tmp_path / "c.txnindex.deleted").exists() and not (tmp_path / "b.txnindex").exists()
    assert idx.delete_if_exists() and not idx.path.exists()
