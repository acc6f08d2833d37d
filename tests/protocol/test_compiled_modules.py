"""The compiled twins of the hot modules (issue 33, minibroker_protocol.compiled): in use after
`make install`, never when MINIBROKER_PURE_PYTHON is set or a source changed since the build, and
answering as the pure-Python modules (the reference) do on the same bytes, checked here with
hypothesis on both in one process. `make test-pure` runs the whole suite on the pure modules."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol import compiled
from minibroker_protocol.headers import decode_request_header
from minibroker_protocol.records import validate
from minibroker_protocol.records.batch import BatchView
from minibroker_protocol.records.v2 import Record, build_batch, encode_records
from minibroker_storage import log_validator
from minibroker_storage.config import LogConfig

ROOT = Path(__file__).resolve().parent.parent.parent
MODULE_NAMES = [m.removesuffix(".py").replace("/", ".") for m in compiled.HOT_MODULES]
NOW = 1_700_000_000_000


def _can_compile() -> bool:
    """What tools/compile_hot_modules.py needs: mypyc, a C compiler and Python's headers."""
    return (importlib.util.find_spec("mypyc") is not None
            and shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is not None
            and (Path(sysconfig.get_paths()["include"]) / "Python.h").exists())


def _files_in(env: dict[str, str]) -> dict[str, str]:
    """Each hot module's file, as a fresh interpreter with `env` imports it."""
    code = ("import importlib, json, sys; "
            f"print(json.dumps({{m: importlib.import_module(m).__file__ for m in {MODULE_NAMES!r}}}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pure(name: str) -> ModuleType:
    """The pure-Python module beside its compiled twin, under another name (its imports of other
    hot modules get the compiled ones: each is compared on its own)."""
    path = ROOT / next(m for m in compiled.HOT_MODULES if m.removesuffix(".py").replace("/", ".") == name)
    spec = importlib.util.spec_from_file_location(f"_pure_{name.replace('.', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


needs_build = pytest.mark.skipif(compiled.pure_requested() or not _can_compile(),
                                 reason="the pure modules were asked for, or there is no compiler or mypyc")


@needs_build
def test_make_install_leaves_every_hot_module_compiled_and_in_use() -> None:
    assert compiled.compiled_in_use(), (
        f"the build in {compiled.compiled_dir()} is missing or older than a source: `make install` rebuilds it")
    for name in MODULE_NAMES:
        module = importlib.import_module(name)
        assert module.__file__ is not None and module.__file__.endswith(".so"), (name, module.__file__)
        assert Path(module.__file__).is_relative_to(compiled.compiled_dir())  # not a stray .so in the checkout


def test_the_pure_modules_are_used_when_asked() -> None:
    files = _files_in({compiled.PURE_ENV: "1"})
    assert all(Path(f) == ROOT / (m.replace(".", "/") + ".py") for m, f in files.items()), files


@needs_build
def test_a_build_older_than_one_source_is_not_used_at_all(tmp_path: Path) -> None:
    copy = tmp_path / "build"
    shutil.copytree(compiled.compiled_dir(), copy)
    env = {compiled.COMPILED_DIR_ENV: str(copy), compiled.PURE_ENV: ""}
    assert all(f.endswith(".so") for f in _files_in(env).values())  # the copy itself is used...
    manifest = (copy / compiled.MANIFEST).read_text().splitlines()
    assert len(manifest) == len(compiled.HOT_MODULES)
    digest, path = manifest[-1].split(" ", 1)
    manifest[-1] = f"{int(digest[:8], 16) ^ 1:08x}{digest[8:]} {path}"  # ...until one source differs from the build
    (copy / compiled.MANIFEST).write_text("\n".join(manifest) + "\n")
    assert all(f.endswith(".py") for f in _files_in(env).values())


# ------------------------------------------------------------- the same answers as the reference

PURE_VALIDATE = _pure("minibroker_protocol.records.validate")
PURE_LOG_VALIDATOR = _pure("minibroker_storage.log_validator")
PURE_HEADERS = _pure("minibroker_protocol.headers")


def _outcome(call: Any) -> tuple[str, Any]:
    """What a call gave: its value, or its exception's class name, code and text."""
    try:
        return "value", call()
    except Exception as e:  # noqa: BLE001 - every exception is compared, whatever its class
        return "raised", (type(e).__name__, getattr(e, "code", None), str(e),
                          getattr(e, "record_errors", None))


records = st.lists(st.builds(
    Record,
    timestamp_delta=st.integers(0, 1 << 40),
    key=st.none() | st.binary(max_size=20),
    value=st.none() | st.binary(max_size=200),
    headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=2),
), min_size=1, max_size=40)
edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3)


