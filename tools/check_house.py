"""The house checks of issue 28, measured: each function returns its offenders, `main` prints them.

    python tools/check_house.py          # every metric, one line each (and the offenders)
    python tools/check_house.py --mypy   # also the strict type check (1-2 minutes cold)

tests/test_house.py fails on each of them:
- an import cycle between modules of protocol/, storage/ and minibroker/ (the graph of
  tests/test_layering.py, every import statement counted);
- a handler typed `Any`: the request or response annotation of a function that
  minibroker/handlers/api_table.py names, missing or using `Any`;
- a module under minibroker/handlers/ or minibroker/console/ touching a `minibroker_storage.log.Log`: importing
  minibroker_storage.log, calling a `get_log` method (what hands a Log out), or using a public method,
  property or attribute of Log on a name that the same function binds to one (assigned from a
  `get_log(...)` call or a topic's partition map, annotated `Log`, or a loop over such a value;
  and `lg`, the house's name for a Log).
  Names bound otherwise (a ReplicaManager, a Partition, a coordinator) are not looked at, so
  `replica_manager.append_records(...)` or `coordinator.close()` is no offence;
- a class in minibroker/ over 400 lines;
- mypy with disallow_untyped_defs and disallow_incomplete_defs not clean on minibroker/ and storage/;
- more than 150 lines of minibroker/ using `Any` (a line where the name `Any` or `typing.Any` is
  used; the `from typing import Any` line itself is not counted);
- more than 30 imports inside function bodies in minibroker/, or one without a `# lazy: <reason>`
  comment on its line (module-level `if TYPE_CHECKING:` imports are not in a function: not counted).
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MAX_CLASS_LINES = 400
# Issue 28 asks for at most 150 (minibroker/ had 454). The typed messages, the coordinators' message
# types, the console's TypedDicts and typed config values took it to 11: the few left are named
# (BrokerConfig.get's callers, a handler's request paired by the API table, a configured plug-in).
MAX_ANY_LINES = 150
MAX_FUNCTION_IMPORTS = 30
LOG_FREE = ("minibroker/handlers", "minibroker/console")


@dataclass(frozen=True, slots=True)
class Offence:
    where: str  # path:line
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


# -- import cycles --------------------------------------------------------------------------------
def import_cycles() -> list[Offence]:
    from tests.test_layering import cycles, import_graph

    return [Offence(" <-> ".join(cycle), "modules that import each other") for cycle in cycles(import_graph(ROOT))]


# -- handlers typed Any -----------------------------------------------------------------------------
def _uses_any(node: ast.expr | None) -> bool:
    if node is None:
        return True
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == "Any" or isinstance(n, ast.Attribute) and n.attr == "Any":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value:
            return True
    return False


def handlers_typed_any() -> list[Offence]:
    from minibroker.handlers.api_table import API_TABLE

    out = []
    for key, served in sorted(API_TABLE.items()):
        path = ROOT / "minibroker" / "handlers" / f"{served.module}.py"
        for node in ast.walk(_parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == served.function:
                args = node.args.posonlyargs + node.args.args
                req = args[1].annotation if len(args) > 1 else None
                bad = [what for what, ann in (("request", req), ("response", node.returns)) if _uses_any(ann)]
                if bad:
                    out.append(Offence(f"{_rel(path)}:{node.lineno}",
                                       f"{served.function} (api {key}): {' and '.join(bad)} typed Any or untyped"))
    return out


# -- handlers and console touching a Log ------------------------------------------------------------
def log_members() -> frozenset[str]:
    """The public methods and properties of minibroker_storage.log.Log, and the attributes its __init__ sets."""
    for node in _parse(ROOT / "storage" / "log.py").body:
        if isinstance(node, ast.ClassDef) and node.name == "Log":
            names = {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    for n in ast.walk(f):
                        if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                                and n.value.id == "self" and isinstance(n.ctx, ast.Store)):
                            names.add(n.attr)
            for n in node.body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    names.add(n.target.id)
            return frozenset(n for n in names if not n.startswith("_"))
    raise RuntimeError("storage/log.py has no class Log")


def _is_log(e: ast.expr | None, found: set[str]) -> bool:
    """Whether an expression's value is a Log (or Logs) as far as syntax tells: a `get_log(...)`
    call; a `.log` attribute (Partition.log) of anything but a segment; a topic of the registry
    (`topics.get(...)`, `topics.by_id(...)`: its `partitions` are Logs) read as a map; a name
    already bound to a Log, subscripted or read the same way; either branch of an `if`."""
    if e is None:
        return False
    if isinstance(e, ast.Name):
        return e.id in found
    if isinstance(e, (ast.IfExp)):
        return _is_log(e.body, found) or _is_log(e.orelse, found)
    if isinstance(e, ast.BoolOp):
        return any(_is_log(v, found) for v in e.values)
    if isinstance(e, ast.Await):
        return _is_log(e.value, found)
    if isinstance(e, ast.Attribute):
        return _hands_out_log(e) or (e.attr == "partitions" and _is_registry_topic(e.value, found))
    if isinstance(e, ast.Subscript):
        return _is_log(e.value, found)
    if isinstance(e, ast.Call):
        f = e.func
        if isinstance(f, ast.Name):
            return f.id == "get_log" or f.id in ("sorted", "list", "tuple") and any(_is_log(a, found) for a in e.args)
        if isinstance(f, ast.Attribute):
            if f.attr == "get_log":
                return True
            if f.attr in ("values", "items", "get"):
                return _is_log(f.value, found)
    return False


REGISTRY_READS = ("get", "by_id")  # TopicRegistry's readers: their Topic holds the Logs


def _is_registry_call(e: ast.expr) -> bool:
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in REGISTRY_READS
            and isinstance(e.func.value, ast.Attribute) and e.func.value.attr == "topics")


def _is_registry_topic(e: ast.expr, found: set[str]) -> bool:
    return _is_registry_call(e) or isinstance(e, ast.Name) and e.id in found


def _hands_out_log(e: ast.Attribute) -> bool:
    """`x.log`: Partition.log is the Log itself; a segment's `.log` is its FileRecords (the console's
    segment inspector reads the file as Kafka's DumpLogSegments does), not a Log."""
    return e.attr == "log" and not (isinstance(e.value, ast.Name) and e.value.id in ("seg", "segment"))


