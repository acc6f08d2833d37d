"""The README's commands as written (issue 31), each in a scratch directory that has the
checkout's `config.yaml`, `examples/` and `.venv`, on the README's own ports: the quickstart
(`make run`'s command from the Makefile, then the kcat lines and the dump-log line) and the
SASL_SSL three-liner (certificates, a broker with examples/sasl-ssl.yaml, kcat over SASL_SSL with
PLAIN). A port the README names that is taken on this machine skips the test, saying which."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def sh_lines_after(heading: str) -> list[str]:
    """The lines of the first ```sh block after `heading` in README.md."""
    text = (ROOT / "README.md").read_text()
    rest = text[text.index(heading):]
    block = rest[rest.index("```sh\n") + 6:]
    return [line for line in block[:block.index("```")].splitlines() if line.strip()]


def sh_block_after(heading: str) -> list[list[str]]:
    """The commands of the first ```sh block after `heading` in README.md, comments dropped."""
    return [shlex.split(line, comments=True) for line in sh_lines_after(heading)]


def make_run_command() -> list[str]:
    """`make run`'s broker command, from the Makefile's recipe ($(PY) is .venv/bin/python)."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    recipe = re.sub(r"\\\n\s*", " ", recipe)  # a recipe line continued with a backslash is one command
    line = next(line.strip() for line in recipe.splitlines()[1:] if "-m minibroker" in line)
    return shlex.split(line.replace("$(PY)", ".venv/bin/python"))


def scratch_checkout(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # the checkout's .venv
    return tmp_path


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the broker exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (.ci/run installs it)")
def test_the_sasl_ssl_three_liner_works_as_written(tmp_path):
    certs, broker, kcat = sh_block_after("### With TLS and SASL (SASL_SSL) in three lines")
    assert certs[:4] == [".venv/bin/python", "-m", "minibroker", "certs"]
    assert broker[:3] == [".venv/bin/python", "-m", "minibroker"] and "data" not in broker  # not make run's dir
    assert kcat[0] == "kcat"
    busy = [p for p in (9093, 9094) if not port_free(p)]
    if busy:
        pytest.skip(f"the README's ports {busy} are in use on this machine")
    scratch_checkout(tmp_path)
    subprocess.run(certs, cwd=tmp_path, check=True, capture_output=True, timeout=60)
    proc = subprocess.Popen(broker, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(9093, proc)
        listed = subprocess.run(kcat, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert "1 brokers:" in listed.stdout and "broker 1 at 127.0.0.1:9093" in listed.stdout, listed.stdout
        # the same listener refuses a wrong password
        wrong = [a.replace("alice-secret", "wrong") for a in kcat]
        refused = subprocess.run(wrong, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert (tmp_path / "data-sasl" / ".lock").exists()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (.ci/run installs it)")
def test_the_quickstart_works_as_written(tmp_path):
    broker = make_run_command()
    assert broker[:3] == [".venv/bin/python", "-m", "minibroker"] and "--data-dir" in broker
    clients = sh_lines_after("Then point any Kafka client at `localhost:9092`:")
    tools = [line for line in sh_lines_after("Tools that come with it:") if "..." not in line]
    assert len(clients) == 3 and len(tools) == 1
    busy = [p for p in (9092, 8080, 8081) if not port_free(p)]
    if busy:
        pytest.skip(f"make run's ports {busy} are in use on this machine")
    scratch_checkout(tmp_path)
    proc = subprocess.Popen(broker, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(9092, proc)
        out = [subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=60)
               for line in clients]
        assert [o.returncode for o in out] == [0, 0, 0], [o.stderr for o in out]
        assert "1 brokers:" in out[0].stdout
        assert out[2].stdout.splitlines() == ["hello"]
        dumped = subprocess.run(["bash", "-c", tools[0]], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert dumped.returncode == 0, dumped.stderr
        assert "payload: hello" in dumped.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (.ci/run installs it)")
def test_the_cluster_block_works_as_written(tmp_path):
    lines = sh_lines_after("### A cluster on one machine")
    launcher = shlex.split(" ".join(lines[:2]).replace("\\", " "), comments=True)
    assert launcher[-1] == "&" and launcher[:4] == [".venv/bin/python", "-m", "minibroker", "cluster"]
    clients = lines[2:]
    assert len(clients) == 3
    busy = [p for p in range(19093, 19097) if not port_free(p)]
    if busy:
        pytest.skip(f"the README's cluster ports {busy} are in use on this machine")
    scratch_checkout(tmp_path)
    proc = subprocess.Popen(launcher[:-1], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "cluster-data" / "cluster.json").exists():  # written once every broker serves
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        out = [subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=60)
               for line in clients]
        assert [o.returncode for o in out] == [0, 0, 0], [o.stderr for o in out]
        assert "3 brokers:" in out[0].stdout
        assert out[2].stdout.splitlines() == ["replicated"]
        described = subprocess.run(["kcat", "-b", "127.0.0.1:19095", "-L", "-t", "r3"], capture_output=True,
                                   text=True, timeout=60)
        assert re.search(r"partition 0, leader \d, replicas: \d,\d,\d", described.stdout), described.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
