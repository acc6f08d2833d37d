"""Faults across a cluster's brokers (issue 32): each broker's fault control endpoint, and the
client broker 1's console and the test fixtures reach it with.

A fault acts inside the process of the broker it names (a request fault on that broker's
requests, a disk or a cut in that broker's components), so a fault for broker N set on broker
1's console, or from a test, has to travel to broker N's process. The channel:

- the launcher (`minibroker cluster --fault-control`, implied by --console-allow-faults; the
  `Cluster` test fixture always asks for it) writes a random token to D/fault-control.token,
  readable by its user only (0600);
- a broker of that cluster finds the token next to its node directory at start and serves its
  fault registry on 127.0.0.1, on a free port it writes to D/broker-i/fault-control.json
  (`{"host", "port", "pid"}`, rewritten by a broker restarted alone; cluster.json lists them as
  each broker's "fault_control");
- a request is one line of JSON, `{"token", "op", ...}`, answered by one line:
  `{"status": 200, "result": ...}` or `{"status": 4xx, "error": "..."}`. The ops are the
  registry's: inject (a fault as POST /api/faults takes it), list, get (with wait_fired and
  timeout), remove, clear, history.

Why this channel: it is small (asyncio streams and JSON, no HTTP server in every broker: the
console's aiohttp is imported only by the broker that serves it), deterministic (a request is
answered once the registry has set or removed the fault, so a test's next step sees it), and as
closed as the console's writes: loopback only, and a token only the cluster's user can read
(the console's writes ask for the same origin and, with an authorizer, a user allowed to ALTER
the Cluster; here the file permission is the credential). Kafka itself has no such channel; a
control channel through the launcher would make the launcher a relay that must be running, where
this one still works for a broker restarted alone.

Fault ids are unique across the cluster: broker N numbers its faults from N * ID_STRIDE + 1, so
any id names its broker (`owner`) and GET/DELETE /api/faults/<id> on broker 1 go where it lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from minibroker.cluster_fault_control import (
    ENDPOINT_FILE,
    HOST,
    ID_STRIDE,
    broker_ids,
    cluster_root,
    node_dir,
    owner,
    read_endpoint,
    read_token,
)
from minibroker.faults.model import FaultError, JsonValue, fault_kwargs

if TYPE_CHECKING:
    from minibroker.faults.registry import FaultRegistry

log = logging.getLogger("minibroker.faults")

MAX_LINE = 1 << 20


class FaultControlError(Exception):
    """An answer other than 200: `status` as HTTP would say it (400, 404, 408, 502)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# -- the broker's side ---------------------------------------------------------------------------
class ControlTarget(Protocol):
    node_id: int

    @property
    def faults(self) -> FaultRegistry: ...


class FaultControlServer:
    """One broker's fault control endpoint (module doc)."""

    def __init__(self, target: ControlTarget, root: Path, token: str):
        self.target, self.root, self._token = target, root, token
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        registry = self.target.faults
        registry.number_from(self.target.node_id * ID_STRIDE)
        self._server = await asyncio.start_server(self._serve, HOST, 0, limit=MAX_LINE)
        self.port = int(self._server.sockets[0].getsockname()[1])
        path = node_dir(self.root, self.target.node_id) / ENDPOINT_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"host": HOST, "port": self.port, "pid": os.getpid()}) + "\n")
        os.replace(tmp, path)
        log.info("fault control of node %d on %s:%d", self.target.node_id, HOST, self.port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(await self._answer(line), default=str).encode() + b"\n")
                await writer.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass  # a client gone, a line over MAX_LINE: the connection ends
        finally:
            writer.close()

    async def _answer(self, line: bytes) -> dict[str, JsonValue]:
        try:
            req = json.loads(line)
        except ValueError:
            return {"status": 400, "error": "not JSON"}
        if not isinstance(req, dict) or not hmac.compare_digest(str(req.get("token", "")), self._token):
            return {"status": 403, "error": "wrong token"}
        try:
            return {"status": 200, "result": await self._op(req)}
        except FaultControlError as e:
            return {"status": e.status, "error": str(e)}
        except (FaultError, TypeError, ValueError) as e:
            return {"status": 400, "error": str(e)}

    async def _op(self, req: dict[str, JsonValue]) -> JsonValue:
        registry = self.target.faults
        op = req.get("op")
        if op == "inject":
            return registry.inject(**fault_kwargs(req.get("spec"))).to_json()
        if op == "list":
            return [f.to_json() for f in registry.all()]
        if op == "history":
            return list(registry.history)
        if op == "clear":
            n = len(registry)
            registry.clear()
            return {"removed": n}
        fid = req.get("id")
        if not isinstance(fid, int):
            raise FaultControlError(400, f"{op}: needs an integer id")
        fault = registry.get(fid)
        if fault is None:
            raise FaultControlError(404, f"no fault {fid} on node {self.target.node_id}")
        if op == "remove":
            registry.remove(fid)
            return fault.to_json()
        if op == "get":
            wanted, timeout = req.get("wait_fired"), req.get("timeout", 10.0)
            if isinstance(wanted, int) and isinstance(timeout, (int, float)):
                try:
                    await registry.wait_fired(fault, wanted, float(timeout))
                except TimeoutError:
                    raise FaultControlError(408, json.dumps(fault.to_json())) from None
            return fault.to_json()
        raise FaultControlError(400, f"no op {op!r} (inject, list, get, remove, clear, history)")


