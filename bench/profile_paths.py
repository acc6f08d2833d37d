"""Function-level profile of the produce-acknowledge and produce-to-consume paths (issue 33).

    .venv/bin/python bench/profile_paths.py [--tool cprofile|callgrind|none] [--count 20000]
                                            [--workloads ack1,ackall,e2e] [--top 25]
                                            [--checkout <another tree>] [--out <dir>]

A fixed client workload over plain sockets (no client library: its queues and threads would be
in the figures), one connection per role, one request at a time:

- ack1 / ackall: `--count` Produce v9 requests of one 100 B record, acks=1 / acks=-1;
- e2e: a consumer long-polls a Fetch v12 (max_wait 5 s, min_bytes 1) at the log end, then one
  100 B record is produced; the time is from the Produce's send to the Fetch response's last
  byte, `--count` times.

The broker runs in its own process (`python -m minibroker` through this script's `serve` mode,
so that the profiler can be switched on and off around each workload with signals):

- cprofile: cProfile over each workload alone; prints the top functions by own time and
  by cumulative time, per request;
- callgrind: the broker under `valgrind --tool=callgrind --instr-atstart=no`, instrumentation
  switched on around each workload (`callgrind_control -i on|off`); prints instructions per
  request (stable on a noisy machine where microseconds are not) and leaves the dumps, which
  `callgrind_annotate` reads, in --out;
- none: wall-clock p50/p99 and broker CPU per request from /proc.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

PY = sys.executable
PRODUCE_VERSION = 9
FETCH_VERSION = 12


# -- the broker side: python -m minibroker with a profiler switched by signals -----------------
def serve(prof_out: str, argv: list[str]) -> int:
    profiler = cProfile.Profile()
    dumps = [0]

    def on(_sig: int, _frame: object) -> None:
        profiler.enable()

    def off(_sig: int, _frame: object) -> None:
        profiler.disable()
        profiler.dump_stats(f"{prof_out}.{dumps[0]}")
        dumps[0] += 1
        profiler.clear()

    signal.signal(signal.SIGUSR1, on)
    signal.signal(signal.SIGUSR2, off)
    sys.path.insert(0, os.getcwd())  # the checkout being measured (--checkout), ahead of this one
    from minibroker.cli import main  # lazy: the broker's checkout is on sys.path only now

    return main(argv)


# -- the client side ---------------------------------------------------------------------------
def frame_of(api_key: int, version: int, schema: object, body: object, client: str = "prof") -> bytearray:
    from minibroker_protocol.codec import encode
    from minibroker_protocol.headers import RequestHeader, encode_request_header

    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, 0, client))
    out += encode(schema, version, body).to_bytes()  # type: ignore[arg-type]
    return bytearray(struct.pack(">i", len(out))) + out


def produce_frame(topic: str, acks: int) -> bytearray:
    from minibroker_protocol.apis import produce
    from minibroker_protocol.records.v2 import Record, build_batch

    batch = build_batch([Record(offset_delta=0, key=None, value=b"x" * 100)], base_timestamp=int(time.time() * 1000))
    R = produce.REQUEST
    body = R(transactional_id=None, acks=acks, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=0, records=batch)])])
    return frame_of(produce.API.key, PRODUCE_VERSION, R, body)


def fetch_frame(topic: str) -> tuple[bytearray, int]:
    """A Fetch of partition 0 at offset 0x7eadbeef..., and where that offset is in the frame."""
    from minibroker_protocol.apis import fetch

    R = fetch.REQUEST
    marker = 0x7EADBEEF01020304
    body = R(replica_id=-1, max_wait_ms=5_000, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
             session_id=0, session_epoch=-1, topics=[R.FetchTopic(topic=topic, partitions=[
                 R.FetchPartition(partition=0, fetch_offset=marker, partition_max_bytes=1 << 20)])],
             forgotten_topics_data=[], rack_id="")
    frame = frame_of(fetch.API.key, FETCH_VERSION, R, body, client="prof-consumer")
    return frame, bytes(frame).index(struct.pack(">q", marker))


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def recv_response(sock: socket.socket) -> bytes:
    return recv_exactly(sock, struct.unpack(">i", recv_exactly(sock, 4))[0])


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=600)  # valgrind at a load of 20+
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def run_produce(bootstrap: str, topic: str, acks: int, count: int, around: tuple) -> list[float]:
    frame = produce_frame(topic, acks)
    samples = []
    start, stop = around
    with connect(bootstrap) as sock:
        for i in range(count + 200):
            if i == 200:  # the first ones warm both sides up
                start()
            struct.pack_into(">i", frame, 8, i)
            t0 = time.perf_counter()
            sock.sendall(frame)
            resp = recv_response(sock)
            if i >= 200:
                samples.append(time.perf_counter() - t0)
            if struct.unpack_from(">i", resp)[0] != i:
                raise RuntimeError("response out of order")
    stop()
    return samples


def run_e2e(bootstrap: str, topic: str, count: int, around: tuple) -> list[float]:
    produce = produce_frame(topic, 1)
    fetch, at = fetch_frame(topic)
    samples = []
    start, stop = around
    with connect(bootstrap) as p, connect(bootstrap) as c:
        p.sendall(produce)  # the topic's first record: offset 0
        recv_response(p)
        offset = 1
        for i in range(count + 200):
            if i == 200:
                start()
            struct.pack_into(">i", fetch, 8, i)
            struct.pack_into(">q", fetch, at, offset)
            c.sendall(fetch)
            time.sleep(0.0002)  # let the fetch park (a long poll at the log end)
            struct.pack_into(">i", produce, 8, i)
            t0 = time.perf_counter()
            p.sendall(produce)
            resp = recv_response(c)
            if i >= 200:
                samples.append(time.perf_counter() - t0)
            recv_response(p)
            if len(resp) < 100:
                raise RuntimeError(f"fetch response without the record ({len(resp)} bytes)")
            offset += 1
    stop()
    return samples


def create_topic(bootstrap: str, topic: str) -> None:
    from minibroker_protocol.apis import create_topics

    R = create_topics.REQUEST
    body = R(topics=[R.CreatableTopic(name=topic, num_partitions=1, replication_factor=1, assignments=[],
                                      configs=[])], timeout_ms=30_000, validate_only=False)
    with connect(bootstrap) as sock:
        sock.sendall(frame_of(create_topics.API.key, 5, R, body))
        recv_response(sock)
    time.sleep(0.2)


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("broker did not listen")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def instructions(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):  # "summary:" is 0 after callgrind_control -z
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "serve":
        return serve(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", choices=("cprofile", "callgrind", "none"), default="cprofile")
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--workloads", default="ack1,ackall,e2e")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the tree whose minibroker runs")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--loop", default="uvloop")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="mb-prof-"))
    out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="mb-prof-data-"))
    port = free_port()
    broker = [PY, str(Path(__file__).resolve()), "serve", str(out / "cprofile"), "--host", "127.0.0.1",
              "--port", str(port), "--data-dir", str(data), "--loop", args.loop, "--log-level", "WARNING",
              "--override", "auto.create.topics.enable=true"]
    if args.tool == "callgrind":
        broker = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                  f"--callgrind-out-file={out}/callgrind.%p", *broker]
    env = dict(os.environ, PYTHONPATH=str(args.checkout))
    log = open(out / "broker.log", "ab")
    proc = subprocess.Popen(broker, cwd=args.checkout, env=env, stdout=log, stderr=log)
    dumps = 0
    try:
        wait_port(port, proc)
        bootstrap = f"127.0.0.1:{port}"

        def cpu() -> float:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        marks: dict[str, float] = {}

        def start() -> None:
            marks["cpu"] = cpu()
            if args.tool == "cprofile":
                proc.send_signal(signal.SIGUSR1)
                time.sleep(0.2)
            elif args.tool == "callgrind":
                subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
                subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)

        def stop() -> None:
            marks["cpu"] = cpu() - marks["cpu"]
            if args.tool == "cprofile":
                proc.send_signal(signal.SIGUSR2)
            elif args.tool == "callgrind":
                subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
                subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)

        for name in args.workloads.split(","):
            topic = f"prof-{name}-{time.time_ns()}"
            create_topic(bootstrap, topic)
            if name == "e2e":
                samples = run_e2e(bootstrap, topic, args.count, (start, stop))
            else:
                samples = run_produce(bootstrap, topic, 1 if name == "ack1" else -1, args.count, (start, stop))
            samples.sort()
            n = len(samples)
            line = (f"{name}: {n} requests, p50 {statistics.median(samples) * 1e3:.3f} ms, "
                    f"p99 {samples[int(n * 0.99)] * 1e3:.3f} ms, broker CPU {marks['cpu'] / n * 1e6:.1f} us/request")
            if args.tool == "cprofile":
                path = out / f"cprofile.{dumps}"
                for _ in range(100):
                    if path.exists() and path.stat().st_size:
                        break
                    time.sleep(0.1)
                time.sleep(0.3)
                print(line, flush=True)
                stats = pstats.Stats(str(path))
                stats.sort_stats("tottime").print_stats(args.top)
                stats.sort_stats("cumulative").print_stats(args.top)
            elif args.tool == "callgrind":
                time.sleep(1)
                files = sorted(out.glob(f"callgrind.{proc.pid}*"), key=lambda p: p.stat().st_mtime)
                newest = files[-1]
                renamed = out / f"callgrind.{name}"
                newest.rename(renamed)
                print(f"{line}, {instructions(renamed) / n:,.0f} instructions/request ({renamed})", flush=True)
            else:
                print(line, flush=True)
            dumps += 1
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
