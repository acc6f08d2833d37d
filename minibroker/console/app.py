"""The console's HTTP server: routes, error pages, the SSE stream and the optional write actions."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from minibroker.console import actions, auth, pages, replication_page, schema_pages, state
from minibroker.console.actions import ActionError, Done
from minibroker.console.auth import AuthRequired
from minibroker.console.exposition import metrics_text
from minibroker.console.faults import FaultsApi
from minibroker.console.limits import Limits
from minibroker.console.live import LiveTrace
from minibroker.console.shapes import BatchBytesView, ClusterView, MessagesView, SegmentView
from minibroker.console.state import BadRequest, NotFound
from minibroker.faults import FaultRegistry
from minibroker.handlers.registry import Handler, RequestContext
from minibroker.services import BrokerServices
from minibroker.tools.trace import TraceListeners

log = logging.getLogger("minibroker.console")
STATIC = Path(__file__).with_name("static")
Handler_ = Callable[[web.Request], Awaitable[web.StreamResponse]]
Form = Mapping[str, str]
Check = Callable[[RequestContext, web.Request, Form], None]


class Console:
    def __init__(self, services: BrokerServices, handlers: Mapping[int, Handler], trace: TraceListeners,
                 *, bootstrap: str, allow_writes: bool = False, limits: Limits | None = None,
                 plain_users: Mapping[str, str] | None = None,
                 faults: Callable[[], FaultRegistry] | None = None,
                 schema_registry: schema_pages.Browser | None = None) -> None:
        self.services = services
        # the broker's schema registry, when it runs (it starts after the console): its pages and
        # the message browser's decoding of records by their schema ids (console.schema_pages)
        self.schema_registry: schema_pages.Browser = schema_registry or (lambda: None)
        self.faults = faults  # the broker's fault registry, with --console-allow-faults (/api/faults)
        # the SASL/PLAIN users of the broker's listeners (their JAAS configs): with an authorizer, a
        # write logs in as one of them or as a SCRAM user (minibroker.console.auth)
        self.plain_users = dict(plain_users or {})
        self.handlers = handlers
        self.live = LiveTrace(trace)
        self.bootstrap = bootstrap
        self.allow_writes = allow_writes
        self.limits = limits
        self._runner: web.AppRunner | None = None
        self.host = ""
        self.port = 0
        self.app = self._build()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self, host: str, port: int) -> None:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        self._runner = runner
        self.services.group_coordinator.events.enabled = True  # the groups pages read the timeline
        # port 0 picks a free port: read back the one bound
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.host, self.port = host, sockets[0].getsockname()[1] if sockets else port
        log.info("console on %s", self.url)

    async def stop(self) -> None:
        self.live.close()
        self.services.group_coordinator.events.enabled = False
        self.services.group_coordinator.events.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- routes ----------------------------------------------------------------------------------
    def _build(self) -> web.Application:
        app = web.Application(middlewares=[self._errors])
        page, api = self._page, self._api
        s = self.services
        r = app.router
        w = self.allow_writes
        r.add_get("/", page(lambda q: pages.cluster_page(self._cluster())))
        r.add_get("/api/cluster", api(lambda q: self._cluster()))
        r.add_get("/topics", page(lambda q: pages.topics_page(state.topics(s), writes=w)))
        r.add_get("/api/topics", api(lambda q: state.topics(s)))
        r.add_get("/topics/{name}", page(lambda q: pages.topic_page(state.topic(s, q.match_info["name"]), writes=w)))
        r.add_get("/api/topics/{name}", api(lambda q: state.topic(s, q.match_info["name"])))
        r.add_get("/topics/{name}/{p}", page(lambda q: pages.partition_page(
            state.partition(s, q.match_info["name"], q.match_info["p"]), writes=w)))
        r.add_get("/api/topics/{name}/{p}", api(lambda q: state.partition(s, q.match_info["name"], q.match_info["p"])))
        r.add_get("/topics/{name}/{p}/segments/{base}", page(lambda q: pages.segment_page(self._segment(q))))
        r.add_get("/api/topics/{name}/{p}/segments/{base}", api(self._segment))
        r.add_get("/topics/{name}/{p}/messages", page(lambda q: pages.messages_page(self._messages(q))))
        r.add_get("/api/topics/{name}/{p}/messages", api(self._messages))
        r.add_get("/topics/{name}/{p}/batch/{offset}", page(lambda q: pages.batch_page(self._batch(q))))
        r.add_get("/api/topics/{name}/{p}/batch/{offset}", api(self._batch))
        r.add_get("/groups", page(lambda q: pages.groups_page(state.groups(s))))
        r.add_get("/api/groups", api(lambda q: state.groups(s)))
        r.add_get("/groups/{gid}", page(lambda q: pages.group_page(state.group(s, q.match_info["gid"]), writes=w)))
        r.add_get("/api/groups/{gid}", api(lambda q: state.group(s, q.match_info["gid"])))
        r.add_get("/replication", page(lambda q: replication_page.replication_page(replication_page.replication(s))))
        r.add_get("/api/replication", api(lambda q: replication_page.replication(s)))
        schema_pages.add_routes(r, schema_pages.Routes(lambda: self.schema_registry()), page, api)
        r.add_get("/transactions", page(lambda q: pages.transactions_page(state.transactions(s))))
        r.add_get("/api/transactions", api(lambda q: state.transactions(s)))
        # the trace shows every client's requests: with an authorizer, an operator's (auth.authorize_trace)
        r.add_get("/trace", self._operator(page(lambda q: pages.trace_page())))
        r.add_get("/trace/stream", self._operator(self._trace_stream))
        r.add_get("/metrics", self._metrics)
        r.add_static("/static", STATIC)
        FaultsApi(s, self.faults, self._same_origin, self.plain_users).add_routes(r)
        # writes: POST only (a GET never changes anything), behind --console-allow-writes
        for prefix in ("/actions", "/api/actions"):
            r.add_post(f"{prefix}/topics", self._write(
                auth.CREATE, lambda c, q, f: auth.authorize_create(c, f.get("name", "")),
                lambda q, f: actions.create_topic(s, f.get("name", ""), f.get("partitions"), f.get("configs", ""))))
            r.add_post(f"{prefix}/topics/{{name}}/delete", self._write(
                auth.DELETE, lambda c, q, f: auth.authorize_delete(c, q.match_info["name"]),
                lambda q, f: actions.delete_topic(s, q.match_info["name"])))
            r.add_post(f"{prefix}/topics/{{name}}/{{p}}/produce", self._write(
                auth.PRODUCE, lambda c, q, f: auth.authorize_produce(c, q.match_info["name"]),
                lambda q, f: actions.produce(
                    s, q.match_info["name"], q.match_info["p"], f.get("key") if f.get("null_key") != "on" else None,
                    f.get("value", ""), f.get("headers", ""))))
            r.add_post(f"{prefix}/groups/{{gid}}/reset-offsets", self._write(
                auth.RESET, lambda c, q, f: auth.authorize_reset(c, q.match_info["gid"], f.get("topic", "")),
                lambda q, f: actions.reset_offsets(
                    s, q.match_info["gid"], f.get("topic", ""), f.get("partition"), f.get("to", "earliest"))))
        return app

    # -- writes ----------------------------------------------------------------------------------
    def _write(self, api: tuple[int, int], check: Check,
               act: Callable[[web.Request, Form], Awaitable[Done] | Done]) -> Handler_:
        async def handle(request: web.Request) -> web.StreamResponse:
            if not self.allow_writes:
                raise ActionError(403, "writes are off: start the broker with --console-allow-writes "
                                       "(console.allow.writes=true) to create or delete topics, produce and "
                                       "reset offsets from the console")
            self._check_same_origin(request)
            form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
            if self.services.authorizer.enabled:
                # as a client that logged in with SASL as this user, from this address (Kafka's
                # principal and host of an ACL); then the check of the API the action imitates
                check(self._context(request, api), request, form)
            result = act(request, form)
            done = await result if asyncio.iscoroutine(result) else result
            assert isinstance(done, Done)
            log.info("console action %s: %s", request.path, done.message)
            if request.path.startswith("/api/"):
                return web.Response(text=json.dumps({"ok": True, "message": done.message, "link": done.link,
                                                     **done.details}), content_type="application/json")
            return web.Response(text=pages.done_page(done.message, done.link), content_type="text/html")
        return handle

    async def _same_origin(self, request: web.Request) -> None:
        self._check_same_origin(request)

    def _context(self, request: web.Request, api: tuple[int, int]) -> RequestContext:
        """The request context of the HTTP client's Basic credentials, from its address."""
        principal = auth.principal_of(self.services, self.plain_users, request.headers.get("Authorization"))
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        ip, port = (peer[0], peer[1]) if peer else (request.remote or "", 0)
        return auth.context(self.services, *api, principal, ip, port)

    def _operator(self, handler: Handler_) -> Handler_:
        """A read only an operator may make when the broker has an authorizer (issue 30)."""
        async def handle(request: web.Request) -> web.StreamResponse:
            if self.services.authorizer.enabled:
                auth.authorize_trace(self._context(request, auth.TRACE))
            return await handler(request)
        return handle

    def _check_same_origin(self, request: web.Request) -> None:
        """CSRF and DNS rebinding: a browser's POST names the page it came from (Origin, else
        Referer); it must be this console, reached under a name that is this console's (a
        rebinding page's origin is its own name, which resolves here but is not ours). A client
        that sends neither (curl, a script) is no browser carrying someone's session."""
        host = request.host
        hostname = urlsplit(f"//{host}").hostname or ""
        if hostname not in {self.host, "localhost", "127.0.0.1", "::1"}:
            raise ActionError(403, f"writes are taken only under the console's own address, not {host!r}")
        origin = request.headers.get("Origin")
        if origin is None and "Referer" in request.headers:
            parts = urlsplit(request.headers["Referer"])
            origin = f"{parts.scheme}://{parts.netloc}"
        if origin is not None and origin != f"{request.scheme}://{host}":
            raise ActionError(403, f"cross-origin write refused (origin {origin[:100]!r} is not this console)")

    def _cluster(self) -> ClusterView:
        served = [(hd.api.name, key, hd.versions.lo, hd.versions.hi) for key, hd in self.handlers.items()]
        return state.cluster(self.services, served, self.bootstrap)

    def _segment(self, q: web.Request) -> SegmentView:
        m = q.match_info
        return state.segment(self.services, m["name"], m["p"], m["base"])

    def _messages(self, q: web.Request) -> MessagesView:
        m = q.match_info
        view = state.messages(self.services, m["name"], m["p"], offset=q.query.get("offset") or None,
                              timestamp=q.query.get("timestamp") or None, limit=q.query.get("limit"))
        return schema_pages.annotate(view, self.schema_registry())

    def _batch(self, q: web.Request) -> BatchBytesView:
        m = q.match_info
        return state.batch_bytes(self.services, m["name"], m["p"], m["offset"])

    @staticmethod
    def _page(render: Callable[[web.Request], str]) -> Handler_:
        async def handle(request: web.Request) -> web.StreamResponse:
            return web.Response(text=render(request), content_type="text/html")
        return handle

    @staticmethod
    def _api(get: Callable[[web.Request], object]) -> Handler_:  # object: whatever json.dumps takes
        async def handle(request: web.Request) -> web.StreamResponse:
            return web.Response(text=json.dumps(get(request), default=str), content_type="application/json")
        return handle

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler_) -> web.StreamResponse:
        try:
            return await handler(request)
        except NotFound as e:
            return self._error(request, 404, str(e))
        except BadRequest as e:
            return self._error(request, 400, str(e))
        except AuthRequired as e:
            resp = self._error(request, 401, str(e))
            resp.headers["WWW-Authenticate"] = f'Basic realm="{auth.REALM}", charset="UTF-8"'
            return resp
        except ActionError as e:
            return self._error(request, e.status, str(e))
        except web.HTTPException as e:
            if e.status >= 400 and not request.path.startswith("/static/"):
                return self._error(request, e.status, e.reason)
            raise
        except Exception as e:  # a console bug must not look like, or become, a broker error
            log.exception("console: %s failed", request.path)
            return self._error(request, 500, f"the console failed: {type(e).__name__}: {e}")

    @staticmethod
    def _error(request: web.Request, status: int, message: str) -> web.Response:
        if request.path.startswith("/api/"):
            return web.Response(status=status, text=json.dumps({"error": message, "status": status}),
                                content_type="application/json")
        return web.Response(status=status, text=pages.error_page(status, message), content_type="text/html")

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text=metrics_text(self.services, self.handlers, self.limits),
                            content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def _trace_stream(self, request: web.Request) -> web.StreamResponse:
        """Server-Sent Events: one `data:` line per traced request, filtered as asked."""
        sub = self.live.subscribe(request.query.get("client_id"), request.query.get("api"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        try:
            await resp.write(b": subscribed\n\n")
            while True:
                try:
                    # a comment line each second: the write fails soon after the browser leaves, so
                    # the listener detaches and the broker stops paying for tracing
                    text = await asyncio.wait_for(sub.queue.get(), 1.0)
                except TimeoutError:
                    await resp.write(b": keep-alive\n\n")
                    continue
                if sub.dropped:
                    await resp.write(f"event: dropped\ndata: {sub.dropped}\n\n".encode())
                    sub.dropped = 0
                await resp.write(f"data: {text}\n\n".encode())
        except ConnectionResetError:
            pass
        finally:
            self.live.unsubscribe(sub)
        return resp
