"""The faults of a test fixture's broker, from the test (issue 32): `b.faults.inject(...)`.

The registry (minibroker.faults.registry) lives on the broker's event loop. A `BrokerThread`'s
test runs on another thread, so `BrokerFaults` calls in on the loop for every change and hands
back an `InjectedFault`: its `fired` count (read across threads: an int), `remove()`, a context
manager that removes it, and `wait_fired(n, timeout)`, which blocks. An `AsyncBroker` shares the
test's loop: its `AsyncInjectedFault.wait_fired` is a coroutine, as its other waits are.

    with b.faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2) as fault:
        producer.produce(...); producer.flush()
        fault.wait_fired(2)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, Unpack

from minibroker.faults.model import Fault, FaultSpec, JsonValue, fault_kwargs

if TYPE_CHECKING:
    from minibroker.faults.registry import FaultRegistry

T = TypeVar("T")


class OnLoop(Protocol):
    """Runs fn(registry) on the broker's loop and returns its result."""

    def __call__(self, fn: Callable[[FaultRegistry], T]) -> T: ...

_POLL_S = 0.005


class _Injected:
    def __init__(self, fault: Fault, on_loop: OnLoop) -> None:
        self.fault = fault
        self._on_loop = on_loop

    @property
    def id(self) -> int:
        return self.fault.id

    @property
    def fired(self) -> int:
        """How often it fired so far."""
        return self.fault.fired

    @property
    def matched(self) -> int:
        return self.fault.matched

    def remove(self) -> bool:
        """Remove it (a component fault is reverted: the disk heals, a paused broker resumes)."""
        fid = self.fault.id
        return self._on_loop(lambda r: r.remove(fid))

    def _timeout(self, n: int, timeout: float) -> TimeoutError:
        return TimeoutError(f"{self.fault.describe()} fired {self.fault.fired} of {n} times within {timeout}s")

    def __repr__(self) -> str:
        return f"<{self.fault.describe()}, fired {self.fault.fired}>"


class InjectedFault(_Injected):
    """A fault set from a test thread (BrokerThread)."""

    def wait_fired(self, n: int = 1, timeout: float = 10.0) -> InjectedFault:
        """Block until it fired `n` times (TimeoutError otherwise)."""
        deadline = time.monotonic() + timeout
        while self.fault.fired < n:
            if time.monotonic() >= deadline:
                raise self._timeout(n, timeout)
            time.sleep(_POLL_S)
        return self

    async def wait_fired_async(self, n: int = 1, timeout: float = 10.0) -> InjectedFault:
        deadline = time.monotonic() + timeout
        while self.fault.fired < n:
            if time.monotonic() >= deadline:
                raise self._timeout(n, timeout)
            await asyncio.sleep(_POLL_S)
        return self

    def __enter__(self) -> InjectedFault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class AsyncInjectedFault(_Injected):
    """A fault set on the test's own loop (AsyncBroker): its wait is a coroutine."""

    async def wait_fired(self, n: int = 1, timeout: float = 10.0) -> AsyncInjectedFault:
        deadline = time.monotonic() + timeout
        while self.fault.fired < n:
            if time.monotonic() >= deadline:
                raise self._timeout(n, timeout)
            await asyncio.sleep(_POLL_S)
        return self

    def __enter__(self) -> AsyncInjectedFault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    async def __aenter__(self) -> AsyncInjectedFault:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.remove()


H = TypeVar("H", bound=_Injected)


class BrokerFaults(Generic[H]):
    """`b.faults` of a test fixture: set, list and remove faults (see minibroker.faults.model.make_fault
    for the arguments: api, error / delay_ms / action, the filters, the trigger)."""

    def __init__(self, on_loop: OnLoop, handle: Callable[[Fault, OnLoop], H]) -> None:
        self._on_loop = on_loop
        self._handle = handle

    def inject(self, api: str | int | None = None, **kwargs: Unpack[FaultSpec]) -> H:
        """A request fault: `inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2)`,
        `inject("Metadata", delay_ms=2000)`, `inject("Fetch", action="close", nth=3)`."""
        fault = self._on_loop(lambda r: r.inject(api, **kwargs))
        return self._handle(fault, self._on_loop)

    def inject_json(self, spec: object) -> H:
        """A fault as POST /api/faults takes it: {"api": "Fetch", "error": "OFFSET_OUT_OF_RANGE"}."""
        fault: Fault = self._on_loop(lambda r: r.inject(**fault_kwargs(spec)))
        return self._handle(fault, self._on_loop)

    def disk_full(self, topic: str | None = None, partition: int | None = None, count: int | None = None) -> H:
        """Produce appends answer KAFKA_STORAGE_ERROR until removed (or `count` times)."""
        return self.inject(kind="disk.full", topic=topic, partition=partition, count=count)

    def slow_disk(self, delay_ms: int, topic: str | None = None, count: int | None = None) -> H:
        """Each Produce append waits `delay_ms` until removed (or `count` times)."""
        return self.inject(kind="disk.slow", delay_ms=delay_ms, topic=topic, count=count)

    def pause(self, node: int | None = None) -> H:
        """Stop accepting and reading every connection until the fault is removed."""
        return self.inject(kind="broker.pause", node=node, count=None)

    def resume(self, node: int | None = None) -> int:
        """Remove the pause faults (of `node`, or all): the broker reads again. How many there were."""
        def resume(r: FaultRegistry) -> int:
            paused = [f for f in r.all() if f.kind == "broker.pause" and (node is None or f.node == node)]
            for f in paused:
                r.remove(f)
            return len(paused)
        return self._on_loop(resume)

    def remove(self, fault: _Injected | int) -> bool:
        fid = fault if isinstance(fault, int) else fault.id
        return self._on_loop(lambda r: r.remove(fid))

    def clear(self) -> None:
        self._on_loop(lambda r: r.clear())

    def all(self) -> list[dict[str, JsonValue]]:
        """Every fault set, as JSON-ready dicts (with "fired")."""
        return self._on_loop(lambda r: [f.to_json() for f in r.all()])

    def ids(self) -> set[int]:
        return self._on_loop(lambda r: {f.id for f in r.all()})

    def history(self) -> list[dict[str, JsonValue]]:
        """The last firings (which fault, on which request)."""
        return self._on_loop(lambda r: list(r.history))