def _edited(data: bytes, changes: list[tuple[int, int]], cut: int) -> bytes:
    out = bytearray(data)
    for where, byte in changes:
        if out:
            out[where % len(out)] = byte
    return bytes(out[:len(out) - cut] if cut < len(out) else out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, edits, st.integers(0, 3), st.integers(-2, 2), st.booleans())
def test_the_record_walk_answers_as_the_pure_one(recs: list[Record], changes: list[tuple[int, int]], cut: int,
                                                 extra: int, require_keys: bool) -> None:
    for i, r in enumerate(recs):
        r.offset_delta = i
    body = _edited(encode_records(recs), changes, cut)
    count = max(len(recs) + extra, 0)
    assert (_outcome(lambda: validate.walk_records(body, count, require_keys=require_keys))
            == _outcome(lambda: PURE_VALIDATE.walk_records(body, count, require_keys=require_keys)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, edits, st.integers(0, 3), st.sampled_from([0, 1, 2, 3, 4]), st.booleans(), st.integers(2, 11))
def test_the_log_validator_answers_as_the_pure_one(recs: list[Record], changes: list[tuple[int, int]], cut: int,
                                                   codec: int, compact: bool, version: int) -> None:
    for i, r in enumerate(recs):
        r.offset_delta = i
    data = _edited(build_batch(recs, base_timestamp=NOW, compression=codec), changes, cut)
    config = LogConfig(cleanup_policy="compact") if compact else LogConfig()

    def run(module: ModuleType) -> Any:
        v = module.validate(data, config, now_ms=NOW, request_version=version, where="t-0")
        plan = module.assign_offsets(v, config, first_offset=7, leader_epoch=3, now_ms=NOW)
        return (bytes(plan.data), [(i.last_offset, i.max_timestamp, i.size) for i in plan.infos], plan.next_offset,
                plan.max_timestamp, plan.offset_of_max_timestamp, plan.num_records, [b.pos for b in v.views])

    assert _outcome(lambda: run(log_validator)) == _outcome(lambda: run(PURE_LOG_VALIDATOR))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.builds(lambda k, v, c, rest: bytes([0, k, 0, v]) + c + rest,
                                          st.integers(0, 80), st.integers(0, 20), st.binary(min_size=4, max_size=4),
                                          st.binary(max_size=40)))
def test_the_request_header_reads_as_the_pure_one(buf: bytes) -> None:
    def read(fn: Any) -> Any:
        header, pos = fn(buf)
        return (header.api_key, header.api_version, header.correlation_id, header.client_id, header.unknown_tags), pos

    assert _outcome(lambda: read(decode_request_header)) == _outcome(lambda: read(PURE_HEADERS.decode_request_header))


def test_a_batch_view_of_the_compiled_module_is_the_one_every_module_sees() -> None:
    """The pure log validator, loaded beside the compiled one, reads the compiled BatchView: the
    comparisons above are of each module's own code, on the same headers."""
    assert PURE_LOG_VALIDATOR.BatchView is BatchView


def test_no_hot_function_names_two_kinds_of_exception_alike() -> None:
    """mypyc types a local by its first binding: a compiled function with `except DecodeError as e`
    and later `except KafkaError as e` raised TypeError in the second clause (KafkaApis.handle
    closed the connection of a refused forwarded request instead of answering
    CLUSTER_AUTHORIZATION_FAILED). The pure modules never fail so, hence this check of the source."""
    import ast

    reused = []
    for module in compiled.HOT_MODULES:
        tree = ast.parse((ROOT / module).read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kinds: dict[str, set[str]] = {}
                for node in ast.walk(fn):
                    if isinstance(node, ast.ExceptHandler) and node.name and node.type is not None:
                        kinds.setdefault(node.name, set()).add(ast.unparse(node.type))
                reused += [(module, fn.name, name, sorted(k)) for name, k in kinds.items() if len(k) > 1]
    assert reused == []
