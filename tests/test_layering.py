"""The three layers import one way (minibroker -> storage -> protocol) and no module imports itself
back through others.

Every import statement counts: module level, inside functions, under `if TYPE_CHECKING:`, and
relative ones. `from pkg import name` counts as an import of `pkg.name` when that is a module, of
`pkg` otherwise. Only the project's own packages are graphed. Dynamic imports (the handler
registry's `importlib.import_module` over minibroker/handlers/) are not statements and are left
out: they import downward by construction.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("minibroker_protocol", "minibroker_storage", "minibroker")  # protocol/ and storage/ as installed
LAYER = {"minibroker_protocol": 0, "minibroker_storage": 1, "minibroker": 2}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_files(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for pkg in PACKAGES if (root / pkg).is_dir()
            for p in sorted((root / pkg).rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that `name` (at `path`) imports, by any import statement."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` binds a module; the deepest project module named is the one imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in graph.items() for b in deps
                  if LAYER[b.split(".")[0]] > LAYER[a.split(".")[0]])


def test_no_import_cycles() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 100  # the walk really sees the packages
    assert cycles(graph) == []


def test_layers_import_downward_only() -> None:
    assert upward(import_graph(ROOT)) == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    files = {
        "minibroker_protocol/__init__.py": "",
        "minibroker_protocol/a.py": "from minibroker_storage import s\n",
        "minibroker_storage/__init__.py": "",
        "minibroker_storage/s.py": "import minibroker_protocol.a\n",
        "minibroker/__init__.py": "",
        "minibroker/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from minibroker.y import Y\n",
        "minibroker/y.py": "def f():\n    from . import x\n",
        "minibroker/z.py": "from .x import thing\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["minibroker.z"] == {"minibroker.x"}
    assert cycles(graph) == [["minibroker.x", "minibroker.y"], ["minibroker_protocol.a", "minibroker_storage.s"]]
    assert upward(graph) == [("minibroker_protocol.a", "minibroker_storage.s")]
