"""Run a broker inside the calling process, for test suites.

Two shapes, both on an ephemeral port in a temporary data directory that is removed on stop:

    async with AsyncBroker() as b:          # on the caller's running event loop
        ... b.bootstrap ...

    with BrokerThread() as b:               # on its own loop in a daemon thread, for sync code
        ... b.bootstrap ...

`overrides` takes Kafka config keys, e.g. `BrokerThread(overrides={"num.partitions": 3})`.
`b.broker` is the live `Broker`; `b.call(fn)` runs `fn(broker)` on the broker's loop and returns
its result, which is how inspection helpers read state without a client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _config(data_dir: Path, host: str, port: int, overrides: dict[str, Any] | None) -> Any:
    from minibroker.config import BrokerConfig

    items = [f"{k}={_fmt(v)}" for k, v in (overrides or {}).items()]
    return BrokerConfig.load(None, items, host=host, port=port, data_dir=str(data_dir))


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


class AsyncBroker:
    """A broker on the current event loop."""

    def __init__(self, data_dir: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 overrides: dict[str, Any] | None = None):
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="minibroker-"))
        self.host, self.port, self.overrides = host, port, overrides
        self.server: Any = None

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    @property
    def broker(self) -> Any:
        return self.server.broker

    async def start(self) -> str:
        from minibroker.server import BrokerServer

        self.server = BrokerServer(_config(self.data_dir, self.host, self.port, self.overrides))
        await self.server.start()
        return self.bootstrap

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    async def __aenter__(self) -> AsyncBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class BrokerThread:
    """A broker on its own event loop in a daemon thread."""

    def __init__(self, data_dir: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 overrides: dict[str, Any] | None = None, loop: str = "uvloop"):
        self._inner = AsyncBroker(data_dir, host=host, port=port, overrides=overrides)
        self._loop_kind = loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return self._inner.bootstrap

    @property
    def broker(self) -> Any:
        return self._inner.broker

    @property
    def data_dir(self) -> Path:
        return self._inner.data_dir

    def start(self, timeout: float = 30.0) -> str:
        ready: concurrent.futures.Future[str] = concurrent.futures.Future()

        def run() -> None:
            if self._loop_kind == "uvloop":
                import uvloop

                loop = uvloop.new_event_loop()
            else:
                loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                ready.set_result(loop.run_until_complete(self._inner.start()))
            except BaseException as e:  # noqa: BLE001 - handed to the starting thread
                ready.set_exception(e)
                return
            loop.run_forever()
            loop.run_until_complete(self._inner.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="minibroker", daemon=True)
        self._thread.start()
        return ready.result(timeout)

    def call(self, fn: Callable[[Any], Any], timeout: float = 30.0) -> Any:
        """Run fn(broker) on the broker's loop (awaiting it if it is a coroutine)."""
        assert self._loop is not None

        async def invoke() -> Any:
            r = fn(self.broker)
            if asyncio.iscoroutine(r):
                r = await r
            return r

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._loop = None
            self._thread = None

    def __enter__(self) -> BrokerThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
