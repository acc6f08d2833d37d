"""The record walk of large compressed produce batches, off the event loop (issue 30, finding 3).

Theory of operation: the log's validator walks every record of a producer's batch (Kafka:
LogValidator's record loop; minibroker_protocol.records.validate), on the event loop, as part of the append.
A compressed batch of a few KB can hold millions of tiny records (zstd packs 7.5 M empty records
in 5 KB), whose walk took seconds while every other client waited. Kafka walks them too, on one of
its request-handler threads, so the network threads keep serving. Here the produce handler walks
each compressed batch of at least PREWALK_MIN_RECORDS records on the worker thread first
(minibroker.request_decoding.worker; the loop gets the GIL back every switch interval), and the
validator then takes the verdict remembered for those very bytes instead of walking again. So the
client gets what it got before, its records appended or the same INVALID_RECORD /
CORRUPT_MESSAGE answer, only later, and the others are answered meanwhile.
"""

from __future__ import annotations

import asyncio
import functools

from minibroker.replica_manager import ReplicaManager
from minibroker.request_decoding import worker
from minibroker_protocol.records.batch import BatchView, InvalidBatch
from minibroker_protocol.records.validate import PREWALK_MIN_RECORDS, forget_prewalk, prewalk_records
from minibroker_protocol.schema import MemoryRecords

Walked = list[tuple[BatchView, bool, str]]
Entries = list[tuple[tuple[str, int], MemoryRecords | None]]

_MAGIC, _ATTRIBUTES, _RECORDS_COUNT = 16, 22, 57  # offsets in a v2 batch header


def large_batches(entries: Entries) -> list[tuple[tuple[str, int], BatchView]]:
    """The partitions whose (first) batch is compressed and holds PREWALK_MIN_RECORDS records or
    more: a few byte reads per partition, on every Produce."""
    found = []
    for tp, records in entries:
        if records is None or len(records) < 61 or records[_MAGIC] != 2 or not records[_ATTRIBUTES] & 0x07 \
                or int.from_bytes(records[_RECORDS_COUNT:_RECORDS_COUNT + 4], "big", signed=True) < PREWALK_MIN_RECORDS:
            continue
        try:
            found.append((tp, BatchView(records, 0)))
        except InvalidBatch:
            continue  # the validator answers it
    return found


async def prewalk_produce(replica_manager: ReplicaManager, large: list[tuple[tuple[str, int], BatchView]]) -> Walked:
    """Walk these batches on the worker thread, one after the other; what was walked, for
    `forget` once the append is done."""
    walked: Walked = []
    loop = asyncio.get_running_loop()
    for (topic, partition), view in large:
        part = replica_manager.get_partition(topic, partition)
        if part is None:
            continue  # the ReplicaManager answers it without a walk
        where = f"{topic}-{partition}"  # as minibroker_storage.log names the partition in its messages
        require_keys = part.config.compact
        await loop.run_in_executor(worker(), functools.partial(prewalk_records, view, require_keys=require_keys,
                                                               where=where))
        walked.append((view, require_keys, where))
    return walked


def forget(walked: Walked) -> None:
    """Drop the verdicts the append did not use (it stopped before the walk)."""
    for view, require_keys, where in walked:
        forget_prewalk(view, require_keys=require_keys, where=where)
