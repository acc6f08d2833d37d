"""docs/tour.md and docs/tour-replication.md cannot drift: every command in them runs here,
against a broker (or, for the replication part, a `python -m minibroker cluster`) started with the
doc's own command line, and every output block shown after a command must match what the
command printed (or, for `tour:trace` blocks, what the broker's --trace printed meanwhile).

Doc markers (HTML comments, invisible when rendered):
  <!-- tour:broker -->  the next ```sh block starts the broker (run here in the background)
  <!-- tour:run -->     the next ```sh block is run with bash
  <!-- tour:output -->  the next ```text block is the last command's stdout
  <!-- tour:trace -->   the next ```text block is the trace the broker printed since the last command
In shown blocks, `…` stands for any text (within a line), a run of spaces for any run of spaces,
and a line that is only `…` for any number of lines. Timestamps, CRCs of timestamped data, latencies, ports, ids and the data dir are
masked on both sides.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "docs" / "tour.md"
REPLICATION_TOUR = ROOT / "docs" / "tour-replication.md"

_MASKS = [
    (re.compile(r"\b1[5-9]\d{11}\b"), "<ts>"),  # epoch milliseconds
    (re.compile(r"\bcrc: \d+"), "crc: <crc>"),
    (re.compile(r"\bcrc = \d+"), "crc = <crc>"),
    (re.compile(r"\d+\.\d ms\b"), "<ms> ms"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"cluster_id: '[^']*'"), "cluster_id: <id>"),
    (re.compile(r"\bport: \d+"), "port: <port>"),
    (re.compile(r"127\.0\.0\.1:\d+|localhost:\d+"), "<bootstrap>"),
]


def mask(text: str, data_dir: str | None = None) -> str:
    if data_dir:
        text = text.replace(data_dir, "$DATA")
    for rx, sub in _MASKS:
        text = rx.sub(sub, text)
    return text


@dataclass
class Step:
    kind: str  # broker, run, output, trace
    text: str
    line: int


def parse(doc: str) -> list[Step]:
    steps = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"<!-- tour:(broker|run|output|trace) -->", lines[i].strip())
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            k = j + 1
            while not lines[k].startswith("```"):
                k += 1
            steps.append(Step(m.group(1), "\n".join(lines[j + 1:k]), j + 1))
            i = k
        i += 1
    return steps


def _line_rx(doc_line: str) -> re.Pattern[str]:
    # `…` is any text; a run of spaces is any run of spaces (columns of elided hex differ in width)
    def part(text: str) -> str:
        return "".join(r"\s+" if tok.isspace() else re.escape(tok) for tok in re.split(r"(\s+)", text) if tok)
    return re.compile(".*".join(part(p) for p in doc_line.split("…")) + r"\Z")


def matches(shown: str, actual: str) -> str | None:
    """None if `actual` fits `shown`, else a description of the first difference."""
    want = shown.splitlines()
    got = actual.splitlines()
    gi = 0
    skipping = False
    for w in want:
        if w.strip() == "…":
            skipping = True
            continue
        rx = _line_rx(w)
        while gi < len(got) and not rx.match(got[gi]):
            if not skipping:
                return f"expected {w!r}\n     got {got[gi]!r}"
            gi += 1
        if gi == len(got):
            return f"expected {w!r}, but the output ended"
        gi += 1
        skipping = False
    if gi < len(got) and not skipping:
        return f"unexpected extra output from {got[gi]!r}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_run(n: int) -> int:
    """A port P with P..P+n-1 all free now (the cluster's brokers listen on P+i)."""
    for _ in range(50):
        base = free_port()
        try:
            for i in range(n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no run of {n} free ports")


class Tour:
    """Runs the doc's steps; `results` keeps what each shown block was compared with."""

    def __init__(self, workdir: Path):
        self.data = str(workdir / "data")
        self.port = free_port()
        self.env = {**os.environ, "DATA": self.data, "BOOTSTRAP": f"localhost:{self.port}",
                    "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.trace_path = workdir / "trace.txt"
        self.trace_seen = 0
        self.broker: subprocess.Popen | None = None
        self.last_stdout = ""

    def start_broker(self, command: str) -> None:
        command = command.replace("9092", str(self.port))
        self.trace_file = open(self.trace_path, "w")
        cluster = " cluster " in command
        if cluster:  # brokers on port+1.., the console on a port of its own, ready once cluster.json exists
            self.port = free_run(5)  # the launcher's ports: P (unused), brokers P+1..P+3, controller P+4
            command = command.replace(command.split("--port ")[1].split()[0], str(self.port), 1)
            console = free_port()
            command = command.replace("8080", str(console))
            self.env["BOOTSTRAP"] = ",".join(f"localhost:{self.port + i}" for i in (1, 2, 3))
            self.env["CONSOLE"] = f"http://localhost:{console}"
        self.broker = subprocess.Popen(["bash", "-c", "exec " + command], cwd=ROOT, env=self.env,
                                       stdout=self.trace_file, stderr=subprocess.STDOUT if cluster else subprocess.DEVNULL)
        deadline = time.monotonic() + (180 if cluster else 20)
        while time.monotonic() < deadline:
            if cluster:
                if (Path(self.data) / "cluster.json").exists():
                    return
                if self.broker.poll() is not None:
                    break
                time.sleep(0.2)
                continue
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.02)
        self.trace_file.flush()
        raise RuntimeError(f"the tour's broker did not start: {self.trace_path.read_text()[-2000:]}")

    def run(self, command: str) -> None:
        r = subprocess.run(["bash", "-c", "set -eo pipefail\n" + command], cwd=ROOT, env=self.env,
                           capture_output=True, text=True, timeout=240)  # Kafka's tools start JVMs
        if r.returncode != 0:
            raise AssertionError(f"command failed ({r.returncode}):\n{command}\n{r.stderr}")
        self.last_stdout = r.stdout
        self._settle()

    def _settle(self, quiet: float = 0.7, limit: float = 5.0) -> None:
        # a consumer's last long-polling Fetch is answered after the client has gone: wait until
        # the trace stops growing so it lands in this step, not the next one
        deadline = time.monotonic() + limit
        size, since = self.trace_path.stat().st_size, time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.trace_path.stat().st_size
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return

    def new_trace(self) -> str:
        text = self.trace_path.read_text()
        out, self.trace_seen = text[self.trace_seen:], len(text)
        return out

    def stop(self) -> None:
        nodes = Path(self.data) / "cluster.json"
        if nodes.exists():  # a broker the tour paused must run to stop
            for b in json.loads(nodes.read_text())["brokers"]:
                with contextlib.suppress(OSError):
                    os.kill(b["pid"], signal.SIGCONT)
        if self.broker is not None and self.broker.poll() is None:
            self.broker.send_signal(signal.SIGTERM)
            try:
                self.broker.wait(60)
            except subprocess.TimeoutExpired:
                self.broker.kill()
                self.broker.wait(10)
            self.trace_file.close()


def run_tour(workdir: Path, check: bool = True, doc: Path = TOUR) -> list[tuple[Step, str]]:
    steps = parse(doc.read_text())
    tour = Tour(workdir)
    compared: list[tuple[Step, str]] = []
    try:
        for step in steps:
            if step.kind == "broker":
                tour.start_broker(step.text)
            elif step.kind == "run":
                tour.new_trace()  # the trace shown after a command is what the command caused
                tour.run(step.text)
            else:
                actual = tour.last_stdout if step.kind == "output" else tour.new_trace()
                actual = mask(actual, tour.data)
                compared.append((step, actual))
                if check:
                    problem = matches(mask(step.text, tour.data), actual)
                    if problem:
                        raise AssertionError(f"docs/{doc.name} line {step.line}: {problem}\n--- actual ---\n{actual}")
    finally:
        tour.stop()
    return compared


@pytest.mark.skipif(shutil.which("kcat") is None, reason="the tour uses kcat")
def test_every_output_in_the_tour_is_what_its_command_prints(tmp_path):
    steps = parse(TOUR.read_text())
    assert [s.kind for s in steps].count("broker") == 1
    assert sum(s.kind in ("output", "trace") for s in steps) >= 6
    run_tour(tmp_path)


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("kcat") is None or shutil.which("jq") is None, reason="the tour uses kcat and jq")
def test_every_output_in_the_replication_tour_is_what_its_command_prints(tmp_path):
    """Three brokers: the HW stays behind the LEO while a follower is paused, the ISR shrinks and
    grows back, a killed leader's partition moves to a follower in a new leader epoch."""
    from reference import kafka_reference as kr

    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    steps = parse(REPLICATION_TOUR.read_text())
    assert [s.kind for s in steps].count("broker") == 1
    assert sum(s.kind == "output" for s in steps) >= 5
    run_tour(tmp_path, doc=REPLICATION_TOUR)


def test_the_matcher_can_fail():
    assert matches("a\n…\nd", "a\nb\nc\nd") is None
    assert matches("a …", "a b c") is None
    assert matches("a\nd", "a\nb\nd") is not None
    assert matches("x  …   y", "x 12 34 y") is None and matches("x y", "xy") is not None
    assert matches("a\nb", "a") is not None
    assert matches("a", "a\nb") is not None
    assert mask("CreateTime: 1700000000000 crc: 123 0.4 ms", "/x") == "CreateTime: <ts> crc: <crc> <ms> ms"


if __name__ == "__main__":  # print what the doc's blocks are compared with (to write the doc)
    import tempfile

    for step, actual in run_tour(Path(tempfile.mkdtemp()), check=False):
        print(f"=== line {step.line} ({step.kind})\n{actual}")
