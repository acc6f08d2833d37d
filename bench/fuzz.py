"""Time-bounded fuzzing of the decoders and of a live broker; prints inputs tried, crashes, hangs.

    .venv/bin/python bench/fuzz.py [--seconds 10] [--live 30] [--atheris 0] [--out DIR]

Three parts, each optional:
- decoders: for every target of tests/fuzz/targets.py, a mutation loop (byte flips, interesting
  integers, inserts, cuts, splices of valid inputs) plus random inputs, for --seconds each. A crash
  is any exception but the protocol's own errors; a hang is one input taking over 1 s.
- live: --live seconds of connections to a broker subprocess, each sending 1-4 mutated or random
  frames and then EOF; the broker must close each within 10 s, keep answering ApiVersions on a
  fresh connection, and its log must hold no traceback.
- atheris: if it is installed, --atheris seconds of coverage-guided fuzzing per decoder target
  (libFuzzer, in a child process per target); its run counts are added.
Crashing inputs are written to --out (default a temp dir) as <target>-<n>.bin.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HANG_S = 1.0
# tests.fuzz.targets (and with it protocol/) is imported inside the functions: the atheris child
# must import protocol/ under atheris.instrument_imports, not before.


def fuzz_decoders(seconds: float, out: Path, seed: int) -> dict[str, dict[str, int]]:
    from tests.fuzz.targets import EXPECTED, TARGETS, mutate, seeds_for

    rng = random.Random(seed)
    results: dict[str, dict[str, int]] = {}
    for name, target in TARGETS.items():
        seeds = seeds_for(name)
        corpus = list(seeds)
        tried = crashes = hangs = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if rng.random() < 0.85:
                data = mutate(rng, rng.choice(corpus))
            else:
                data = rng.randbytes(rng.randrange(128))
            t0 = time.monotonic()
            try:
                target(data)
                if len(corpus) < 200 and rng.random() < 0.01:
                    corpus.append(data)  # accepted inputs make good parents
            except EXPECTED:
                pass
            except Exception:
                crashes += 1
                if crashes <= 5:
                    (out / f"{name}-{crashes}.bin").write_bytes(data)
                    print(f"CRASH {name}: {traceback.format_exc(limit=3)}", file=sys.stderr)
            if time.monotonic() - t0 > HANG_S:
                hangs += 1
                (out / f"{name}-hang-{hangs}.bin").write_bytes(data)
            tried += 1
        results[name] = {"inputs": tried, "crashes": crashes, "hangs": hangs}
        print(f"{name}: {tried} inputs, {crashes} crashes, {hangs} hangs", file=sys.stderr, flush=True)
    return results


# -- live --------------------------------------------------------------------------------------------


def _frames(rng: random.Random, seeds: list[bytes]) -> list[bytes]:
    from minibroker_protocol.records.batch import crc32c
    from tests.fuzz.targets import mutate, seed_batches
    from tests.fuzz.test_live_connection import produce_request_bytes

    out = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        if kind == 4:  # a mutated batch with its CRC made right: only the broker's checks stop it
            batch = bytearray(mutate(rng, rng.choice(seed_batches()[:5])))
            if len(batch) >= 61:
                struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
            p = produce_request_bytes(bytes(batch))
            out.append(struct.pack(">i", len(p)) + p)
        elif kind == 0:
            p = mutate(rng, rng.choice(seeds))
            out.append(struct.pack(">i", len(p)) + p)
        elif kind == 1:
            s = rng.choice(seeds)
            out.append(mutate(rng, struct.pack(">i", len(s)) + s))
        elif kind == 2:
            head = struct.pack(">hhih", rng.randint(-1, 80), rng.randint(-1, 20), 1, 4) + b"fuzz"
            p = head + rng.randbytes(rng.randrange(200))
            out.append(struct.pack(">i", len(p)) + p)
        else:
            out.append(rng.randbytes(rng.randint(1, 300)))
    return out


def _closes_within(sock: socket.socket, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            if not sock.recv(1 << 16):
                return True
        except OSError as e:
            return not isinstance(e, TimeoutError)
    return False


def _api_versions_ok(port: int) -> bool:
    from bench.crash_loop import Wire
    from minibroker_protocol.apis import api_versions

    w = Wire(port, timeout=10)
    try:
        return w.call(api_versions.API, 3, api_versions.REQUEST(client_software_name="fuzz",
                                                                client_software_version="1")).error_code == 0
    finally:
        w.close()


def fuzz_live(seconds: float, seed: int, workdir: Path) -> dict[str, int]:
    from tests.fuzz.targets import seed_requests
    from tests.helpers import BrokerProcess

    rng = random.Random(seed)
    seeds = seed_requests()
    broker = BrokerProcess(workdir / "data", overrides={"socket.request.max.bytes": 64 * 1024,
                                                        "auto.create.topics.enable": "false"})
    broker.start()
    from bench.crash_loop import create_topic

    create_topic(broker.port, "t", 1)
    connections = frames_sent = hangs = dead = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            frames = _frames(rng, seeds)
            with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
                try:
                    for f in frames:
                        s.sendall(f)
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                if not _closes_within(s, 10.0):
                    hangs += 1
            connections += 1
            frames_sent += len(frames)
            if connections % 50 == 0 and not _api_versions_ok(broker.port):
                dead += 1
                break
        if not dead and not _api_versions_ok(broker.port):
            dead += 1
    finally:
        alive = broker.proc is not None and broker.proc.poll() is None
        if alive:
            broker.stop()
    log = broker.log_text()
    stored = _stored(workdir / "data" / "t-0")
    return {"connections": connections, "frames": frames_sent, "hangs": hangs, "unanswered_api_versions": dead,
            "broker_died": int(not alive), "tracebacks_in_log": log.count("Traceback"), **stored}


def _stored(part_dir: Path) -> dict[str, int]:
    """What the fuzzed produces got into the log: batches that decode whole, batches whose header
    passes but whose records do not (header-only validation: a known gap), and batches whose
    header fails (a bug)."""
    from minibroker_protocol.records.batch import InvalidBatch, iter_batches
    from minibroker_protocol.records.v2 import decode_batch

    whole = record_gaps = bad_headers = 0
    for path in sorted(part_dir.glob("*.log")):
        data = path.read_bytes()
        for view in iter_batches(data):
            try:
                view.validate()
            except InvalidBatch:
                bad_headers += 1
                continue
            try:
                decode_batch(data, view.pos)
                whole += 1
            except InvalidBatch:
                record_gaps += 1
    return {"stored_whole": whole, "stored_record_level_gaps": record_gaps, "stored_bad_headers": bad_headers}


# -- atheris -------------------------------------------------------------------------------------------


def atheris_child(name: str, seconds: int) -> None:
    import atheris

    assert "minibroker_protocol" not in sys.modules, "protocol/ imported before instrumentation"
    with atheris.instrument_imports(include=["minibroker_protocol"]):
        from tests.fuzz import targets
    target = targets.TARGETS[name]
    seeds = targets.seeds_for(name)

    def one(data: bytes) -> None:
        # The first input byte picks a seed to splice the rest into: libFuzzer starts from nothing.
        if data and data[0] & 1:
            s = seeds[data[0] % len(seeds)]
            data = s[:len(data)] + data[1:]
        targets.run(target, data)

    atheris.Setup([sys.argv[0], f"-max_total_time={seconds}", "-rss_limit_mb=1024", "-print_final_stats=1"], one)
    atheris.Fuzz()


def fuzz_atheris(seconds: int) -> dict[str, dict[str, int]] | str:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return "atheris is not installed"
    from tests.fuzz.targets import TARGETS

    results: dict[str, dict[str, int]] = {}
    for name in TARGETS:
        p = subprocess.run([sys.executable, __file__, "--atheris-child", name, "--atheris", str(seconds)],
                           capture_output=True, text=True, timeout=seconds + 120)
        runs = re.search(r"Done (\d+) runs", p.stderr) or re.search(r"stat::number_of_executed_units: (\d+)",
                                                                    p.stderr)
        crashed = p.returncode != 0
        results[name] = {"inputs": int(runs.group(1)) if runs else 0, "crashes": int(crashed)}
        if crashed:
            print(f"ATHERIS CRASH {name}:\n{p.stderr[-3000:]}", file=sys.stderr)
        print(f"atheris {name}: {results[name]}", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per decoder target (0: skip)")
    ap.add_argument("--live", type=float, default=30.0, help="seconds of live-connection fuzzing (0: skip)")
    ap.add_argument("--atheris", type=int, default=0, help="seconds of atheris per target (0: skip)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--atheris-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.atheris_child:
        atheris_child(args.atheris_child, args.atheris)
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"out": str(out)}
    ok = True
    if args.seconds > 0:
        dec = fuzz_decoders(args.seconds, out, args.seed)
        report["decoders"] = dec
        report["decoder_inputs"] = sum(r["inputs"] for r in dec.values())
        ok &= all(not r["crashes"] and not r["hangs"] for r in dec.values())
    if args.live > 0:
        live = fuzz_live(args.live, args.seed, out)
        report["live"] = live
        ok &= not (live["hangs"] or live["unanswered_api_versions"] or live["broker_died"]
                   or live["tracebacks_in_log"] or live["stored_bad_headers"])
    if args.atheris > 0:
        ath = fuzz_atheris(args.atheris)
        report["atheris"] = ath
        if isinstance(ath, dict):
            report["atheris_inputs"] = sum(r["inputs"] for r in ath.values())
            ok &= all(not r["crashes"] for r in ath.values())
    report["ok"] = ok
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
