"""The machine's raw limits, to read every bench figure as a fraction of what is possible.

    .venv/bin/python bench/limits.py [--mb 512] [--rounds 5]

- loopback TCP: one sender, one receiver process, 1 MiB send() calls (what read + send of record bytes costs);
- sendfile to loopback: os.sendfile from a page-cached file (the fetch path's ceiling);
- CRC-32C: the crc32c package over 1 MiB buffers (the check every produced batch gets);
- fdatasync: latency of a 4 KiB append + fdatasync (the floor of acks with flush.messages=1).
Medians of --rounds.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import time

from minibroker_protocol.records.batch import crc32c

CHUNK = 1 << 20


def _drain(sock: socket.socket, total: int) -> None:
    got = 0
    buf = bytearray(CHUNK)
    while got < total:
        n = sock.recv_into(buf)
        if not n:
            break
        got += n


def _receiver(sock: socket.socket, total: int) -> int:
    """Drain `total` bytes in a forked child, so that the receiver does not share the sender's GIL
    (with a thread it did, and the figures were a floor: the broker's own fetch beat them)."""
    pid = os.fork()
    if pid == 0:
        try:
            _drain(sock, total)
        finally:
            os._exit(0)
    return pid


def _pair() -> tuple[socket.socket, socket.socket]:
    srv = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(srv.getsockname())
    b, _ = srv.accept()
    srv.close()
    return a, b


def loopback_send(total: int) -> float:
    a, b = _pair()
    data = os.urandom(CHUNK)
    t0 = time.perf_counter()
    child = _receiver(b, total)
    sent = 0
    while sent < total:
        sent += a.send(data)
    os.waitpid(child, 0)
    dt = time.perf_counter() - t0
    a.close()
    b.close()
    return total / dt / 1e6


def loopback_sendfile(path: str, total: int) -> float:
    a, b = _pair()
    with open(path, "rb") as f:
        t0 = time.perf_counter()
        child = _receiver(b, total)
        off = 0
        while off < total:
            off += os.sendfile(a.fileno(), f.fileno(), off, total - off)
    os.waitpid(child, 0)
    dt = time.perf_counter() - t0
    a.close()
    b.close()
    return total / dt / 1e6


def crc_rate(total: int) -> float:
    data = os.urandom(CHUNK)
    t0 = time.perf_counter()
    for _ in range(total // CHUNK):
        crc32c(data)
    return total / (time.perf_counter() - t0) / 1e6


def fdatasync_ms(directory: str, n: int = 200) -> float:
    samples = []
    with open(os.path.join(directory, "sync.bin"), "ab") as f:
        block = os.urandom(4096)
        for _ in range(n):
            t0 = time.perf_counter()
            f.write(block)
            f.flush()
            os.fdatasync(f.fileno())
            samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    total = a.mb * CHUNK
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data.bin")
        with open(path, "wb") as f:
            for _ in range(a.mb):
                f.write(os.urandom(CHUNK))
        with open(path, "rb") as f:  # into the page cache, as a segment being fetched is
            while f.read(CHUNK):
                pass
        rows = {
            "loopback TCP send (MB/s)": [loopback_send(total) for _ in range(a.rounds)],
            "sendfile to loopback (MB/s)": [loopback_sendfile(path, total) for _ in range(a.rounds)],
            "CRC-32C (MB/s)": [crc_rate(total) for _ in range(a.rounds)],
            "4 KiB append + fdatasync (ms)": [fdatasync_ms(d) for _ in range(a.rounds)],
        }
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, medians of {a.rounds}\n")
    print("| limit | median |")
    print("|---|---|")
    for name, vals in rows.items():
        print(f"| {name} | {statistics.median(vals):,.2f} |")


if __name__ == "__main__":
    main()
