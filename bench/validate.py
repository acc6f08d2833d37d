"""What the produce path's record walk costs (minibroker_protocol.records.validate.validate_records).

    .venv/bin/python bench/validate.py [--records 10000] [--rounds 7]

Cases: uniform 100-byte values (one layout per run of equal-length records, checked with strided
slices), the same with two headers (more structural bytes to compare), mixed sizes (each record
read in Python), the uniform batch lz4-compressed (decompression dominates), and both with
require_keys (a compacted topic: free in a run, whose records share their keyLength). The CRC-32C
the log computes anyway is printed for scale. Prints the median of --rounds as ns/record and MB/s
of batch bytes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from minibroker_protocol.records.batch import BatchView, crc32c
from minibroker_protocol.records.compression import LZ4
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_protocol.records.validate import validate_records


def _time(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n = args.records
    rnd = random.Random(1)
    uniform = [Record(offset_delta=i, key=b"key-%06d" % i, value=bytes(100)) for i in range(n)]
    mixed = [Record(offset_delta=i, key=b"key-%06d" % i, value=bytes(rnd.randint(10, 190))) for i in range(n)]
    headers = [("trace-id", b"0123456789abcdef"), ("source", b"bench")]
    with_headers = [Record(offset_delta=i, key=b"key-%06d" % i, value=bytes(100), headers=headers) for i in range(n)]
    batches = {
        "uniform 100 B": build_batch(uniform, base_timestamp=0),
        "uniform 100 B, 2 headers": build_batch(with_headers, base_timestamp=0),
        "mixed 10-190 B": build_batch(mixed, base_timestamp=0),
        "uniform 100 B, lz4": build_batch(uniform, base_timestamp=0, compression=LZ4),
    }
    cases: list[tuple[str, bytes, Callable[[BatchView], object]]] = [
        (name, b, lambda v: validate_records(v)) for name, b in batches.items()]
    cases.append(("uniform 100 B, require_keys", batches["uniform 100 B"],
                  lambda v: validate_records(v, require_keys=True, where="t-0")))
    cases.append(("mixed, require_keys", batches["mixed 10-190 B"],
                  lambda v: validate_records(v, require_keys=True, where="t-0")))
    cases.append(("(crc32c of uniform, for scale)", batches["uniform 100 B"],
                  lambda v: crc32c(memoryview(v.buf)[21:])))
    print(f"{n} records per batch, median of {args.rounds}")
    print(f"{'case':34} {'batch KiB':>9} {'ns/record':>10} {'MB/s':>9}")
    for name, b, fn in cases:
        view = BatchView(b)
        secs = _time(lambda: fn(view), args.rounds)  # noqa: B023 (called at once)
        print(f"{name:34} {len(b) / 1024:9.0f} {secs * 1e9 / n:10.1f} {len(b) / secs / 1e6:9.0f}")


if __name__ == "__main__":
    main()
