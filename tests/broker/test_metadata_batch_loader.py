"""A broker replaying the metadata log: KIP-868 metadata transactions, record types it keeps
nothing of, and batches it cannot read (minibroker/metadata/metadata_batch_loader.py)."""

from __future__ import annotations

import inspect
import logging
import uuid

import pytest

from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.metadata.metadata_batch_loader import NOT_KEPT, TRANSACTION_RECORDS, MetadataBatchLoader
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import (
    ApiMessageAndVersion,
    MetadataBatch,
    build_metadata_batch,
    read_metadata_batches,
)
from minibroker_protocol.records.v2 import Record, build_batch, decode_batches

TOPIC_ID = uuid.UUID(int=7)


def _batch(*messages: object, base_offset: int = 0) -> MetadataBatch:
    """The records as Kafka's controller appends them, read back from the bytes."""
    newest = {s.cls: max(s.valid) for s in mr.BY_API_KEY.values()}
    raw = build_metadata_batch([ApiMessageAndVersion(m, newest[type(m)]) for m in messages],  # type: ignore[arg-type]
                               base_offset=base_offset, leader_epoch=1, timestamp=0)
    (batch,) = read_metadata_batches(raw)
    return batch


def _topic() -> tuple[object, object]:
    return (mr.TOPIC_RECORD(name="t", topic_id=TOPIC_ID),
            mr.PARTITION_RECORD(partition_id=0, topic_id=TOPIC_ID, replicas=[1], isr=[1], leader=1,
                                removing_replicas=[], adding_replicas=[], directories=[uuid.UUID(int=0)]))


def _image(loader: MetadataBatchLoader, *batches: MetadataBatch) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for b in batches:
        loader.replay(delta, b)
    return delta.apply(0, 1)


def test_records_outside_a_transaction_apply_at_once() -> None:
    assert "t" in _image(MetadataBatchLoader(1), _batch(*_topic())).topic_ids


def test_a_committed_transaction_applies_whole_at_its_end_even_across_fetches() -> None:
    loader = MetadataBatchLoader(1)
    topic, partition = _topic()
    first = MetadataDelta(MetadataImage())
    loader.replay(first, _batch(mr.BEGIN_TRANSACTION_RECORD(name="bootstrap"), topic))
    image = first.apply(1, 1)
    assert "t" not in image.topic_ids and loader.in_transaction  # half a change is not published
    second = MetadataDelta(image)
    loader.replay(second, _batch(partition, mr.END_TRANSACTION_RECORD(), base_offset=2))
    after = second.apply(3, 1)
    assert after.topic("t") is not None and 0 in after.topics[TOPIC_ID].partitions
    assert not loader.in_transaction


def test_an_aborted_transaction_is_forgotten_and_what_follows_applies(caplog: pytest.LogCaptureFixture) -> None:
    topic, partition = _topic()
    loader = MetadataBatchLoader(1)
    with caplog.at_level(logging.INFO, "minibroker.metadata"):
        image = _image(loader, _batch(mr.BEGIN_TRANSACTION_RECORD(name="x"), topic, partition,
                                      mr.ABORT_TRANSACTION_RECORD(reason="Controller failover")),
                       _batch(mr.FEATURE_LEVEL_RECORD(name="metadata.version", feature_level=27), base_offset=4))
    assert "t" not in image.topic_ids
    assert image.features["metadata.version"] == 27
    assert "aborted (Controller failover): its 2 records are dropped" in caplog.text


def test_transaction_records_out_of_place_are_logged_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    topic, partition = _topic()
    loader = MetadataBatchLoader(1)
    with caplog.at_level(logging.ERROR, "minibroker.metadata"):
        image = _image(loader, _batch(mr.END_TRANSACTION_RECORD(), topic, partition))
    assert "t" in image.topic_ids
    assert "EndTransactionRecord at metadata offset 0 outside a transaction" in caplog.text


