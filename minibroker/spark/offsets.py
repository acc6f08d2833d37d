"""Offset arithmetic of Spark's Kafka source: offset JSON, rate limits, range planning.

A streaming offset is Spark's `KafkaSourceOffset` JSON, `{"topic": {"0": 42}}`, where 42 is the
next offset to read (1 + the last record's offset, like `KafkaConsumer.position()`). Spark decides
whether a trigger has new data by comparing offsets, so they are always written in one order:
topics sorted, partitions sorted by number.

Pure functions, no clients: tested with hypothesis in tests/spark/test_offsets.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from minibroker.spark.options import TopicPartition

PartitionOffsets = dict[TopicPartition, int]


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The dict Spark writes to the checkpoint's offset log, in a canonical order."""
    out: dict[str, dict[str, int]] = {}
    for (topic, part), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    return out


def from_json(obj: Mapping[str, Mapping[str, int]] | None) -> PartitionOffsets:
    """Inverse of `to_json` (also accepts JSON decoded from a checkpoint written by Spark)."""
    return {(topic, int(p)): int(off) for topic, parts in (obj or {}).items() for p, off in parts.items()}


@dataclass(frozen=True)
class OffsetRange:
    """Records [from_offset, until_offset) of one partition: one Spark task."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        # An estimate: compaction and transaction markers leave gaps (Spark's KafkaOffsetRange).
        return self.until_offset - self.from_offset


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               earliest_of_new: Callable[[Iterable[TopicPartition]], Mapping[TopicPartition, int]]
               ) -> PartitionOffsets:
    """Cap a micro-batch at about `limit` records, shared in proportion to each partition's lag.

    The rule of Spark's `KafkaMicroBatchStream.rateLimit`: partition share = limit * lag / total
    lag, rounded down, but a share below one record is rounded up so that no partition starves;
    never past the latest offset. Partitions new since `start` begin at their earliest offset.
    """
    new = [tp for tp in latest if tp not in start]
    begins = dict(start)
    if new:
        begins.update(earliest_of_new(new))
    sizes = {tp: end - begins[tp] for tp, end in latest.items() if tp in begins and end - begins[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begins[tp] + step)
    return out


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """One range per Kafka partition, or more when `minPartitions` asks for more tasks.

    Spark's `KafkaOffsetRangeCalculator`: empty ranges are dropped; when there are fewer ranges
    than minPartitions, each range gets round(size / total * minPartitions) parts (at least one),
    ranges that stay whole are taken out of the proportion first, and each range is cut into
    parts of equal size with the remainder in the last ones.
    """
    nonempty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)

    def part_count(size: int, of_total: int, parts: int) -> int:
        # Java's Math.round: half rounds up.
        return max(math.floor(size / of_total * parts + 0.5), 1)

    whole = [r for r in nonempty if part_count(r.size, total, min_partitions) == 1]
    whole_keys = {(r.topic, r.partition) for r in whole}
    split_total = total - sum(r.size for r in whole)
    split_min = max(min_partitions - len(whole), 1)
    out: list[OffsetRange] = []
    for r in nonempty:
        parts = 1 if (r.topic, r.partition) in whole_keys else part_count(r.size, split_total, split_min)
        remaining, start = r.size, r.from_offset
        for i in range(parts):
            this = remaining // (parts - i)
            remaining -= this
            end = min(start + this, r.until_offset)
            if end > start:
                out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out


@dataclass(frozen=True)
class Planned:
    """The ranges of one batch, and the data-loss findings made while planning them."""

    ranges: list[OffsetRange]
    losses: list[str]


def plan_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                earliest_of_new: Callable[[Iterable[TopicPartition]], Mapping[TopicPartition, int]],
                min_partitions: int | None) -> Planned:
    """Ranges from resolved offsets (Spark's `getOffsetRangesFromResolvedOffsets`).

    New partitions (in `end`, not in `start`) are read from their earliest offset; one that does not
    start at 0 has lost records. Partitions that vanished, and offsets that went backwards (a topic
    deleted and recreated), are data loss too. The caller decides whether a loss fails the query
    (failOnDataLoss) or is only logged.
    """
    losses: list[str] = []
    new = [tp for tp in end if tp not in start]
    new_start = dict(earliest_of_new(new)) if new else {}
    for tp in new:
        if tp not in new_start:
            losses.append(f"Cannot find earliest offsets of {_tp(tp)}. Some data may have been missed")
        elif new_start[tp] != 0:
            losses.append(f"Added partition {_tp(tp)} starts from {new_start[tp]} instead of 0. "
                          "Some data may have been missed")
    gone = sorted(tp for tp in start if tp not in end)
    if gone:
        losses.append(f"{', '.join(map(_tp, gone))} are gone. Some data may have been missed.")
    begins = {**start, **new_start}
    ranges = []
    for tp in sorted(end):
        if tp not in begins:
            continue
        if end[tp] < begins[tp]:
            losses.append(f"Partition {_tp(tp)}'s offset was changed from {begins[tp]} to {end[tp]}, "
                          "some data may have been missed")
        ranges.append(OffsetRange(tp[0], tp[1], begins[tp], end[tp]))
    return Planned(split_ranges(ranges, min_partitions), losses)


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"
