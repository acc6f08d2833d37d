"""storage/ imports protocol/ only: never the broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_storage_does_not_import_minibroker():
    code = ("import sys, storage, storage.log_manager, storage.loader; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'minibroker'); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    for path in (ROOT / "storage").glob("*.py"):
        assert "minibroker" not in "".join(
            line for line in path.read_text().splitlines(keepends=True) if line.lstrip().startswith(("import", "from")))
