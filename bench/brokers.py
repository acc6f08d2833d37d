"""The three brokers a bench run compares, started side by side, and what /proc says about them.

* `Minibroker`: `python -m minibroker` with a data dir under a temp dir (page cache, Kafka's
  default flush policy), uvloop unless told otherwise.
* `Kafka`: the Apache Kafka 4.4 reference broker (`reference/kafka_reference.py`): single node,
  KRaft, Kafka's defaults except what one node needs, a data dir under /tmp like minibroker's
  (same filesystem), a 1 GiB heap as `kafka-server-start.sh` gives it.
* `Tansu`: the Rust peer, the binary `../shared/peers/tansu.sh bin` fetches, started here
  directly (not through the script's shared PID file, which other sessions on the machine use),
  with its default in-memory storage.

Each has `start() -> bootstrap`, `stop()`, `pid`. The /proc helpers read a process's CPU
seconds, peak RSS (VmHWM, resettable with clear_refs) and open file descriptors.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TANSU_SH = ROOT.parent / "shared" / "peers" / "tansu.sh"
CLK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(ROOT / "reference"))
import kafka_reference as kr  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"nothing listening on {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def reset_peak_rss(pid: int) -> None:
    """Reset VmHWM, so that the next reading is this scenario's peak (Linux: clear_refs 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass  # then the figure is the peak so far


def peak_rss_mb(pid: int) -> float:
    return _status_kb(pid, "VmHWM:") / 1024


def rss_mb(pid: int) -> float:
    return _status_kb(pid, "VmRSS:") / 1024


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Minibroker:
    name = "minibroker"

    def __init__(self, loop: str = "uvloop", overrides: tuple[str, ...] = (), data_dir: Path | None = None,
                 extra_args: tuple[str, ...] = (), cwd: Path = ROOT, name: str = "minibroker"):
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix="mb-bench-"))
        self.data_dir = data_dir or self.dir / "data"
        self.port = free_port()
        self.loop = loop
        self.overrides = ("auto.create.topics.enable=true", *overrides)
        self.extra_args = extra_args
        self.cwd = cwd  # another checkout's minibroker (python -m imports from the cwd first)
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self) -> list[str]:
        cmd = [PY, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir",
               str(self.data_dir), "--loop", self.loop, "--log-level", "WARNING", *self.extra_args]
        for o in self.overrides:
            cmd += ["--override", o]
        return cmd

    def start(self) -> str:
        log = open(self.dir / "broker.log", "ab")  # --trace writes to stdout
        self.proc = subprocess.Popen(self.command(), cwd=self.cwd, stdout=log, stderr=log)
        wait_port(self.port, proc=self.proc)
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no clean-shutdown marker is written."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(30)
            self.proc = None

    def stop(self, remove: bool = True) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(60)
            self.proc = None
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)


class Kafka:
    """The reference broker. `heap` as kafka-server-start.sh's default (-Xmx1G)."""

    name = "kafka"

    def __init__(self, heap: str = "1g", overrides: dict[str, object] | None = None, workdir: Path | None = None):
        self.ref = kr.KafkaReference(heap=heap, overrides=overrides or {}, workdir=workdir)

    @property
    def pid(self) -> int:
        assert self.ref.pid is not None
        return self.ref.pid

    def start(self, timeout: float = 180.0) -> str:
        self.ref.start(timeout)
        return self.ref.bootstrap

    def kill(self) -> None:
        if self.ref.proc is not None:
            os.kill(self.ref.proc.pid, signal.SIGKILL)
            self.ref.proc.wait(30)
            self.ref.proc = None

    def stop(self) -> None:
        self.ref.stop(grace=60)


def tansu_binary() -> str:
    out = subprocess.run(["bash", str(TANSU_SH), "bin"], capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.strip().splitlines()[-1]


class Tansu:
    name = "tansu"

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tansu-bench-"))
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> str:
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        self.proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", os.environ.get("TANSU_STORAGE", "memory://tansu/")],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "tansu.log", "ab"), env=env, cwd=self.dir)
        wait_port(self.port, proc=self.proc)
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)