def test_every_metadata_record_type_is_applied_or_named() -> None:
    """Each record type of Kafka's metadata schemas is replayed into the image by MetadataDelta, is a
    transaction marker, or is named in NOT_KEPT with why: a type added to the generated schemas
    fails here until it is handled."""
    replay = inspect.getsource(MetadataDelta.replay)
    named = set(NOT_KEPT) | set(TRANSACTION_RECORDS)
    missing = [s.name for s in mr.BY_API_KEY.values() if s.cls not in named and f"mr.{s.name}" not in replay]
    assert missing == []
    assert not named & {s.cls for s in mr.BY_API_KEY.values() if f"mr.{s.name}" in replay}


def test_clear_elr_clears_one_topic_or_all() -> None:
    topic, partition = _topic()
    other = mr.TOPIC_RECORD(name="u", topic_id=uuid.UUID(int=8))
    for p, tid in ((partition, TOPIC_ID), (_topic()[1], uuid.UUID(int=8))):
        p.topic_id, p.eligible_leader_replicas, p.last_known_elr = tid, [2], [3]  # type: ignore[attr-defined]
    base = _image(MetadataBatchLoader(1), _batch(topic, other), _batch(partition), _batch(p))

    def elrs(*records: object) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        delta = MetadataDelta(base)
        MetadataBatchLoader(1).replay(delta, _batch(*records))
        image = delta.apply(9, 1)
        return {t.name: (t.partitions[0].elr, t.partitions[0].last_known_elr) for t in image.topics.values()}

    assert elrs(mr.NO_OP_RECORD()) == {"t": ((2,), (3,)), "u": ((2,), (3,))}
    assert elrs(mr.CLEAR_ELR_RECORD(topic_name="u")) == {"t": ((2,), (3,)), "u": ((), ())}
    assert elrs(mr.CLEAR_ELR_RECORD(topic_name="")) == {"t": ((), ()), "u": ((), ())}


def test_a_batch_the_broker_cannot_read_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    # a record of api key 999 (a newer Kafka's type): frame version 1, key 999 as an unsigned varint, version 0
    raw = build_batch([Record(offset_delta=0, value=bytes([1, 0xE7, 0x07, 0]))], base_offset=5, base_timestamp=0)
    (decoded,) = decode_batches(raw)
    loader = MetadataLoader(None, node_id=2, cluster_id="c")  # type: ignore[arg-type]  # no fetch is made
    with caplog.at_level(logging.ERROR, "minibroker.metadata"):
        assert loader._read(decoded) is None
    assert "broker 2: metadata batch at offsets 5-5 skipped: unknown metadata record api key 999" in caplog.text


async def test_only_what_the_high_watermark_covers_is_replayed() -> None:
    """A quorum leader sends an observer uncommitted batches too; the loader replays a batch only
    once the high watermark covers it, so a record a new leader truncates never reaches the image."""
    newest = {s.cls: max(s.valid) for s in mr.BY_API_KEY.values()}
    topic, partition = _topic()
    raw = b"".join(build_metadata_batch([ApiMessageAndVersion(m, newest[type(m)])], base_offset=i,  # type: ignore[arg-type]
                                        leader_epoch=1, timestamp=0) for i, m in enumerate((topic, partition)))
    loader = MetadataLoader(None, node_id=1, cluster_id="c")  # type: ignore[arg-type]  # no fetch is made
    loader.high_watermark = 1
    assert await loader.replay_committed(raw) == (1, True)
    assert (loader.next_offset, loader.image.offset) == (1, 0)
    t = loader.image.topic("t")
    assert t is not None and not t.partitions
    loader.high_watermark = 2  # the next answer: the same bytes, now committed
    assert await loader.replay_committed(raw) == (1, False)
    assert (loader.next_offset, loader.image.offset) == (2, 1)
    t = loader.image.topic("t")
    assert t is not None and 0 in t.partitions
