"""Build the compiled twins of the hot modules with mypyc (issue 33; minibroker_protocol.compiled).

    .venv/bin/python tools/compile_hot_modules.py [--out DIR] [--if-stale] [--clean]

Compiles minibroker_protocol.compiled.HOT_MODULES, unchanged, into DIR (default: the virtualenv's
minibroker-compiled/), with a manifest of the sources (CRC-32 and size) that the packages check
before they use the build. The C sources and objects go to a temporary directory; the result
replaces the old build in one rename. Without a C compiler, Python's headers or mypyc, or if the
build fails, it says so in one line and exits 0: the broker then runs the pure-Python modules,
which are the reference. `--clean` removes the build (the pure modules are used from then on).
`--if-stale` builds only if the build is missing or older than a source (what `make install`,
`make run` and `make test` run: well under a second when nothing changed, as the check is the
manifest's CRCs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minibroker_protocol import compiled  # noqa: E402


def build(out: Path) -> int:
    try:
        from mypyc.build import mypycify  # mypy's compiler, installed with mypy ([test] extra)
        from setuptools import Distribution
    except ImportError as e:
        print(f"compile_hot_modules: {e.name} is not installed; the pure-Python modules are used")
        return 0
    if not shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]):
        print("compile_hot_modules: no C compiler; the pure-Python modules are used")
        return 0
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        print("compile_hot_modules: no Python.h (the python3-dev headers); the pure-Python modules are used")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mb-mypyc-") as work:
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out.parent))
        cwd = os.getcwd()
        os.chdir(ROOT)  # module names come from the paths: minibroker_protocol/records/batch.py
        try:
            modules = mypycify(list(compiled.HOT_MODULES), opt_level="3", group_name=compiled.GROUP,
                               target_dir=str(Path(work) / "c"))
            dist = Distribution({"name": "minibroker-compiled", "ext_modules": modules})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = str(staging)  # type: ignore[attr-defined]
            cmd.build_temp = str(Path(work) / "o")  # type: ignore[attr-defined]
            dist.run_command("build_ext")
        except (Exception, SystemExit) as e:  # a compiler error: keep the pure modules, say why
            # not an install failure: the broker runs without the build, and where a compiler is
            # present tests/protocol/test_compiled_modules.py fails on the missing build instead
            shutil.rmtree(staging, ignore_errors=True)
            print(f"compile_hot_modules: the build failed ({e}); the pure-Python modules are used")
            return 0
        finally:
            os.chdir(cwd)
        compiled.write_manifest(str(staging))
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        staging.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    print(f"compile_hot_modules: {len(compiled.HOT_MODULES)} modules compiled into {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(compiled.compiled_dir()))
    ap.add_argument("--if-stale", action="store_true")
    ap.add_argument("--clean", action="store_true")
    args = ap.parse_args()
    if args.clean:
        shutil.rmtree(args.out, ignore_errors=True)
        return 0
    if args.if_stale and compiled.build_is_current(str(args.out)):
        return 0
    return build(args.out)


if __name__ == "__main__":
    sys.exit(main())
