"""Building blocks for the storage tests: v2 batches (protocol.records.v2) and a settable clock."""

from __future__ import annotations

from pathlib import Path

from protocol.records.batch import BatchView, iter_batches
from protocol.records.v2 import Record, build_batch

SEED_TS = 1672712725376  # shared/seeds/003: FirstTimestamp of the first batch


class Clock:
    """now_ms for the log: starts at `t`, moves only when told."""

    def __init__(self, t: int = SEED_TS + 10_000):
        self.t = t

    def __call__(self) -> int:
        return self.t

    def advance(self, ms: int) -> None:
        self.t += ms


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
