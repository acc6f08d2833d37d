"""How fast a broker is ready: in process (the test fixture) and as `python -m minibroker`.

    .venv/bin/python bench/startup.py [--runs 9] [--json]

In process: each run is a fresh Python process that imports minibroker.testing, calls
`preload()` (the imports of the start path), then times `AsyncBroker.start()` (bind, open the
empty data dir, write meta.properties, start the coordinators, accept) and a second start in
the same process. Targets (issue 8): start-to-ready < 10 ms after import.

CLI: each run starts `python -m minibroker` on a free port with an empty data dir and times
until the port accepts a TCP connection and until an ApiVersions request is answered (the broker
is really serving), and the CPU time the broker's main thread used until it listened (what the
start costs, whatever else the machine is doing). `--baseline CHECKOUT` times another checkout's
`python -m minibroker` (its own .venv) alternately with this one's, for before/after figures from
one machine state. Target: < 100 ms to listening on a quiet machine
(issue 22). For scale: Tansu starts in about 10 ms,
Apache Kafka in about 1.2 s, its GraalVM native image in 110-140 ms.

Bytecode: an installed package has its .pyc files; a checkout run with PYTHONDONTWRITEBYTECODE=1
compiles every module on every start (about 200 ms more here). By default the runs get a
bytecode cache in a temp dir (PYTHONPYCACHEPREFIX, filled by one warm-up run, nothing written
into the checkout); `--no-bytecode-cache` measures without one.

`--kafka N`: the reference Apache Kafka broker's start the same way, N runs: `kafka.Kafka` on a
formatted, empty single-node KRaft dir (the StorageTool format step is not timed), until the port
accepts and until ApiVersions is answered.

Medians are printed (the machine is shared; single runs are noisy). `python -X importtime -m
minibroker --help` shows where import time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

IN_PROCESS = r"""
import asyncio, json, time
t0 = time.perf_counter()
import minibroker.testing as mt
mt.preload()
t1 = time.perf_counter()

async def main():
    times = []
    for _ in range(2):
        b = mt.AsyncBroker()
        s = time.perf_counter()
        await b.start()
        times.append((time.perf_counter() - s) * 1000)
        await b.stop()
    return times

