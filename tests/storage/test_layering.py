"""storage/ imports protocol/ only: never the broker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_storage_does_not_import_minibroker():
    code = ("import sys, minibroker_storage, minibroker_storage.log_manager, minibroker_storage.loader; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'minibroker'); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    for path in (ROOT / "storage").glob("*.py"):
        imports = "".join(line for line in path.read_text().splitlines(keepends=True)
                          if line.lstrip().startswith(("import", "from")))
        assert not re.search(r"\bminibroker\b(?!_)", imports), path.name  # minibroker_protocol is protocol/
