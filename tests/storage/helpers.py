"""Building blocks for the storage tests: v2 batches (minibroker_protocol.records.v2), a settable clock, and
seed 003's segment (shared/seeds/003), which tests/tools reads too."""

from __future__ import annotations

from pathlib import Path

from minibroker_protocol.records.batch import BatchView, iter_batches
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_storage.clock import ManualClock
from minibroker_storage.config import LogConfig
from minibroker_storage.log import Log

SEED_TS = 1672712725376  # shared/seeds/003: FirstTimestamp of the first batch


class Clock(ManualClock):
    """minibroker_storage.clock.ManualClock (Kafka's MockTime) starting 10 s after seed 003's first batch."""

    def __init__(self, start_ms: int = SEED_TS + 10_000) -> None:
        super().__init__(start_ms)


def batch(n: int = 1, value_size: int = 10, base_ts: int = SEED_TS, ts_deltas: list[int] | None = None,
          **kw) -> bytes:
    """A v2 batch of `n` records with `value_size`-byte values, as a producer sends it (baseOffset 0).
    1024-byte values in batches of 15 give the 15,556-byte batches of shared/seeds/003."""
    deltas = ts_deltas if ts_deltas is not None else [0] * n
    recs = [Record(timestamp_delta=deltas[i], offset_delta=i, value=bytes([i % 251]) * value_size) for i in range(n)]
    return build_batch(recs, base_timestamp=base_ts, **kw)


def batches_in(data: bytes) -> list[BatchView]:
    return list(iter_batches(data))


def log_file(dir: Path, base: int = 0) -> Path:
    return dir / f"{base:020d}.log"


# -- seed 003 --------------------------------------------------------------------------------------
# (FirstTimestamp, MaxTimestamp) of the seed's first six batches, then one more ms per batch.
SEED_TIMES = [(SEED_TS, SEED_TS + 7), (SEED_TS + 7, SEED_TS + 8), (SEED_TS + 8, SEED_TS + 9),
              (SEED_TS + 9, SEED_TS + 9), (SEED_TS + 9, SEED_TS + 10), (SEED_TS + 10, SEED_TS + 12)]
SEED_TIMES += [(SEED_TS + 12 + i, SEED_TS + 13 + i) for i in range(11)]  # 17 batches: offsets 0..254

# The index the seed's DumpLogSegments printed.
SEED_INDEX = [(29, 15556), (44, 31112), (59, 46668), (74, 62224), (89, 77780), (104, 93336), (119, 108892),
              (134, 124448), (149, 140004), (164, 155560), (179, 171116), (194, 186672), (209, 202228),
              (224, 217784), (239, 233340), (254, 248896)]


def seed_batch(first: int, last: int) -> bytes:
    deltas = [min(i, last - first) for i in range(15)]
    deltas[-1] = last - first
    return batch(15, 1024, base_ts=first, ts_deltas=deltas)


def write_seed_segment(dir) -> Log:
    lg = Log.open(dir / "hncscwc-0", LogConfig(), now_ms=Clock(SEED_TS + 60_000))
    for first, last in SEED_TIMES:
        lg.append_as_leader(seed_batch(first, last))
    return lg
