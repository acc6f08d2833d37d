"""Faults over HTTP, for tests in any language (issue 32): `/api/faults` on the console's server.

    POST   /api/faults        {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2}  -> 201 {"id": 1, ...}
    GET    /api/faults        every fault, each with "fired"
    GET    /api/faults/fired  the last firings: which fault, on which request
    GET    /api/faults/<id>   one fault; with ?wait_fired=n&timeout=s, once it fired n times (408 if
                              not within s seconds, at most 60): a test's wait without a sleep
    DELETE /api/faults/<id>   remove it (a component fault is reverted)
    DELETE /api/faults        remove them all
    GET    /faults            the same as a page

The JSON of a fault: "api" (Kafka's API name) or "kind" ("disk.full", "disk.slow",
"broker.pause"; on a broker of `minibroker cluster` also "broker.stop", "broker.kill",
"broker.start", "leader.move", "leader.shuffle", "coordinator.move": minibroker.faults.cluster_kinds;
"replica.fetch.cut", "controller.cut": minibroker.faults.network_kinds); the filters "version" / "versions" ([lo, hi]), "client_id", "topic",
"partition", "group_id", "transactional_id", "node"; one action: "error" (Kafka's error name),
"delay_ms", or "action" ("close", "close_after", "drop"); the trigger "count" (default 1; 0 or
null: every time until removed), "nth", "after", "probability" with "seed". It is the Python API's
model (minibroker.faults.model.fault_kwargs -> make_fault), so both say the same thing.

On a broker of a `minibroker cluster` with fault control, a fault whose "node" is another broker
is set in that broker's process (minibroker.faults.control), GET /api/faults lists every live
broker's faults with the fired counts counted where they fired, and an id (which names its
broker) goes to its owner.

Off unless the broker runs with `--console-allow-faults` (console.allow.faults): 403 then. The
writes take the console's rules for writes (minibroker.console.app: the same-origin check; with an
authorizer, HTTP Basic credentials of a SASL user who may ALTER the Cluster, the operation Kafka
asks of the APIs that move leaders: ElectLeaders, AlterPartitionReassignments).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from minibroker.console import auth, pages
from minibroker.console.actions import ActionError
from minibroker.faults import KINDS, FaultError, FaultRegistry
from minibroker.faults.control import ClusterFaults, FaultControlError, cluster_root
from minibroker.faults.model import fault_kwargs
from minibroker.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.services import BrokerServices
from minibroker_protocol.apis import alter_configs

OFF = ("faults are off: start the broker with --console-allow-faults (console.allow.faults=true) to set faults "
       "over HTTP")
Guard = Callable[[web.Request], Awaitable[None]]


class FaultsApi:
    """The routes above, over one broker's registry (`registry()`: built by the first use)."""

    def __init__(self, services: BrokerServices, registry: Callable[[], FaultRegistry] | None, guard: Guard,
                 plain_users: dict[str, str]) -> None:
        self.services = services
        self._registry = registry
        self._guard = guard
        self.plain_users = plain_users
        # a broker of a `minibroker cluster` with fault control: faults for the other brokers go to
        # theirs (minibroker.faults.control)
        root = cluster_root(services.config.data_dir) if registry is not None else None
        self.cluster = ClusterFaults(root, services.node_id) if root is not None else None

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/faults", self._page)
        router.add_get("/api/faults", self._list)
        router.add_post("/api/faults", self._create)
        router.add_delete("/api/faults", self._clear)
        router.add_get("/api/faults/fired", self._fired)
        router.add_get("/api/faults/{id}", self._get)
        router.add_delete("/api/faults/{id}", self._delete)

    def _faults(self) -> FaultRegistry:
        if self._registry is None:
            raise ActionError(403, OFF)
        return self._registry()

    async def _write(self, request: web.Request) -> FaultRegistry:
        registry = self._faults()
        await self._guard(request)
        if self.services.authorizer.enabled:
            principal = auth.principal_of(self.services, self.plain_users, request.headers.get("Authorization"))
            peer = request.transport.get_extra_info("peername") if request.transport is not None else None
            ip, port = (peer[0], peer[1]) if peer else (request.remote or "", 0)
            ctx = auth.context(self.services, alter_configs.API.key, 0, principal, ip, port)
            if not ctx.authorized(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
                raise ActionError(403, f"CLUSTER_AUTHORIZATION_FAILED: {principal} from {ip} is not allowed to "
                                       f"ALTER on Cluster {CLUSTER_NAME!r} (needed to set faults)")
        return registry

    async def _create(self, request: web.Request) -> web.StreamResponse:
        registry = await self._write(request)
        try:
            body = await request.json()
        except ValueError:
            raise ActionError(400, "the body is not JSON") from None
        if self.cluster is not None and isinstance(body, dict):
            kind = body.get("kind")
            any_node = getattr(KINDS.get(kind if isinstance(kind, str) else ""), "any_node", False)
            try:
                node = self.cluster.remote_node(body, any_node)
                if node is not None:
                    return _json(await self.cluster.inject(node, body), status=201)
            except FaultControlError as e:
                raise ActionError(e.status, str(e)) from None
        try:
            fault = registry.inject(**fault_kwargs(body))
        except (FaultError, TypeError) as e:
            raise ActionError(400, str(e)) from None
        return _json(fault.to_json(), status=201)

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        registry = await self._write(request)
        fid = _id(request)
        if self.cluster is not None and self.cluster.remote_owner(fid) is not None:
            return _json(await _remote(self.cluster.on_owner(fid, "remove")))
        fault = registry.get(fid)
        if fault is None or not registry.remove(fid):
            raise ActionError(404, f"no fault {fid}")
        return _json(fault.to_json())

    async def _clear(self, request: web.Request) -> web.StreamResponse:
        registry = await self._write(request)
        n = len(registry)
        registry.clear()
        if self.cluster is not None:
            for r in await self.cluster.others("clear"):
                removed = r.get("removed") if isinstance(r, dict) else None
                n += removed if isinstance(removed, int) else 0
        return _json({"removed": n})

    async def _list(self, request: web.Request) -> web.StreamResponse:
        out = [f.to_json() for f in self._faults().all()]
        return _json(out + (await self.cluster.others("list") if self.cluster is not None else []))

    async def _get(self, request: web.Request) -> web.StreamResponse:
        registry = self._faults()
        fid = _id(request)
        if self.cluster is not None and self.cluster.remote_owner(fid) is not None:
            return await self._get_remote(self.cluster, fid, request)
        fault = registry.get(fid)
        if fault is None:
            raise ActionError(404, f"no fault {request.match_info['id']}")
        wanted = request.query.get("wait_fired")
        if wanted is not None:
            # a test in any language waits here instead of sleeping: 200 once fired n times, 408 if not
            n, timeout = _number(wanted, "wait_fired"), min(_number(request.query.get("timeout", "10"), "timeout"),
                                                           MAX_WAIT_S)
            try:
                await registry.wait_fired(fault, int(n), timeout)
            except TimeoutError:
                return _json(fault.to_json(), status=408)
        return _json(fault.to_json())

    async def _get_remote(self, cluster: ClusterFaults, fid: int, request: web.Request) -> web.StreamResponse:
        wanted = request.query.get("wait_fired")
        if wanted is None:
            return _json(await _remote(cluster.on_owner(fid, "get")))
        n = int(_number(wanted, "wait_fired"))
        timeout = min(_number(request.query.get("timeout", "10"), "timeout"), MAX_WAIT_S)
        try:
            return _json(await cluster.on_owner(fid, "get", within=timeout + 10, wait_fired=n, timeout=timeout))
        except FaultControlError as e:
            if e.status == 408:  # its message is the fault as it stands
                return web.Response(text=str(e), status=408, content_type="application/json")
            raise ActionError(e.status, str(e)) from None

    async def _fired(self, request: web.Request) -> web.StreamResponse:
        history: list[object] = list(self._faults().history)
        if self.cluster is not None:
            history += await self.cluster.others("history")
        return _json(history)

    async def _page(self, request: web.Request) -> web.StreamResponse:
        if self._registry is None:
            return web.Response(text=pages.layout("Faults", f'<p class="note">{pages.h(OFF)}</p>'),
                                content_type="text/html")
        registry = self._registry()
        rows = "".join(f"<tr><td>{f.id}</td><td>{pages.h(f.api or f.kind)}</td><td>{pages.h(f.describe())}</td>"
                       f"<td>{pages.h(json.dumps({k: v for k, v in f.to_json().items() if k in _FILTERS}))}</td>"
                       f"<td>{f.matched}</td><td>{f.fired}</td></tr>" for f in registry.all())
        fired = "".join(f"<tr><td>{e['fault']}</td><td>{pages.h(e['on'])}</td><td>{pages.h(e.get('client_id'))}</td>"
                        f"<td>{e.get('correlation_id', '')}</td><td>{pages.h(e['description'])}</td></tr>"
                        for e in reversed(registry.history))
        body = ("<h2>Faults set</h2><table><thead><tr><th>id</th><th>API / kind</th><th>does</th><th>matches</th>"
                f"<th>matched</th><th>fired</th></tr></thead><tbody>{rows}</tbody></table>"
                "<h2>Fired</h2><table><thead><tr><th>fault</th><th>on</th><th>client</th><th>corr</th><th>what</th>"
                f"</tr></thead><tbody>{fired}</tbody></table>"
                '<p class="note">Set and remove them with POST/DELETE /api/faults (docs/testing.md); the live trace '
                "marks each request a fault changed.</p>")
        return web.Response(text=pages.layout("Faults", body), content_type="text/html")


MAX_WAIT_S = 60.0  # the longest a GET ?wait_fired= holds the request


def _number(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ActionError(400, f"{name}: a number, not {text[:20]!r}") from None
    if not 0 <= value < 1e9:
        raise ActionError(400, f"{name}: at least 0")
    return value


_FILTERS = ("versions", "client_id", "topic", "partition", "group_id", "transactional_id", "node")


async def _remote(answer: Awaitable[object]) -> object:
    try:
        return await answer
    except FaultControlError as e:
        raise ActionError(e.status, str(e)) from None


def _id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise ActionError(404, f"no fault {request.match_info['id']!r}") from None


def _json(value: object, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(value, default=str), status=status, content_type="application/json")
