"""`FaultRegistry`: the faults set on a broker, and where the dispatcher meets them (issue 32).

Theory of operation: the registry holds every fault by id (request faults and component faults).
While it holds a request fault it sits on the dispatcher's hook (`KafkaApis.faults`); without one
the hook is None and a request pays one attribute check. For each decoded request the dispatcher
calls `wrap(ctx, api, request, fn)`: the faults whose filters match are triggered (their counts,
their seeded draws) and those that fire turn the handler `fn` into one that delays, closes, drops
or answers the error (minibroker.faults.error_response) before or instead of handling. Every
firing is recorded on the request's context (`ctx.faults`, which the trace and the console's live
trace show on that request) and in `history`, which the console's fault page lists.

A write API's error answers the matched entries without handling them and hands the rest of the
request to the handler (a Produce to three partitions with a fault on one appends to two); a
read-only API (Metadata, Fetch, ListOffsets, OffsetFetch, ...) is handled whole and the matched
entries of its answer replaced, so a Metadata keeps its brokers and a Fetch its session.

All of it runs on the broker's event loop; tests on another thread go through
minibroker.faults.client, which calls in on the loop.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Protocol, Unpack

from minibroker.faults import error_response as er
from minibroker.faults.components import KINDS, FaultTarget
from minibroker.faults.model import Fault, FaultError, FaultSpec, JsonValue, make_fault
from minibroker.handlers.registry import HandlerFn, RequestContext
from minibroker.kafka_apis import RequestFaults
from minibroker_protocol.apis import metadata, produce
from minibroker_protocol.schema import Api, Message

log = logging.getLogger("minibroker.faults")

HISTORY = 200
# APIs that change nothing: handled whole, the matched entries of the answer replaced
READ_ONLY = frozenset({1, 2, 3, 9, 10, 15, 16, 18, 23, 29, 32, 35, 48, 50, 60, 61, 65, 66, 69, 75, 77, 90})


class FaultHook(Protocol):
    """Where the dispatcher looks for the registry (minibroker.kafka_apis.KafkaApis.faults)."""

    faults: RequestFaults | None


class FaultRegistry:
    """The faults of one broker (or, in a cluster, of the brokers it is given: `node` picks)."""

    def __init__(self, hook: FaultHook, target: FaultTarget, resolve_topic_id: Callable[[uuid.UUID], str | None]):
        self._hooks: list[FaultHook] = [hook]
        self._targets: dict[int, FaultTarget] = {target.node_id: target}
        self._default = target
        self._resolve = resolve_topic_id
        self._faults: dict[int, Fault] = {}
        self._request_faults: list[Fault] = []
        self._held: dict[int, list[asyncio.Future[None]]] = {}  # "drop": requests held, by fault id
        self._ids = itertools.count(1)
        self.history: collections.deque[dict[str, JsonValue]] = collections.deque(maxlen=HISTORY)

    def attach(self, hook: FaultHook, target: FaultTarget) -> None:
        """Serve another broker too (a cluster shares one registry: a fault's `node` picks the
        broker, none means every broker for a request fault and the first one for a component
        fault). Set it as that broker's `faults` before its first use."""
        self._hooks.append(hook)
        self._targets[target.node_id] = target
        if self._request_faults:
            hook.faults = self

    def number_from(self, base: int) -> None:
        """Number the faults from base + 1 (a cluster's brokers each their own range, so an id names
        its broker: minibroker.faults.control)."""
        self._ids = itertools.count(base + 1)

    # -- the faults ----------------------------------------------------------------------------
    def inject(self, api: str | int | None = None, **kwargs: Unpack[FaultSpec]) -> Fault:
        """Set a fault (the arguments of minibroker.faults.model.make_fault) and return it. A
        component fault lasts until removed unless given a `count`."""
        if kwargs.get("kind") is not None and "count" not in kwargs:
            kwargs["count"] = None
        fault = make_fault(next(self._ids), api=api, **kwargs)
        if fault.kind is not None:
            kind = KINDS.get(fault.kind)
            if kind is None:
                raise FaultError(f"no component fault kind {fault.kind!r} (known: {', '.join(sorted(KINDS))})")
            if fault.kind == "disk.slow" and not fault.delay_ms:
                raise FaultError("disk.slow needs delay_ms")
            kind.apply(self._target(fault), fault, self._fired)
        else:
            self._request_faults.append(fault)
            for hook in self._hooks:
                hook.faults = self
        self._faults[fault.id] = fault
        log.info("fault %d set: %s", fault.id, fault.to_json())
        return fault

    def remove(self, fault: Fault | int) -> bool:
        """Remove a fault (a component fault is reverted: the disk heals, the broker resumes)."""
        f = self._faults.pop(fault if isinstance(fault, int) else fault.id, None)
        if f is None:
            return False
        if f.kind is not None:
            KINDS[f.kind].revert(self._target(f), f)
        else:
            self._request_faults.remove(f)
            if not self._request_faults:
                for hook in self._hooks:
                    if hook.faults is self:
                        hook.faults = None
            for fut in self._held.pop(f.id, []):
                if not fut.done():
                    fut.set_result(None)
        log.info("fault %d removed (fired %d times)", f.id, f.fired)
        return True

    def clear(self) -> None:
        for fid in list(self._faults):
            self.remove(fid)

    def get(self, fault_id: int) -> Fault | None:
        return self._faults.get(fault_id)

    def all(self) -> list[Fault]:
        return [*self._faults.values()]

    def __len__(self) -> int:
        return len(self._faults)

    async def wait_fired(self, fault: Fault | int, n: int = 1, timeout: float = 10.0) -> Fault:
        """Until the fault has fired `n` times (TimeoutError after `timeout` seconds)."""
        f = self._faults.get(fault) if isinstance(fault, int) else fault
        if f is None:
            raise KeyError(f"no fault {fault}")
        deadline = time.monotonic() + timeout
        while f.fired < n:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"fault {f.id} fired {f.fired} of {n} times within {timeout}s")
            await asyncio.sleep(0.005)
        return f

    def _target(self, fault: Fault) -> FaultTarget:
        # a cluster kind's node is the broker it acts on, from any broker (faults.cluster_kinds)
        if fault.node is None or getattr(KINDS.get(fault.kind or ""), "any_node", False):
            return self._default
        target = self._targets.get(fault.node)
        if target is None:
            raise FaultError(f"no broker with node id {fault.node} here (nodes: {sorted(self._targets)})")
        return target

    def _fired(self, fault: Fault, what: str, ctx: RequestContext | None = None) -> None:
        entry: dict[str, JsonValue] = {"at_ms": int(time.time() * 1000), "fault": fault.id,
                                 "description": fault.describe(), "on": what}
        if ctx is not None:
            h = ctx.header
            entry.update({"correlation_id": h.correlation_id, "client_id": h.client_id, "version": h.api_version,
                          "peer": ctx.connection.peer if ctx.connection is not None else None})
        self.history.append(entry)

    # -- the dispatcher's side -----------------------------------------------------------------
    def wrap(self, ctx: RequestContext, api: Api, request: Message, fn: HandlerFn) -> HandlerFn:
        """`fn`, or the handler the faults that fire on this request make of it."""
        header = ctx.header
        fired: list[Fault] = []
        values: set[tuple[str, er.KeyValue]] | None = None
        paths: list[er.Path] | None = None
        terminal = False  # one error, close or drop per request: a second one is not triggered
        for f in self._request_faults:
            if f.api_key != header.api_key or f.exhausted or (terminal and not f.delay_ms):
                continue
            if f.versions is not None and not f.versions[0] <= header.api_version <= f.versions[1]:
                continue
            if (f.client_id is not None and f.client_id != header.client_id) or \
                    (f.node is not None and f.node != ctx.services.node_id):
                continue
            if f.topic is not None or f.group_id is not None or f.transactional_id is not None:
                if paths is None:
                    paths = er.entries(request, header.api_version, self._resolve)
                    values = {kv for p in paths for kv in p}
                    _coordinator_key(request, header.api_version, values)
                assert values is not None
                if f.group_id is not None and ("group", f.group_id) not in values:
                    continue
                if f.transactional_id is not None and ("transactional_id", f.transactional_id) not in values:
                    continue
                if f.topic is not None and not any(_selects(f, p) for p in paths):
                    continue
            if f.trigger():
                fired.append(f)
                terminal = terminal or not f.delay_ms
        if not fired:
            return fn
        for f in fired:
            self._fired(f, f"{api.name} v{header.api_version}", ctx)
            log.info("%s on %s v%d corr=%d from %s", f.describe(), api.name, header.api_version,
                     header.correlation_id, header.client_id)
        ctx.faults = tuple(f.describe() for f in fired)
        return functools.partial(self._apply, fired, api, fn)

    async def _apply(self, fired: list[Fault], api: Api, fn: HandlerFn, ctx: RequestContext, request: Message
                     ) -> Message | None:
        delay = sum(f.delay_ms for f in fired)
        if delay:
            await asyncio.sleep(delay / 1000)
        terminal = next((f for f in fired if f.action is not None or f.error is not None), None)
        if terminal is None:
            return await fn(ctx, request)
        conn = ctx.connection
        reason = terminal.describe()
        if terminal.action == "close":
            if conn is not None:
                conn.close(reason)
            return None
        if terminal.action == "drop":
            # held until the client closes the connection (the task is cancelled) or the fault goes
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._held.setdefault(terminal.id, []).append(fut)
            try:
                await fut
            finally:
                held = self._held.get(terminal.id)
                if held is not None and fut in held:
                    held.remove(fut)
            return None
        if terminal.action == "close_after":
            await fn(ctx, request)
            if conn is not None:
                conn.close(reason)
            return None
        return await self._error(terminal, api, fn, ctx, request)

    async def _error(self, f: Fault, api: Api, fn: HandlerFn, ctx: RequestContext, request: Message
                     ) -> Message | None:
        version = ctx.header.api_version
        if api.key == produce.API.key and getattr(request, "acks", 1) == 0:
            # Kafka answers no acks=0 produce: an error closes the connection so the client notices
            if ctx.connection is not None:
                ctx.connection.close(f.describe())
            return None
        select = functools.partial(_selects, f) if f.topic is not None else None
        cls = api.response.cls
        if api.key in READ_ONLY:
            real = await fn(ctx, request)
            if real is None:
                return None
            if api.key == metadata.API.key and getattr(request, "topics", None) is None:
                # all topics asked for: the error goes on each topic the answer names
                request = er.copy_message(request)
                topics = [metadata.REQUEST.MetadataRequestTopic(name=t.name, topic_id=t.topic_id)
                          for t in getattr(real, "topics", None) or []]
                setattr(request, "topics", topics)  # noqa: B010 - a Metadata request, typed as any message
            er.merge(real, er.error_response(cls, request, version, f.code, self._resolve, select), version)
            return real
        if select is not None:
            rest = er.copy_message(request)
            if er.prune(rest, version, self._resolve, select):
                real = await fn(ctx, rest)
                if real is not None:
                    er.merge(real, er.error_response(cls, request, version, f.code, self._resolve, select), version)
                return real
        return er.error_response(cls, request, version, f.code, self._resolve, select)


def _selects(f: Fault, path: er.Path) -> bool:
    """Whether an entry of a request (its keys from the top) is one the fault's topic filter names."""
    keys = dict(path)
    if keys.get("topic") != f.topic:
        return False
    return f.partition is None or keys.get("partition") == f.partition


def _coordinator_key(request: Message, version: int, values: set[tuple[str, er.KeyValue]]) -> None:
    """FindCoordinator names a group or a transactional id by `key_type` (0 group, 1 transaction)."""
    key_type = getattr(request, "key_type", None)
    if key_type not in (0, 1):
        return
    name = "group" if key_type == 0 else "transactional_id"
    for k, v in list(values):
        if k == "key":
            values.add((name, v))