def _names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _log_names(fn: ast.AST) -> set[str]:
    """Names a function binds to a Log, or to a registry topic whose partitions are Logs: assigned
    or iterated from what `_is_log` finds, or annotated Log."""
    found: set[str] = set()
    for _ in range(3):  # a loop over a list of logs bound one step before
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and (_is_log(n.value, found) or _is_registry_call(n.value)):
                found |= set().union(*(_names(t) for t in n.targets))
            elif isinstance(n, ast.AnnAssign) and "Log" in _names(n.annotation):
                found |= _names(n.target)
            elif isinstance(n, ast.arg) and n.annotation is not None and "Log" in _names(n.annotation):
                found.add(n.arg)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and _is_log(n.iter, found):
                found |= _names(n.target)
    return found


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The outermost functions (methods included) of a module: each is one scope for _log_names."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(child)
            else:
                visit(child)

    visit(tree)
    return out


def log_calls() -> list[Offence]:
    members = log_members()
    out = set()
    for path in _files(*LOG_FREE):
        tree = _parse(path)
        where = _rel(path)
        for n in ast.walk(tree):
            if isinstance(n, ast.Import) and any(a.name == "minibroker_storage.log" for a in n.names):
                out.add(Offence(f"{where}:{n.lineno}", "imports minibroker_storage.log"))
            elif isinstance(n, ast.ImportFrom) and (n.module == "minibroker_storage.log" or n.module == "minibroker_storage"
                                                    and any(a.name == "log" for a in n.names)):
                out.add(Offence(f"{where}:{n.lineno}", "imports minibroker_storage.log"))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get_log":
                out.add(Offence(f"{where}:{n.lineno}", f"{ast.unparse(n.func)}(...) hands out a Log"))
            elif isinstance(n, ast.Attribute) and _hands_out_log(n):
                out.add(Offence(f"{where}:{n.lineno}", f"{ast.unparse(n)} is a Log"))
            elif isinstance(n, ast.Call) and _is_registry_call(n):
                out.add(Offence(f"{where}:{n.lineno}", f"{ast.unparse(n.func)}(...): a registry topic holds Logs "
                                                       "(read the MetadataCache)"))
        for fn in _functions(tree):
            logs = _log_names(fn)
            for n in ast.walk(fn):
                if (isinstance(n, ast.Attribute) and n.attr in members and isinstance(n.value, ast.Name)
                        and n.value.id in logs):
                    out.add(Offence(f"{where}:{n.lineno}", f"{n.value.id}.{n.attr}: Log.{n.attr}"))
    return sorted(out, key=lambda o: (o.where.split(":")[0], int(o.where.split(":")[1]), o.what))


