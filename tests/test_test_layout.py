"""The suite's own layout (issue 16): no module under tests/ imports a test module or a conftest.

What tests share lives in helper modules (helpers.py, group_helpers.py, strategies.py...), so that
collecting one test module never runs another's module-level code and moving or renaming a test
never breaks a second one.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module a file of `package` imports, relative imports resolved."""
    tree = ast.parse(source)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            # `from tests.integration import test_x` imports a module too.
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def _offences(source: str, package: str, name: str) -> list[str]:
    bad = []
    for line, module in _imported_modules(source, package):
        parts = module.split(".")
        if parts[0] != "tests":
            continue
        if parts[-1].startswith("test_") or parts[-1] == "conftest":
            bad.append(f"{name}:{line} imports {module}")
    return bad


def test_no_module_under_tests_imports_a_test_module_or_a_conftest() -> None:
    offences = []
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        rel = path.relative_to(TESTS.parent)
        offences += _offences(path.read_text(), ".".join(rel.parent.parts), str(rel))
    assert offences == [], "move what they share into a helper module:\n" + "\n".join(offences)


def test_the_check_sees_absolute_relative_and_package_imports() -> None:
    source = ("from . import test_log\nfrom .test_index import x\nimport tests.tools.test_trace\n"
              "from tests.integration.conftest import y\nfrom .helpers import batch\nimport pytest\n")
    assert [o.split(" imports ")[1] for o in _offences(source, "tests.storage", "probe.py")] == [
        "tests.storage.test_log", "tests.storage.test_index", "tests.tools.test_trace",
        "tests.integration.conftest"]
