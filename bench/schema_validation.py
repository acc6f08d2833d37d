"""The cost of broker-side schema validation (issue 36), in one process and one run: produce
appends through the ReplicaManager (the path a Produce takes after the wire) of 100-record batches
framed as Confluent's serializers frame them, to a topic without the confluent.*.schema.validation
keys and to one with confluent.value.schema.validation=true; plus the hook's own test on the
first topic (the only cost a topic without validation pays: one attribute read per partition).

    .venv/bin/python bench/schema_validation.py [--rounds 5] [--appends 2000]

Medians of the rounds; each round alternates the two topics.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import tempfile
import time
import timeit

from minibroker.testing import AsyncBroker
from minibroker_protocol.records.v2 import Record, build_batch


def batch(schema_id: int, n: int = 100) -> bytes:
    value = b"\x00" + struct.pack(">I", schema_id) + b"\x02" * 95  # 100-byte values
    return build_batch([Record(offset_delta=i, timestamp_delta=i, key=None, value=value) for i in range(n)],
                       base_timestamp=1_000)


async def main(rounds: int, appends: int) -> None:
    b = AsyncBroker(tempfile.mkdtemp(prefix="bench-sv-"), overrides={"schema.registry.port": 0})
    await b.start()
    server = b.server
    assert server is not None and server.schema_registry is not None
    server.create_topic("plain", 1)
    server.create_topic("validated", 1, {"confluent.value.schema.validation": True})
    reg = server.schema_registry.registry
    new = __import__("minibroker.schema_registry.registry", fromlist=["NewSchema"]).NewSchema(
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}', "AVRO")
    schema_id = reg.register("validated-value", new, await reg.parse_async(new))
    data = batch(schema_id)
    rm = server.replica_manager
    results: dict[str, list[float]] = {"plain": [], "validated": []}
    for _ in range(rounds):
        for topic in ("plain", "validated"):
            t0 = time.perf_counter()
            for _ in range(appends):
                (r,) = await rm.append_records([((topic, 0), data)], required_acks=1, request_version=9)
                assert r.error is None, r.error
            results[topic].append((time.perf_counter() - t0) / appends * 1e6)
    part = rm.get_partition_or_error("plain", 0)
    hook_ns = min(timeit.repeat(lambda: part.schema_validation is not None, number=1_000_000, repeat=5)) * 1e3
    check_us = statistics.median(timeit.repeat(
        lambda: server.schema_registry.validator("validated", 0, data, key=False, value=True),  # type: ignore[union-attr]
        number=2000, repeat=5)) / 2000 * 1e6
    await b.stop()
    plain, validated = statistics.median(results["plain"]), statistics.median(results["validated"])
    print(f"append of a 100-record batch (us, median of {rounds} rounds of {appends}):")
    print(f"  topic without validation   {plain:8.1f}")
    print(f"  topic with value validation {validated:8.1f}  (+{validated - plain:.1f} us, {validated / plain:.2f}x)")
    print(f"  the validator alone        {check_us:8.1f}  ({check_us * 10:.0f} ns per record)")
    print(f"  the hook on a topic without validation: {hook_ns:.1f} ns per produced partition "
          f"({hook_ns / 1000 / plain * 100:.4f}% of its append)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--appends", type=int, default=2000)
    a = p.parse_args()
    asyncio.run(main(a.rounds, a.appends))
