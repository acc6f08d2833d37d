"""The faults of a `Cluster`'s brokers, from the test (issue 32): `c.faults(2).inject(...)`.

    with c.faults(2).inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2) as f:
        ...; f.wait_fired(2)
    with c.inject(kind="replica.fetch.cut", node=3, topic="orders") as cut:
        c.wait_for_isr("orders", 0, [1, 2])

Each call goes to the broker's fault control endpoint (minibroker.faults.control: 127.0.0.1, the
token of D/fault-control.token), so the fault acts inside that broker's process and its `fired`
is counted there; a `RemoteFault` reads it back on each look.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from minibroker.faults.control import FaultControlError, call
from minibroker.faults.model import JsonValue

_POLL_S = 0.05


def _call(root: Path, node: int, op: str, within: float = 30.0, **args: JsonValue) -> JsonValue:
    return asyncio.run(call(root, node, op, within, **args))


class RemoteFault:
    """A fault set on broker `node` of a cluster; a context manager that removes it."""

    def __init__(self, root: Path, node: int, doc: dict[str, JsonValue]):
        self.root, self.node, self.doc = root, node, doc
        self.id = int(doc["id"])  # type: ignore[arg-type]  # the registry's JSON: an int

    def refresh(self) -> dict[str, JsonValue]:
        got = _call(self.root, self.node, "get", id=self.id)
        assert isinstance(got, dict)
        self.doc = got
        return got

    @property
    def fired(self) -> int:
        """How often it fired so far, as counted on its broker."""
        fired = self.refresh().get("fired")
        return fired if isinstance(fired, int) else 0

    def wait_fired(self, n: int = 1, timeout: float = 30.0) -> RemoteFault:
        """Until it fired `n` times on its broker (TimeoutError otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                got = _call(self.root, self.node, "get", within=max(left, 0.0) + 10, id=self.id, wait_fired=n,
                            timeout=max(min(left, 30.0), 0.0))
            except FaultControlError as e:
                if e.status != 408:
                    raise
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"fault {self.id} on node {self.node} fired fewer than {n} times within "
                                       f"{timeout}s: {e}") from None
                continue
            assert isinstance(got, dict)
            self.doc = got
            return self

    def remove(self) -> bool:
        """Remove it (a component fault is reverted: the cut heals, the disk heals)."""
        try:
            _call(self.root, self.node, "remove", id=self.id)
        except FaultControlError as e:
            if e.status == 404:
                return False
            raise
        return True

    def __enter__(self) -> RemoteFault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<fault {self.id} on node {self.node}: {self.doc.get('description')}, fired {self.doc.get('fired')}>"


class NodeFaults:
    """`c.faults(node)`: set, list and remove the faults of one broker of a cluster (the arguments
    of minibroker.faults.model.make_fault, as POST /api/faults takes them)."""

    def __init__(self, root: Path, node: int):
        self.root, self.node = root, node

    def inject(self, api: str | None = None, **spec: JsonValue) -> RemoteFault:
        """`inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2)`, `inject(kind="controller.cut")`.
        `count=None` fires every time until removed (a component fault's default)."""
        body: dict[str, JsonValue] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in spec.items()}
        if api is not None:
            body["api"] = api
        if "count" in body and body["count"] is None:
            body["count"] = 0
        body["node"] = self.node
        doc = _call(self.root, self.node, "inject", spec=body)
        assert isinstance(doc, dict)
        return RemoteFault(self.root, self.node, doc)

    def all(self) -> list[dict[str, JsonValue]]:
        got = _call(self.root, self.node, "list")
        return [f for f in got if isinstance(f, dict)] if isinstance(got, list) else []

    def history(self) -> list[dict[str, JsonValue]]:
        got = _call(self.root, self.node, "history")
        return [f for f in got if isinstance(f, dict)] if isinstance(got, list) else []

    def clear(self) -> None:
        _call(self.root, self.node, "clear")


__all__ = ["NodeFaults", "RemoteFault"]
