"""What the Makefile installs (issue 31): `make run` only the broker's runtime (pyproject.toml's
[project] dependencies), `make install` / `make test` the test and Spark extras too. Read from
`make -n` on a virtualenv path that does not exist, so nothing is installed or run."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str, venv: Path) -> list[str]:
    out = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return [line for line in out.splitlines() if " pip install " in line]


def test_make_run_installs_the_runtime_only(tmp_path):
    installs = dry_run("run", tmp_path / "venv")
    # the runtime and the schema registry `make run` turns on: no pyspark, playwright, jars
    assert installs[-1].endswith("pip install -q -e '.[registry]'")
    assert not any(x in line for line in installs for x in ("[test", "spark"))


def test_make_install_and_make_test_install_the_extras(tmp_path):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"test", "spark"} <= set(extras)
    for target in ("install", "test"):
        assert any(line.endswith("pip install -q -e '.[test,spark,registry]'") for line in dry_run(target, tmp_path / "v"))
