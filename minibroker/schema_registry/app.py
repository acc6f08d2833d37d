"""`SchemaRegistry`: the registry's HTTP server on the broker's loop, over `_schemas`."""

from __future__ import annotations

import logging

from aiohttp import web

from minibroker.replica_manager import ReplicaManager
from minibroker.schema_registry.browse import RegistryBrowser
from minibroker.schema_registry.http_api import MAX_BODY, RegistryApi, confluent_errors
from minibroker.schema_registry.registry import Registry
from minibroker.schema_registry.schema_log import TOPIC, SchemaLog
from minibroker.schema_registry.validation import SchemaValidator
from minibroker.topics import TopicRegistry
from minibroker_storage.clock import Clock

log = logging.getLogger("minibroker.schema_registry")


class SchemaRegistry:
    """Confluent's REST API on `host:port` (0: any free port), its state replayed from `_schemas`
    at `start`."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, clock: Clock) -> None:
        self.registry = Registry(SchemaLog(topics, replica_manager, clock))
        self.api = RegistryApi(self.registry)
        self.browser = RegistryBrowser(self.registry, "")  # what the console shows (its url set at start)
        # the broker-side check of topics with confluent.*.schema.validation (the ReplicaManager calls it)
        self.validator = SchemaValidator(self._ids_of)
        self._runner: web.AppRunner | None = None
        self.host = ""
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, host: str, port: int) -> None:
        records = self.registry.catch_up()
        app = web.Application(middlewares=[confluent_errors, self.api.caught_up], client_max_size=MAX_BODY)
        app.add_routes(self.api.routes())
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        self._runner = runner
        sockets = getattr(site._server, "sockets", None) or []
        self.host, self.port = host, sockets[0].getsockname()[1] if sockets else port
        self.browser.url = self.url
        state = self.registry.state
        log.info("schema registry on %s (%d records of %s: %d subjects, largest id %d)", self.url, records, TOPIC,
                 len(state.subjects), state.max_id)

    def _ids_of(self, subject: str) -> set[int]:
        self.registry.catch_up()  # one offset comparison unless another writer appended to _schemas
        return {sv.schema_id for sv in self.registry.state.subjects.get(subject, {}).values()}

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
