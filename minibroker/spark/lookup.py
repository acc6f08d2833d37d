"""The driver's look-ups: which partitions a query reads, and their offsets (Spark's KafkaOffsetReaderAdmin).

All through one confluent-kafka AdminClient: Metadata for the topics and their partition counts,
ListOffsets for earliest (-2), latest (-1) and by-timestamp offsets. By-timestamp is Kafka's
ListOffsets with a timestamp, which the broker answers from each segment's `.timeindex`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from minibroker.spark.offsets import PartitionOffsets
from minibroker.spark.options import (
    EARLIEST,
    LATEST,
    EarliestLimit,
    GlobalTimestamp,
    LatestLimit,
    OffsetLimit,
    SpecificOffsets,
    SpecificTimestamps,
    Strategy,
    TopicPartition,
)

# Spark retries offset look-ups (fetchOffset.numRetries=3, fetchOffset.retryIntervalMs=1000).
ATTEMPTS = 3
RETRY_INTERVAL_S = 1.0
TIMEOUT_S = 30.0


class OffsetLookup:
    """Offsets of the partitions a strategy selects. Not picklable: create it where it is used."""

    def __init__(self, admin_conf: Mapping[str, str]):
        from confluent_kafka import IsolationLevel
        from confluent_kafka.admin import AdminClient

        conf: dict[str, str | int | float | bool] = dict(admin_conf)
        # The isolation level goes with each ListOffsets call; an AdminClient would warn about it.
        committed = str(conf.pop("isolation.level", "read_uncommitted")) == "read_committed"
        self._admin = AdminClient(conf)
        self._isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED

    def partition_counts(self) -> dict[str, int]:
        """Every topic of the cluster and its partition count (no auto-creation)."""
        md = self._with_retries(lambda: self._admin.list_topics(timeout=TIMEOUT_S))
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def assigned(self, strategy: Strategy) -> list[TopicPartition]:
        return strategy.select(self.partition_counts())

    def earliest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: EARLIEST for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: LATEST for tp in tps})

    def for_timestamps(self, stamps: Mapping[TopicPartition, int]) -> PartitionOffsets:
        """First offset whose timestamp is >= the given one; -1 where there is none."""
        return self._list_offsets(dict(stamps))

    def resolve(self, limit: OffsetLimit, tps: list[TopicPartition], *, starting: bool) -> PartitionOffsets:
        """One end of the read, as concrete offsets of `tps` (Spark's fetchPartitionOffsets)."""
        if isinstance(limit, EarliestLimit):
            return self.earliest(tps)
        if isinstance(limit, LatestLimit):
            return self.latest(tps)
        if isinstance(limit, SpecificOffsets):
            _same_partitions(limit.offsets, tps, "startingOffsets" if starting else "endingOffsets")
            special = {tp: off for tp, off in limit.offsets.items() if off in (EARLIEST, LATEST)}
            resolved = self._list_offsets(special) if special else {}
            return {tp: resolved.get(tp, off) for tp, off in limit.offsets.items()}
        if isinstance(limit, SpecificTimestamps):
            _same_partitions(limit.timestamps, tps, "startingOffsetsByTimestamp" if starting
                             else "endingOffsetsByTimestamp")
            stamps = dict(limit.timestamps)
        else:
            assert isinstance(limit, GlobalTimestamp)
            stamps = {tp: limit.timestamp for tp in tps}
        found = self.for_timestamps(stamps)
        out: PartitionOffsets = {}
        missing = []
        for tp, off in found.items():
            if off >= 0:
                out[tp] = off
            elif starting and not limit.latest_if_no_match:
                raise ValueError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} "
                                 f"and timestamp {stamps[tp]}.")
            else:
                missing.append(tp)
        out.update(self.latest(missing) if missing else {})
        return out

    def _list_offsets(self, specs: Mapping[TopicPartition, int]) -> PartitionOffsets:
        if not specs:
            return {}
        from confluent_kafka import TopicPartition as CkTopicPartition
        from confluent_kafka.admin import OffsetSpec

        def spec(v: int) -> Any:
            if v == EARLIEST:
                return OffsetSpec.earliest()
            if v == LATEST:
                return OffsetSpec.latest()
            return OffsetSpec.for_timestamp(v)

        def once() -> PartitionOffsets:
            request = {CkTopicPartition(t, p): spec(v) for (t, p), v in specs.items()}
            futures = self._admin.list_offsets(request, isolation_level=self._isolation,
                                               request_timeout=TIMEOUT_S)
            return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}

        return self._with_retries(once)

    @staticmethod
    def _with_retries(fn: Any) -> Any:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return fn()
            except Exception:  # noqa: BLE001 - any failure is retried, the last one raised
                if attempt == ATTEMPTS:
                    raise
                time.sleep(RETRY_INTERVAL_S)
        raise AssertionError("unreachable")


def _same_partitions(given: Mapping[TopicPartition, int], assigned: list[TopicPartition], option: str) -> None:
    if set(given) != set(assigned):
        raise ValueError(f"If {option} contains specific offsets, you must specify all TopicPartitions. "
                         "Use -1 for latest, -2 for earliest. "
                         f"Specified: {sorted(given)} Assigned: {sorted(assigned)}")
