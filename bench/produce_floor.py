"""The floor under a produce round trip: a loop that answers with no work, minibroker, and Kafka (issue 33).

    .venv/bin/python bench/produce_floor.py [--rounds 5] [--count 20000] [--brokers canned,minibroker,kafka]
                                            [--cpu-hog N] [--results bench/results/produce-floor.json]

One raw-socket client (bench/profile_paths.py's: no client library, one Produce v9 of one 100 B
record at a time, acks=-1, after 200 to warm up) times `--count` round trips against each of:

- canned: a uvloop server in Python, the loop minibroker runs, that answers every frame with the
  same Produce v9 response bytes (the request's correlation id put in), parsing nothing and
  writing no log. It is what the interpreter, the loop and the kernel's loopback cost per request
  before any broker work: the floor a Python broker cannot go under;
- minibroker: `python -m minibroker` (bench/brokers.py);
- kafka: the reference broker (reference/kafka_reference.py).

The servers run side by side for the whole run and are measured in turn, the order rotating per
round. Per server and round: p50 and p99 of the round trip, and the server's CPU per request
(/proc, every thread). Medians over the rounds. What the floor says: the broker work per produce
is our CPU per request less the canned server's; to answer as fast as Kafka that work must fit in
Kafka's p50 less the canned p50. `--cpu-hog N` runs N spinning processes beside them for the whole
run, as bench/run.py's does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import profile_paths as pp  # noqa: E402
from brokers import Kafka, Minibroker, cpu_seconds, free_port, wait_port  # noqa: E402

ACKS = -1  # bench/run.py's produce-ack scenario is acks=all; with one broker it is acks=1


def produce_response_body() -> bytes:
    """A Produce v9 response (header v1 without its correlation id): one partition, base offset 0."""
    from minibroker_protocol.apis import produce
    from minibroker_protocol.codec import encode

    R = produce.RESPONSE
    body = R(responses=[R.TopicProduceResponse(name="floor", partition_responses=[
        R.PartitionProduceResponse(index=0, error_code=0, base_offset=0)])], throttle_time_ms=0)
    return b"\0" + bytes(encode(R, pp.PRODUCE_VERSION, body).to_bytes())  # the header's empty tagged fields


def serve_canned(port: int, body: bytes) -> None:
    """The canned server's process: frames split off the stream, one write of fixed bytes each."""
    import uvloop

    class Canned(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.WriteTransport = transport  # type: ignore[assignment]  # uvloop's
            self.buf = bytearray()
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def data_received(self, data: bytes) -> None:
            self.buf += data
            while len(self.buf) >= 4:
                size = struct.unpack_from(">i", self.buf)[0]
                if len(self.buf) < 4 + size:
                    return
                correlation_id = bytes(self.buf[8:12])
                del self.buf[:4 + size]
                self.transport.write(struct.pack(">i", 4 + len(body)) + correlation_id + body)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Canned, "127.0.0.1", port)
        await server.serve_forever()

    uvloop.run(main())


class Canned:
    name = "canned"

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: multiprocessing.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None and self.proc.pid is not None
        return self.proc.pid

    def start(self) -> str:
        self.proc = multiprocessing.Process(target=serve_canned, args=(self.port, produce_response_body()), daemon=True)
        self.proc.start()
        wait_port(self.port)
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(30)


def measure(server: object, bootstrap: str, count: int) -> dict:
    topic = f"floor-{time.time_ns()}"
    if not isinstance(server, Canned):
        pp.create_topic(bootstrap, topic)
    pid = server.pid  # type: ignore[attr-defined]
    cpu: dict[str, float] = {}
    samples = pp.run_produce(bootstrap, topic, ACKS, count,
                             (lambda: cpu.__setitem__("start", cpu_seconds(pid)),
                              lambda: cpu.__setitem__("stop", cpu_seconds(pid))))
    samples.sort()
    return {"p50_ms": statistics.median(samples) * 1e3, "p99_ms": samples[int(len(samples) * 0.99)] * 1e3,
            "cpu_us": (cpu["stop"] - cpu["start"]) / len(samples) * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--brokers", default="canned,minibroker,kafka")
    ap.add_argument("--cpu-hog", type=int, default=0, metavar="N")
    ap.add_argument("--results", type=Path, default=None)
    a = ap.parse_args()
    makers = {"canned": Canned, "minibroker": Minibroker, "kafka": Kafka}
    servers = [makers[n]() for n in a.brokers.split(",")]
    rounds: dict[str, list[dict]] = {s.name: [] for s in servers}  # type: ignore[attr-defined]
    started: list[tuple[object, str]] = []
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.cpu_hog)]
    try:
        for s in servers:
            started.append((s, s.start()))  # type: ignore[attr-defined]
        for r in range(a.rounds):
            order = started[r % len(started):] + started[:r % len(started)]
            for s, bootstrap in order:
                m = measure(s, bootstrap, a.count)
                rounds[s.name].append(m)  # type: ignore[attr-defined]
                print(f"round {r + 1} {s.name}: p50 {m['p50_ms']:.3f} ms, p99 {m['p99_ms']:.3f} ms, "  # type: ignore[attr-defined]
                      f"CPU {m['cpu_us']:.1f} us/request", flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        for s, _ in started:
            s.stop()  # type: ignore[attr-defined]
    hog = f", {a.cpu_hog} CPU hog(s) beside them" if a.cpu_hog else ""
    print(f"\nmedians of {a.rounds} rounds, {a.count} produces each (acks={ACKS}, 1 x 100 B{hog}):")
    medians = {}
    for name, ms in rounds.items():
        medians[name] = {k: statistics.median(m[k] for m in ms) for k in ("p50_ms", "p99_ms", "cpu_us")}
        m = medians[name]
        print(f"  {name:<11} p50 {m['p50_ms']:.3f} ms  p99 {m['p99_ms']:.3f} ms  CPU {m['cpu_us']:.1f} us/request")
    if "canned" in medians and "minibroker" in medians:
        work = medians["minibroker"]["cpu_us"] - medians["canned"]["cpu_us"]
        print(f"  minibroker's broker work: {work:.1f} us of CPU a produce above the canned loop")
        if "kafka" in medians:
            room = (medians["kafka"]["p50_ms"] - medians["canned"]["p50_ms"]) * 1e3
            print(f"  Kafka's p50 less the canned p50: {room:.1f} us, the room a produce's work has to match Kafka")
    if a.results:
        a.results.parent.mkdir(parents=True, exist_ok=True)
        a.results.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "argv": sys.argv[1:], "cpu_hogs": a.cpu_hog,
                                         "rounds": rounds, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