first, second = asyncio.run(main())
print(json.dumps({"import_ms": (t1 - t0) * 1000, "first_start_ms": first, "second_start_ms": second}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_versions_frame() -> bytes:
    # ApiVersions v0: header v1 (api_key 18, version 0, correlation id 1, client id "bench"), empty body
    body = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
    return struct.pack(">i", len(body)) + body


CLK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    """CPU time of a process's main thread so far: /proc/PID/schedstat (nanoseconds), else user +
    system time from /proc/PID/stat (clock ticks: 10 ms steps, too coarse to see a few ms go)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / CLK


def cli_run(env: dict[str, str], timeout: float = 20.0, root: Path = ROOT) -> tuple[float, float, float]:
    """(ms to listening, ms to ApiVersions answered, CPU ms to listening) of `python -m minibroker`
    in the checkout `root` (with its own .venv when it is not this one)."""
    port = free_port()
    data = tempfile.mkdtemp(prefix="minibroker-bench-")
    py = PY if root == ROOT else str(root / ".venv" / "bin" / "python")
    t0 = time.perf_counter()
    proc = subprocess.Popen([py, "-m", "minibroker", "--port", str(port), "--data-dir", data,
                             "--log-level", "WARNING"], cwd=root, env=env)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError:
                time.sleep(0.002)
                continue
            listening = (time.perf_counter() - t0) * 1000
            cpu = cpu_ms(proc.pid)
            with sock:
                sock.settimeout(timeout)
                sock.sendall(api_versions_frame())
                head = sock.recv(8)
                if len(head) < 8 or struct.unpack(">i", head[4:8])[0] != 1:
                    raise RuntimeError("no ApiVersions answer")
            return listening, (time.perf_counter() - t0) * 1000, cpu
        raise RuntimeError("broker did not start listening")
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(data, ignore_errors=True)


def kafka_runs(runs: int) -> list[tuple[float, float]]:
    """(ms to listening, ms to ApiVersions answered) of the reference broker, `runs` times."""
    sys.path.insert(0, str(ROOT / "reference"))
    import kafka_reference as kr

    ref = kr.KafkaReference(heap="1g")
    ref.start()  # formats the dir and writes the config; its own start is not counted
    ref.stop()
    workdir = Path(tempfile.mkdtemp(prefix="kafka-startup-"))
    ref = kr.KafkaReference(heap="1g", workdir=workdir)
    ref.start()
    ref.stop()
    out = []
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            proc = subprocess.Popen(kr.java_command("kafka.Kafka", [str(workdir / "server.properties")], heap="1g",
                                                    log4j=workdir / "log4j2.properties"),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                listening = None
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    if listening is None:
                        try:
                            socket.create_connection(("127.0.0.1", ref.port), timeout=1).close()
                            listening = (time.perf_counter() - t0) * 1000
                        except OSError:
                            time.sleep(0.005)
                            continue
                    if kr.api_versions_answered("127.0.0.1", ref.port):
                        out.append((listening, (time.perf_counter() - t0) * 1000))
                        break
                    time.sleep(0.005)
            finally:
                proc.terminate()
                proc.wait(60)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def in_process_run(env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([PY, "-c", IN_PROCESS], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
                         env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-bytecode-cache", action="store_true", help="compile every module on every start")
    p.add_argument("--kafka", type=int, default=0, metavar="N", help="also time the reference Kafka's start, N runs")
    p.add_argument("--baseline", type=Path, default=None, metavar="CHECKOUT",
                   help="also time `python -m minibroker` of another checkout (its .venv), alternating run by run")
    args = p.parse_args(argv)
    env = dict(os.environ)
    cache = None
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        cache = tempfile.mkdtemp(prefix="minibroker-pycache-")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        in_process_run(env)  # warm-up: fills the cache
        cli_run(env)
        if args.baseline is not None:
            cli_run(env, root=args.baseline.resolve())
    try:
        inproc = [in_process_run(env) for _ in range(args.runs)]
        cli, base = [], []
        for _ in range(args.runs):  # alternating: both see the same machine, run by run
            cli.append(cli_run(env))
            if args.baseline is not None:
                base.append(cli_run(env, root=args.baseline.resolve()))
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    med = statistics.median
    result = {
        "runs": args.runs, "bytecode_cache": not args.no_bytecode_cache,
        "in_process_import_ms": med(r["import_ms"] for r in inproc),
        "in_process_first_start_ms": med(r["first_start_ms"] for r in inproc),
        "in_process_second_start_ms": med(r["second_start_ms"] for r in inproc),
        "cli_listening_ms": med(c[0] for c in cli),
        "cli_api_versions_ms": med(c[1] for c in cli),
        "cli_cpu_to_listening_ms": med(c[2] for c in cli),
        "load_average_1m": os.getloadavg()[0],
    }
    if base:
        result["baseline"] = str(args.baseline)
        result["baseline_listening_ms"] = med(c[0] for c in base)
        result["baseline_api_versions_ms"] = med(c[1] for c in base)
        result["baseline_cpu_to_listening_ms"] = med(c[2] for c in base)
    if args.kafka:
        k = kafka_runs(args.kafka)
        result["kafka_listening_ms"] = med(x[0] for x in k)
        result["kafka_api_versions_ms"] = med(x[1] for x in k)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"medians of {args.runs} runs, {'with' if cache else 'without'} a bytecode cache")
    print(f"  in process: import + preload          {result['in_process_import_ms']:8.1f} ms")
    print(f"  in process: AsyncBroker.start (first)  {result['in_process_first_start_ms']:8.1f} ms   target < 10")
    print(f"  in process: AsyncBroker.start (again)  {result['in_process_second_start_ms']:8.1f} ms")
    print(f"  python -m minibroker: port accepts     {result['cli_listening_ms']:8.1f} ms   target < 100 (issue 22)")
    print(f"  python -m minibroker: ApiVersions      {result['cli_api_versions_ms']:8.1f} ms")
    print(f"  python -m minibroker: CPU to listening {result['cli_cpu_to_listening_ms']:8.1f} ms   "
          f"(main thread; load average {result['load_average_1m']:.2f} on {os.cpu_count()} CPUs)")
    if base:
        print(f"  baseline {args.baseline}: port accepts {result['baseline_listening_ms']:8.1f} ms, ApiVersions "
              f"{result['baseline_api_versions_ms']:.1f} ms, CPU to listening {result['baseline_cpu_to_listening_ms']:.1f} ms")
    if args.kafka:
        print(f"  Apache Kafka (JVM): port accepts       {result['kafka_listening_ms']:8.1f} ms")
        print(f"  Apache Kafka (JVM): ApiVersions        {result['kafka_api_versions_ms']:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
