"""Reading an internal-topic partition back into a coordinator (Kafka: CoordinatorLoaderImpl).

Theory of operation. A coordinator's state is the replay of its partition from the log start to
the end, in log order, `LOAD_READ_BYTES` at a time (Kafka: offsets.load.buffer.size and
transaction.state.log.load.buffer.size, both 5 MiB). Records of transactional batches (only
TxnOffsetCommit writes them, KIP-98) are held per producer until their marker: a COMMIT releases
them, an ABORT drops them, and those still open at the end are handed back to the caller (the
group coordinator keeps them pending until the marker arrives). Like Kafka's loader this reads
the log directly: the replica manager is the write path, not the replay path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.topics import TopicRegistry
from minibroker_protocol.records.v2 import decode_batches, parse_control_record
from minibroker_storage.log import Log

log = logging.getLogger("minibroker.coordinator.loader")

LOAD_READ_BYTES = 5 * 1024 * 1024

LoadedRecord = tuple["bytes | None", "bytes | None"]


def read_records(lg: Log, open_txns: dict[int, list[LoadedRecord]] | None = None) -> Iterator[LoadedRecord]:
    """The (key, value) records of one coordinator log in log order, committed transactions only
    (a null key is passed on: each coordinator says what it makes of one); the records of
    transactions without a marker yet are added to `open_txns` if given."""
    pending: dict[int, list[LoadedRecord]] = {}  # producer id -> open txn records
    offset, end = lg.log_start_offset, lg.log_end_offset
    while offset < end:
        info = lg.read(offset, LOAD_READ_BYTES, max_offset=end)
        if info.region is None:
            break
        progressed = False
        for batch in decode_batches(info.region.read_all()):
            progressed = True
            offset = batch.next_offset
            if batch.is_control:
                marker = parse_control_record(batch.records[0]) if batch.records else None
                held = pending.pop(batch.producer_id, [])
                if marker is not None and marker.is_commit:
                    yield from held
                continue
            records = [(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value))
                       for r in batch.records]
            if batch.is_transactional:
                pending.setdefault(batch.producer_id, []).extend(records)
            else:
                yield from records
        if not progressed:
            break
    if pending:
        log.info("%s-%d: %d open transaction(s) at the end of the log", lg.topic, lg.partition, len(pending))
        if open_txns is not None:
            for pid, held in pending.items():
                open_txns.setdefault(pid, []).extend(held)


def read_partition(lg: Log, open_txns: dict[int, list[CoordinatorRecord]] | None = None
                   ) -> Iterator[CoordinatorRecord]:
    """`read_records` without the records that have no key (the group and share coordinators
    skip them, as Kafka's loader does)."""
    held: dict[int, list[LoadedRecord]] | None = {} if open_txns is not None else None
    for key, value in read_records(lg, held):
        if key is not None:
            yield key, value
    if open_txns is not None and held:
        for pid, records in held.items():
            open_txns.setdefault(pid, []).extend((k, v) for k, v in records if k is not None)


class CoordinatorLoader:
    """Replays one partition of an internal topic (Kafka: CoordinatorLoaderImpl)."""

    def __init__(self, topics: TopicRegistry) -> None:
        self.topics = topics

    def read(self, topic: str, partition: int, open_txns: dict[int, list[LoadedRecord]] | None = None
             ) -> Iterator[LoadedRecord]:
        """`read_records` of topic-partition; nothing if the topic does not exist."""
        t = self.topics.get(topic)
        if t is None or partition not in t.partitions:
            return
        yield from read_records(t.partitions[partition], open_txns)