async def start_fault_control(target: ControlTarget, data_dir: str | Path) -> FaultControlServer | None:
    """The endpoint of a broker of a `minibroker cluster` started with fault control; else None."""
    root = cluster_root(data_dir)
    token = read_token(root) if root is not None else None
    if root is None or token is None:
        return None
    server = FaultControlServer(target, root, token)
    await server.start()
    return server


# -- the client's side ---------------------------------------------------------------------------
async def call(root: Path, node_id: int, op: str, within: float = 30.0, **args: JsonValue) -> JsonValue:
    """One op on broker `node_id` of the cluster in D=`root`; FaultControlError unless answered 200
    (502: the broker cannot be reached, it is stopped or its endpoint is not up yet)."""
    token = read_token(root)
    endpoint = read_endpoint(root, node_id)
    if token is None or endpoint is None:
        raise FaultControlError(502, f"node {node_id} has no fault control endpoint (cluster started without "
                                     "--fault-control, or the broker is not up)")
    line = json.dumps({"token": token, "op": op, **args}).encode() + b"\n"
    try:
        async with asyncio.timeout(within):
            reader, writer = await asyncio.open_connection(*endpoint, limit=MAX_LINE)
            try:
                writer.write(line)
                await writer.drain()
                answer = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError) as e:
        raise FaultControlError(502, f"node {node_id}'s fault control at {endpoint[0]}:{endpoint[1]}: {e!r}") from e
    try:
        doc = json.loads(answer)
    except ValueError:
        raise FaultControlError(502, f"node {node_id} answered no JSON") from None
    if doc.get("status") != 200:
        raise FaultControlError(int(doc.get("status", 502)), str(doc.get("error")))
    result: JsonValue = doc.get("result")
    return result


class ClusterFaults:
    """Broker 1's view of every broker's faults (its console's /api/faults): a fault whose `node`
    is another broker is set there, the list gathers every live broker's, an id goes to its owner."""

    def __init__(self, root: Path, node_id: int):
        self.root, self.node_id = root, node_id

    def remote_node(self, spec: dict[str, JsonValue], any_node: bool) -> int | None:
        """The broker a fault is for, when that is not this one (None: set it here)."""
        node = spec.get("node")
        if not isinstance(node, int) or node == self.node_id or any_node:
            return None
        if node not in broker_ids(self.root):
            raise FaultControlError(400, f"no broker with node id {node} in this cluster "
                                         f"(brokers: {broker_ids(self.root)})")
        return node

    def remote_owner(self, fault_id: int) -> int | None:
        node = owner(fault_id)
        return node if node not in (0, self.node_id) else None

    async def inject(self, node: int, spec: dict[str, JsonValue]) -> JsonValue:
        return await call(self.root, node, "inject", spec=spec)

    async def others(self, op: str) -> list[JsonValue]:
        """`op` ("list", "history", "clear") on every other broker that answers (a stopped broker's
        faults went with its process)."""
        out: list[JsonValue] = []
        for node in broker_ids(self.root):
            if node == self.node_id:
                continue
            with contextlib.suppress(FaultControlError):
                got = await call(self.root, node, op, within=10.0)
                out.extend(got if isinstance(got, list) else [got])
        return out

    async def on_owner(self, fault_id: int, op: str, within: float = 30.0, **args: JsonValue) -> JsonValue:
        node = owner(fault_id)
        return await call(self.root, node, op, within=within, id=fault_id, **args)
