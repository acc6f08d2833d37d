"""The documented install works in another project (issue 31): `make wheel`, a fresh virtualenv
outside the repository; the wheel alone (the runtime, what `make run` installs) runs `make run`'s
command; then `pip install "<wheel>[fixture]" confluent-kafka aiokafka` as docs/testing.md and
examples/test_with_fixture/README.md say, and the example's tests run there against the
installed package (not this checkout: no PYTHONPATH, another working directory).

pip's cache and index serve the dependencies (the same ones `make install` fetched); about half a
minute on two idle cores (nearly three on a loaded machine), most of it pip.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "test_with_fixture"


def _documented_install(text: str) -> str:
    """The `pip install ...[fixture]...` line of a doc's shell block."""
    lines = [line.split("#")[0].strip() for line in text.splitlines()
             if line.strip().startswith("pip install") and "[fixture]" in line]
    assert lines, "the doc names no `pip install ...[fixture]` command"
    return lines[0]


def test_the_docs_install_the_fixture_from_the_wheel_make_builds():
    for doc in (ROOT / "docs" / "testing.md", EXAMPLE / "README.md"):
        line = _documented_install(doc.read_text())
        assert re.fullmatch(r'pip install "(/path/to/minibroker/)?dist/minibroker-[0-9.]+-py3-none-any\.whl\[fixture\]"'
                            r'( confluent-kafka| aiokafka)*', line) or "path/to/minibroker" in line, (doc, line)
    assert "pip install minibroker " not in (ROOT / "docs" / "testing.md").read_text()  # not on PyPI


def _run_like_make_run(py: Path, cwd: Path, env: dict[str, str]) -> None:
    """`make run`'s command (config.yaml, the console), on free ports: serving, then SIGTERM -> 0."""
    broker = subprocess.Popen([str(py), "-m", "minibroker", "--host", "127.0.0.1", "--port", "0", "--data-dir",
                               str(cwd / "data"), "--config", str(ROOT / "config.yaml"), "--console-port", "0"],
                              cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert broker.stderr is not None
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("minibroker console:" in line for line in seen):
            line = broker.stderr.readline()
            if not line:
                break
            seen.append(line)
        assert any(line.startswith("minibroker console: http://127.0.0.1:") for line in seen), seen
        assert any("minibroker node" in line for line in seen), seen
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait(10)


@pytest.mark.slow
@pytest.mark.timeout(600)  # pip on a loaded 2-core machine: 35 s idle, nearly 3 min seen under load
def test_a_fresh_virtualenv_in_another_project_runs_the_example_on_the_installed_wheel(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(["make", "-s", "wheel", f"PY={sys.executable}", f"DIST={dist}"], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    wheels = list(dist.glob("minibroker-*-py3-none-any.whl"))
    assert len(wheels) == 1, wheels

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=180, env=env)
    py = venv / "bin" / "python"
    # the runtime alone (what `make run` installs) runs the broker as `make run` does, console included
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-compile", str(wheels[0])], check=True, timeout=300,
                   env=env, cwd=tmp_path)
    _run_like_make_run(py, tmp_path, env)
    # the README's line, with the wheel's path (examples/test_with_fixture/README.md)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-compile", f"{wheels[0]}[fixture]",
                    "confluent-kafka", "aiokafka"], check=True, timeout=300, env=env, cwd=tmp_path)

    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    # the user's project has packages of its own with generic names: the installed broker claims
    # none of them (issue 31: a project's own `storage` broke the fixture with "No module named
    # 'storage.config'"); its layers install as minibroker_storage and minibroker_protocol
    for own in ("storage", "protocol"):
        (project / own).mkdir()
        (project / own / "__init__.py").write_text(f"WHOSE = 'the project {own}'\n")
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()
    installed = {p.name for p in Path(site).iterdir()}
    assert {"minibroker", "minibroker_storage", "minibroker_protocol"} <= installed
    assert not {"storage", "protocol"} & installed, sorted(installed)
    where = subprocess.run([str(py), "-c", "import minibroker; print(minibroker.__file__)"], cwd=project, env=env,
                           capture_output=True, text=True, check=True)
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout  # the installed copy
    run = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    tests = sum(len(re.findall(r"^(?:async )?def test_", f.read_text(), re.M)) for f in EXAMPLE.glob("test_*.py"))
    assert re.search(rf"\b{tests} passed\b", run.stdout) and "failed" not in run.stdout, run.stdout
