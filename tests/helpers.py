"""What the project's tests share about brokers: the config every test broker gets, a free
loopback port, and `BrokerProcess` (`python -m minibroker` as a child, for SIGTERM and kill -9).

A helper module, not a test module: tests import from here, never from another test_*.py
(tests/test_test_layout.py checks that).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_OVERRIDES = {"group.initial.rebalance.delay.ms": 0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """`python -m minibroker` as a child process, to stop with SIGTERM or kill with SIGKILL."""

    def __init__(self, data_dir: Path, port: int | None = None, overrides: dict | None = None,
                 extra_args: list[str] | None = None):
        self.data_dir = data_dir
        self.port = port or free_port()
        self.overrides = {**TEST_OVERRIDES, **(overrides or {})}
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"broker-{self.port}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> str:
        args = [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(self.port),
                "--data-dir", str(self.data_dir), *self.extra_args]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: {self.log_path.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self.bootstrap
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("broker did not start listening")

    def stop(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self._log.close()
        return rc

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")
