"""Where a `minibroker cluster`'s fault control lives on disk (issue 32): the token the launcher
writes, the endpoint each broker writes (minibroker.faults.control has the channel itself). A
module of its own, light, so the launcher reads and writes these files without importing the
fault modules.

- D/fault-control.token: a random token, mode 0600 (the cluster's user alone can read it);
- D/broker-i/fault-control.json: `{"host": "127.0.0.1", "port", "pid"}` of broker i's endpoint;
- fault ids: broker N numbers its faults from N * ID_STRIDE + 1, so an id names its broker.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path

TOKEN_FILE = "fault-control.token"
ENDPOINT_FILE = "fault-control.json"
NODE_PROPERTIES = "node.properties"  # as minibroker.cluster_launcher names it
ID_STRIDE = 1_000_000
HOST = "127.0.0.1"  # loopback only


def owner(fault_id: int) -> int:
    """The node id of the broker holding a fault (0: a broker outside a cluster)."""
    return fault_id // ID_STRIDE


def write_token(root: Path) -> str:
    """A new token in D/fault-control.token, readable by this user only."""
    token = secrets.token_hex(16)
    path = root / TOKEN_FILE
    tmp = root / (TOKEN_FILE + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.replace(tmp, path)
    return token


def read_token(root: Path) -> str | None:
    try:
        return (root / TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


def node_dir(root: Path, node_id: int) -> Path:
    return root / f"broker-{node_id}"


def read_endpoint(root: Path, node_id: int) -> tuple[str, int] | None:
    try:
        doc = json.loads((node_dir(root, node_id) / ENDPOINT_FILE).read_text())
        return str(doc["host"]), int(doc["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def cluster_root(data_dir: str | Path) -> Path | None:
    """D, when `data_dir` is a `minibroker cluster` broker's log dir (D/broker-i/data) and the
    cluster has fault control on (its token exists)."""
    node = Path(data_dir).absolute().parent
    root = node.parent
    if (node / NODE_PROPERTIES).exists() and (root / TOKEN_FILE).exists():
        return root
    return None


def broker_ids(root: Path) -> list[int]:
    """The brokers of the cluster in D=`root` (D/broker-i directories with a node.properties)."""
    out = []
    for d in root.glob("broker-*"):
        suffix = d.name.removeprefix("broker-")
        if suffix.isdigit() and (d / NODE_PROPERTIES).exists():
            out.append(int(suffix))
    return sorted(out)