# -- big classes ----------------------------------------------------------------------------------
def big_classes() -> list[Offence]:
    out = []
    for path in _files("minibroker"):
        for n in ast.walk(_parse(path)):
            if isinstance(n, ast.ClassDef) and n.end_lineno is not None:
                lines = n.end_lineno - n.lineno + 1
                if lines > MAX_CLASS_LINES:
                    out.append(Offence(f"{_rel(path)}:{n.lineno}", f"class {n.name}: {lines} lines"))
    return out


# -- Any ------------------------------------------------------------------------------------------
def any_lines() -> list[Offence]:
    """Every line of minibroker/ that uses `Any` (as a name or typing.Any)."""
    out = []
    for path in _files("minibroker"):
        lines = sorted({n.lineno for n in ast.walk(_parse(path))
                        if isinstance(n, ast.Name) and n.id == "Any"
                        or isinstance(n, ast.Attribute) and n.attr == "Any"})
        out += [Offence(f"{_rel(path)}:{line}", "Any") for line in lines]
    return out


# -- function-level imports -------------------------------------------------------------------------
def function_imports() -> list[tuple[Offence, bool]]:
    """Every import inside a function body in minibroker/, and whether its line says `# lazy:`."""
    out = []
    for path in _files("minibroker"):
        text = path.read_text().splitlines()
        seen: set[int] = set()
        for fn in ast.walk(_parse(path)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno not in seen:
                    seen.add(n.lineno)
                    end = n.end_lineno or n.lineno
                    reasoned = any("# lazy:" in line for line in text[n.lineno - 1:end])
                    names = ", ".join(a.name for a in n.names)
                    mod = f"from {'.' * n.level}{n.module or ''} " if isinstance(n, ast.ImportFrom) else ""
                    out.append((Offence(f"{_rel(path)}:{n.lineno}", f"{fn.name}: {mod}import {names}"), reasoned))
    return sorted(out, key=lambda o: (o[0].where.split(":")[0], int(o[0].where.split(":")[1])))


# -- mypy, strict on untyped defs -------------------------------------------------------------------
MYPY_CACHE = Path(tempfile.gettempdir()) / f"minibroker-mypy-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}"


def mypy_untyped(timeout: float = 900) -> list[Offence]:
    """mypy's errors on minibroker/ and storage/ with untyped and incomplete defs refused (the cache
    outside the repo, kept between runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(MYPY_CACHE), "--disallow-untyped-defs",
           "--disallow-incomplete-defs", "--no-error-summary", "minibroker", "minibroker_storage"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    out = []
    for line in run.stdout.splitlines():
        if ": error:" in line:
            where, _, what = line.partition(": error: ")
            out.append(Offence(where, what))
    if run.returncode != 0 and not out:
        out.append(Offence("mypy", (run.stderr or run.stdout).strip()[-2000:]))
    return out


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    imports = function_imports()
    rows: list[tuple[str, list[Offence], bool]] = [
        ("import cycles", import_cycles(), False),
        ("handlers typed Any (request or response)", handlers_typed_any(), False),
        ("handlers/console touching a Log", log_calls(), False),
        (f"classes over {MAX_CLASS_LINES} lines", big_classes(), False),
    ]
    anys = any_lines()
    rows.append((f"lines using Any in minibroker/ (at most {MAX_ANY_LINES})", anys, len(anys) > MAX_ANY_LINES))
    rows.append((f"function-level imports in minibroker/ (at most {MAX_FUNCTION_IMPORTS})", [o for o, _ in imports],
                 len(imports) > MAX_FUNCTION_IMPORTS))
    unreasoned = [o for o, reasoned in imports if not reasoned]
    rows.append(("function-level imports without '# lazy: <reason>'", unreasoned, False))
    if "--mypy" in argv:
        rows.append(("mypy --disallow-untyped-defs --disallow-incomplete-defs errors", mypy_untyped(), False))
    failed = False
    for title, offences, over_limit in rows:
        bad = over_limit or (bool(offences) and "at most" not in title)
        failed |= bad
        print(f"{'FAIL' if bad else 'ok  '} {len(offences):4d}  {title}")
        if bad or verbose:
            for o in offences if verbose or len(offences) <= 40 else offences[:40]:
                print(f"           {o}")
            if not verbose and len(offences) > 40:
                print(f"           ... {len(offences) - 40} more (-v lists all)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
