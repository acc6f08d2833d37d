"""A start that cannot work says why in one line (issue 31): `python -m minibroker` in a real
process, exit status 2, the config key, listener or path named, the traceback only with --debug;
and `--help` shows --data-dir's default and lists the subcommands."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, free_port


def run(*args: str, cwd: Path = ROOT, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minibroker", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def refused(*args: str, cwd: Path = ROOT) -> str:
    """The one line a start that cannot work prints (exit status 2, nothing else on stderr)."""
    got = run(*args, cwd=cwd)
    assert got.returncode == 2, got.stderr
    lines = got.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr, got.stderr
    return lines[0]


def test_an_invalid_config_value_names_the_key(tmp_path):
    assert refused("--port", "0", "--data-dir", str(tmp_path / "d"), "--override", "num.partitions=three") == (
        "minibroker: Invalid value three for configuration num.partitions: Not a number of type INT")


def test_an_override_that_is_not_key_value(tmp_path):
    assert refused("--port", "0", "--data-dir", str(tmp_path / "d"), "--override", "num.partitions") == (
        "minibroker: Invalid override 'num.partitions': expected key=value")


def test_a_port_in_use_names_the_port_and_the_listener(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused("--host", "127.0.0.1", "--port", str(port), "--data-dir", str(tmp_path / "d"))
    assert line == (f"minibroker: Socket server failed to bind to 127.0.0.1:{port} (listener PLAINTEXT): "
                    "Address already in use.")
    assert not (tmp_path / "d").exists()  # refused before the data dir is touched


def test_a_second_listener_in_use_is_the_one_named(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused("--data-dir", str(tmp_path / "d"), "--override",
                       f"listeners=PLAINTEXT://127.0.0.1:{free_port()},OTHER://127.0.0.1:{port}",
                       "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT")
    assert line == (f"minibroker: Socket server failed to bind to 127.0.0.1:{port} (listener OTHER): "
                    "Address already in use.")


def test_a_console_port_in_use_is_named_and_the_broker_stops_cleanly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = run("--port", "0", "--data-dir", str(tmp_path / "d"), "--console-port", str(port))
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    assert got.stderr.splitlines()[-1] == (f"minibroker: Console failed to bind to 127.0.0.1:{port} (console.port): "
                                           "Address already in use.")
    assert (tmp_path / "d" / ".kafka_cleanshutdown").exists()  # built, then shut down as after SIGTERM


def test_a_host_that_is_not_an_address(tmp_path):
    line = refused("--host", "no-such-host.invalid", "--port", "0", "--data-dir", str(tmp_path / "d"))
    assert line.startswith("minibroker: Socket server failed to bind to no-such-host.invalid:0 (listener "
                           "PLAINTEXT): ")


def test_a_data_dir_that_is_a_file_is_named(tmp_path):
    path = tmp_path / "data"
    path.write_text("a file")
    assert refused("--port", "0", "--data-dir", str(path)) == (
        f"minibroker: Failed to create or validate data directory {path}: it exists and is not a directory")
    assert refused("--port", "0", "--data-dir", str(path / "sub")) == (
        f"minibroker: Failed to create or validate data directory {path / 'sub'}: Not a directory")


def _read_only(path: Path) -> bool:
    """Make `path` a directory no one may write in: chmod for a normal user; root ignores modes,
    so for root the immutable attribute (chattr +i), where the file system has it."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        return True
    chattr = shutil.which("chattr")
    return chattr is not None and subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode == 0


def _writable_again(path: Path) -> None:
    if os.geteuid() != 0:
        path.chmod(0o755)
    else:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_an_unwritable_data_dir_is_named_not_the_files_inside_it(tmp_path):
    path = tmp_path / "ro"
    if not _read_only(path):
        pytest.skip("no way to make a directory read-only for root here (chattr +i unsupported)")
    try:
        line = refused("--port", "0", "--data-dir", str(path))
        nested = refused("--port", "0", "--data-dir", str(path / "sub"))
    finally:
        _writable_again(path)
    assert line.startswith(f"minibroker: Cannot write to data directory {path}: ")
    assert nested.startswith(f"minibroker: Failed to create or validate data directory {path / 'sub'}: ")
    for internal in ("meta.properties", "latest_producer_id_block", ".tmp", "broker-config-overrides"):
        assert internal not in line + nested


def test_a_yaml_syntax_error_names_the_file_and_the_line(tmp_path):
    config = tmp_path / "broker.yaml"
    config.write_text("num.partitions: 3\nlisteners: [PLAINTEXT://127.0.0.1:0\nlog.dirs: x\n")
    line = refused("--config", str(config), "--data-dir", str(tmp_path / "d"))
    assert line.startswith(f"minibroker: Config file {config} is not valid YAML, line 3, column ")


def test_an_invalid_value_in_the_config_file_names_the_key(tmp_path):
    config = tmp_path / "broker.yaml"
    config.write_text("listeners: PLAINTEXT://127.0.0.1:0\nlog.segment.bytes: lots\n")
    assert refused("--config", str(config), "--data-dir", str(tmp_path / "d")) == (
        "minibroker: Invalid value lots for configuration log.segment.bytes: Not a number of type INT")


def test_debug_adds_the_traceback(tmp_path):
    got = run("--debug", "--port", "0", "--data-dir", str(tmp_path / "d"), "--override", "num.partitions=three")
    assert got.returncode == 2
    assert "Traceback (most recent call last)" in got.stderr and "ConfigError" in got.stderr
    assert got.stderr.splitlines()[-1] == (
        "minibroker: Invalid value three for configuration num.partitions: Not a number of type INT")


def test_help_shows_the_data_dir_default_and_every_subcommand():
    got = run("--help")
    assert got.returncode == 0
    text = " ".join(got.stdout.split())
    assert "--data-dir" in text and "else ./data" in text
    for sub in ("dump-log", "certs"):
        assert f"  {sub} " in got.stdout  # listed with its job
        assert run(sub, "--help").returncode == 0


def test_a_bad_flag_value_is_argparses_usage_error_not_a_traceback():
    got = run("--log-level", "chatty")
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert got.stderr.splitlines()[-1].startswith("minibroker: error: argument --log-level: invalid choice: 'CHATTY'")
