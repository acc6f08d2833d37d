"""The broker's own fetch speed, without a client library in the way.

    .venv/bin/python bench/raw_fetch.py [--records 20000] [--size 10240] [--rounds 5] [--segment-mb N]
                                        [--baseline <another checkout>]

Starts minibroker, fills one partition with confluent-kafka, then sends Fetch v12 requests over a
plain socket (minibroker_protocol.codec) and times each until its whole response is read. Prints the best and
median MB/s for 1 MiB and 10 MiB partition fetches: what the sendfile path delivers, to compare
with bench/limits.py's sendfile-to-loopback figure.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Minibroker, client, create_topic  # noqa: E402

from minibroker_protocol.apis import fetch  # noqa: E402
from minibroker_protocol.codec import encode  # noqa: E402
from minibroker_protocol.headers import RequestHeader, encode_request_header  # noqa: E402


def fetch_frame(cid: int, topic: str, pmax: int) -> bytes:
    R = fetch.REQUEST
    body = R(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=52428800, isolation_level=0,
             session_id=0, session_epoch=-1,
             topics=[R.FetchTopic(topic=topic, partitions=[R.FetchPartition(partition=0, fetch_offset=0,
                                                                            partition_max_bytes=pmax)])])
    out = bytearray()
    encode_request_header(out, RequestHeader(fetch.API.key, 12, cid, "raw-fetch"))
    out += encode(R, 12, body)
    return struct.pack(">i", len(out)) + bytes(out)


def recv_exact(s: socket.socket, n: int) -> None:
    buf = bytearray(min(n, 1 << 20))
    while n:
        n -= s.recv_into(buf, min(n, len(buf)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=10_240)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--segment-mb", type=int, default=0,
                    help="log.segment.bytes in MiB (default: Kafka's 1 GiB, so the fetches read the active "
                         "segment; smaller, and offset 0 lies in an inactive one)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="also run the minibroker of another checkout as 'baseline' (before/after, same run)")
    a = ap.parse_args()
    overrides = (f"log.segment.bytes={a.segment_mb << 20}",) if a.segment_mb else ()
    brokers = {"minibroker": Minibroker("uvloop", overrides)}
    if a.baseline:
        brokers["baseline"] = Minibroker("uvloop", overrides, cwd=a.baseline, name="baseline")
    socks: dict[str, socket.socket] = {}
    try:
        for name, b in brokers.items():
            boot = b.start()
            create_topic(boot, "raw-fetch")
            client("produce", boot, "raw-fetch", str(a.records), str(a.size))
            host, port = boot.rsplit(":", 1)
            socks[name] = socket.create_connection((host, int(port)))
        print("| broker | partition fetch size | response bytes | best MB/s | median MB/s |")
        print("|---|---|---|---|---|")
        cid = 0
        for pmax in (1 << 20, 10 << 20):
            rates: dict[str, list[float]] = {n: [] for n in brokers}
            sizes: dict[str, int] = {}
            order = list(socks.items())
            for _ in range(a.rounds):  # the brokers alternate, and which goes first alternates too:
                order.reverse()  # the first fetch of a round was measured slower, whoever served it
                for name, s in order:
                    cid += 1
                    t0 = time.perf_counter()
                    s.sendall(fetch_frame(cid, "raw-fetch", pmax))
                    head = bytearray(4)
                    s.recv_into(head, 4)
                    size = struct.unpack(">i", head)[0]
                    recv_exact(s, size)
                    rates[name].append(size / (time.perf_counter() - t0) / 1e6)
                    sizes[name] = size
            for name, r in rates.items():
                print(f"| {name} | {pmax >> 20} MiB | {sizes[name]:,} | {max(r):,.0f} | {statistics.median(r):,.0f} |")
    finally:
        for s in socks.values():
            s.close()
        for b in brokers.values():
            b.stop()


if __name__ == "__main__":
    main()
