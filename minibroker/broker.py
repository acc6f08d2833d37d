"""The broker: where its components are built and wired, and the request dispatcher.

Theory of operation: `Broker` is the composition root (Kafka: BrokerServer.startup). Its
constructor builds every component once and hands each what it uses, typed: the dynamic config
layers, the `LogManager` (storage), the `TopicRegistry` over it, the `ReplicaManager` (the one
append path, and the fetches waiting on it), the coordinators (minibroker.coordinators: built when
first needed), the cleaner and the periodic log tasks. Handlers see them through one `BrokerServices` in each request's
context. A connection hands each frame to `dispatch`, which decodes the header, finds the
handler registered for the API, checks the version, decodes the body with the API's schema,
awaits the handler and encodes the response (header + body, with record data left as file
regions for the zero-copy path). A single-node cluster: this broker is the controller, the
leader of every partition and the whole ISR.

One Produce, socket to disk: minibroker/connection.py (frame) -> broker.py `dispatch` ->
handlers/produce.py -> replica_manager.py `append_async` -> storage/log.py `append_as_leader`
(storage/log_validator.py checks and assigns offsets) -> storage/segment.py / file_records.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from minibroker.cleaner import LogCleanerTask
from minibroker.config import BrokerConfig, effective_topic_config, to_log_config
from minibroker.connection_quotas import ConnectionQuotas
from minibroker.coordinator.group.consumer_group_configs import ConsumerGroupConfigs
from minibroker.coordinator.txn.producer_id_manager import ProducerIdManager
from minibroker.coordinators import Coordinators
from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker.fetch_sessions import FetchSessionCache
from minibroker.handlers.api_versions import advertised
from minibroker.handlers.registry import SERVED_VERSIONS, Channel, Handler, RequestContext, ServedHandlers
from minibroker.log_scheduler import LogScheduler
from minibroker.memory_pool import MemoryPool
from minibroker.metrics import BrokerMetrics
from minibroker.quotas.manager import ClientQuotaManager, quota_user
from minibroker.quotas.store import QuotaStore
from minibroker.quotas.throttle import request_throttle_ms
from minibroker.replica_manager import ReplicaManager
from minibroker.security.authorizer import AUTHORIZER_CLASSES, Authorizer, parse_super_users
from minibroker.security.credentials import ScramCredentialStore
from minibroker.services import BrokerServices
from minibroker.topics import Topic, TopicRegistry
from protocol import types as t
from protocol.apis import api_versions
from protocol.codec import Output, decode_from, encode
from protocol.errors import ErrorCode, KafkaError
from protocol.headers import decode_request_header, encode_response_frame
from protocol.schema import Api
from protocol.types import DecodeError
from storage.clock import Clock, wall_clock_ms
from storage.log_manager import LogManager

# storage.log (the append path) comes with the first log opened, after the first answer on an
# empty data dir (issue 22, tests/test_startup_imports.py)
if TYPE_CHECKING:
    from minibroker.coordinator.group.group_coordinator import GroupCoordinator
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator
    from minibroker.coordinator.txn.transaction_coordinator import TransactionCoordinator
    from minibroker.tools.trace import TraceListeners
    from storage.log import Log

log = logging.getLogger("minibroker.broker")


class Connection(Protocol):
    """What the dispatcher needs of the connection a frame came in on (minibroker.connection)."""

    peer: str
    listener: str | None  # the name of the listener it was accepted on
    principal: str  # "User:<name>"; User:ANONYMOUS until SASL authenticates
    ip: str

    def close(self, reason: str | None) -> None: ...

    def add_close_callback(self, callback: Callable[[], None]) -> None: ...

    def mute(self, ms: int) -> None: ...


class RequestTracer(Protocol):
    """The --trace hook (minibroker.tools.trace.Tracer)."""

    def request(self, ctx: RequestContext, request: Any, response: Any, frame: bytes | bytearray,
                started: float) -> None: ...


class Broker:
    def __init__(self, config: BrokerConfig, *, clock: Clock = wall_clock_ms):
        data_dir = Path(config.data_dir)
        self.clock = clock
        self.started_ms = clock()
        # dynamic broker configs (AlterConfigs) stored by an earlier run lie over the static ones
        self.dynamic_config = DynamicBrokerConfig(config, data_dir)
        self.dynamic_config.load()
        cfg = self.dynamic_config.current
        # identity and listeners are static (not dynamic keys); the server fills in an ephemeral
        # port on the static config after binding
        self.node_id: int = config.node_id
        self.host: str = config.advertised_host
        self.port: int = config.advertised_port
        self.log_manager = LogManager(
            data_dir, to_log_config(effective_topic_config(cfg, {})), now_ms=clock, node_id=self.node_id,
            cluster_id=cfg.get("cluster.id") if cfg.is_set("cluster.id") else None,
            topic_config=lambda overrides: to_log_config(effective_topic_config(self.config, overrides)))
        self.topics = TopicRegistry(self.log_manager, cfg)
        self.metrics = BrokerMetrics()  # counters the hot paths bump; /metrics (minibroker.console) reads them
        self.replica_manager = ReplicaManager(self.metrics)
        # producer ids (InitProducerId) never repeat: a persisted block, and never below an id in the logs
        self.producer_ids = ProducerIdManager(data_dir, self.node_id)
        self.fetch_sessions = FetchSessionCache(cfg.get("max.incremental.fetch.session.cache.slots"))
        # GROUP config resources of consumer groups, read by the manager from the next heartbeat on
        self.consumer_group_configs = ConsumerGroupConfigs(data_dir, {})
        self.consumer_group_configs.load()
        # the group, transaction and share-group coordinators: built when first needed, or at
        # start when their state is on disk (minibroker.coordinators; issue 22)
        self.coordinators = Coordinators(cfg, data_dir, clock, self.topics, self.replica_manager, self.producer_ids,
                                         self.log_manager, self.consumer_group_configs)
        file_deletion_lock = asyncio.Lock()
        self.cleaner = (LogCleanerTask(self.log_manager, self.dynamic_config, clock, file_deletion_lock)
                        if cfg.get("log.cleaner.enable") else None)
        self.scheduler = LogScheduler(self.log_manager, self.dynamic_config, clock, file_deletion_lock,
                                      self._cleaning)
        # limits that keep the broker alive: request memory, connections, client quotas
        self.memory_pool = MemoryPool(cfg.get("queued.max.request.bytes"))
        self.quota_store = QuotaStore(data_dir)
        self.quota_store.load()
        self.client_quotas = ClientQuotaManager(self.quota_store, cfg.get("quota.window.num"),
                                                cfg.get("quota.window.size.seconds"))
        self.connection_quotas = ConnectionQuotas(lambda: self.config, self.client_quotas)
        # SCRAM credentials (salted, iterated; AlterUserScramCredentials), read by SASL listeners
        self.scram_credentials = ScramCredentialStore(data_dir)
        self.scram_credentials.load()
        # ACLs (StandardAuthorizer's rules), on when authorizer.class.name names Kafka's authorizer
        self.authorizer = Authorizer(data_dir, enabled=cfg.get("authorizer.class.name") in AUTHORIZER_CLASSES,
                                     super_users=parse_super_users(cfg.get("super.users")),
                                     allow_if_no_acl=cfg.get("allow.everyone.if.no.acl.found"))
        self.authorizer.load()
        self.topics.on_delete(self._topic_deleted)
        self.dynamic_config.on_change(self.topics.reconfigure)
        # share groups off (group.share.enable=false): their APIs are not served, so not advertised.
        # A handler module is imported by the first request for one of its keys (issue 22).
        served = dict(SERVED_VERSIONS)
        if not cfg.get("group.share.enable"):
            from minibroker.coordinator.share.share_group import SHARE_GROUP_APIS

            served = {k: v for k, v in served.items() if k not in SHARE_GROUP_APIS}
        self.services = BrokerServices(
            node_id=self.node_id, host=self.host, port=self.port, started_ms=self.started_ms, clock=clock,
            dynamic_config=self.dynamic_config, log_manager=self.log_manager, topics=self.topics,
            replica_manager=self.replica_manager, coordinators=self.coordinators, producer_ids=self.producer_ids,
            fetch_sessions=self.fetch_sessions, metrics=self.metrics, quota_store=self.quota_store,
            advertised={e.listener_name: e for e in config.advertised_endpoints},
            scram_credentials=self.scram_credentials,
            client_quotas=self.client_quotas, authorizer=self.authorizer,
            consumer_group_configs=self.consumer_group_configs, served_versions=served)
        self.handlers = ServedHandlers(served)
        self.tracer: RequestTracer | None = None  # set while a trace listener is attached (--trace, the console)
        self._background: list[asyncio.Task[None]] = []

    @property
    def config(self) -> BrokerConfig:
        return self.services.config

    @functools.cached_property
    def trace_listeners(self) -> TraceListeners:
        """The --trace and console listeners; the trace tool is imported when the first one comes
        (not at start-up: issue 22)."""
        from minibroker.tools.trace import TraceListeners

        return TraceListeners(self)

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self.coordinators.group

    @property
    def txn_coordinator(self) -> TransactionCoordinator:
        return self.coordinators.txn

    @property
    def share_groups(self) -> ShareGroupCoordinator:
        return self.coordinators.share

    @property
    def cluster_id(self) -> str:
        return self.services.cluster_id

    def _cleaning(self) -> set[tuple[str, int]]:
        return self.cleaner.in_progress if self.cleaner is not None else set()

    def _topic_deleted(self, topic: Topic) -> None:
        group = self.coordinators.group_if_built
        if group is not None:
            group.on_partitions_deleted(topic.name)  # Kafka drops a deleted topic's offsets
        for p in topic.partitions:
            self.replica_manager.wake(topic.name, p)

    # -- lifecycle -------------------------------------------------------------------------
    def startup(self) -> None:
        """Load the logs (recovery where the last stop was not clean) and the topics on them."""
        self.log_manager.startup()
        self.topics.load()
        self.producer_ids.ensure_above(max((pid for lg in self.log_manager.logs().values()
                                            for pid in lg.producer_state.producers), default=-1))

    async def start_background(self) -> None:
        """Load the coordinators with state on disk, then periodic work on the loop: flushes,
        checkpoints, retention (blocking parts off the loop), the cleaner, and the other
        coordinators (built in the background, or by the first request that needs one)."""
        await self.coordinators.start()
        self._background.append(asyncio.create_task(self.coordinators.load_rest(), name="coordinators-load"))
        self._background.append(asyncio.create_task(self.scheduler.run(), name="broker-periodic"))
        if self.cleaner is not None:
            self._background.append(asyncio.create_task(self.cleaner.run(), name="log-cleaner"))

    def run_retention(self) -> None:
        self.scheduler.run_retention()

    async def shutdown(self) -> None:
        for task in self._background:
            task.cancel()
        for task in self._background:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self.cleaner is not None:
            await self.cleaner.stop()  # a cleaning still writing on its thread finishes first
        await self.coordinators.stop()
        self.log_manager.shutdown()

    # -- shortcuts for tools and tests that hold a Broker ------------------------------------
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.topics.get_log(topic, partition)

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, Any] | None = None) -> Topic:
        return self.topics.create(name, num_partitions, overrides)

    def check_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                        configs: dict[str, str]) -> dict[str, Any]:
        return self.topics.check_new_topic(name, num_partitions, replication_factor, configs)

    def delete_topic(self, name: str) -> None:
        self.topics.delete(name)

    # -- dispatch --------------------------------------------------------------------------
    async def dispatch(self, conn: Connection, frame: bytes | bytearray) -> list[Any] | None:
        started = time.perf_counter()
        if self.tracer is not None:
            # The produce path assigns offsets in a writable frame in place (storage.log); a trace
            # shows the bytes as they came, so it gets an immutable copy and the log copies instead.
            frame = bytes(frame)
        try:
            header, pos = decode_request_header(frame)
        except DecodeError as e:
            log.warning("closing connection from %s: unreadable request header (%s)", _peer(conn), e)
            conn.close("bad request header")
            return None
        handler = self.handlers.loaded.get(header.api_key) or self.handlers.get(header.api_key)
        if handler is None:
            log.warning("closing connection from %s: unknown api key %d (client %s)",
                        _peer(conn), header.api_key, header.client_id)
            conn.close("unknown api key")
            return None
        version = header.api_version
        ctx = RequestContext(header, self.services, conn)
        if version not in handler.versions:
            return self._unsupported_version(ctx, handler)
        try:
            request, end = decode_from(handler.api.request, version, frame, pos)
            if end != len(frame):
                # Kafka's RequestContext.parseRequest ignores bytes after the body, and librdkafka
                # (2.16) sends 3 of them after an all-topics Metadata v12 (AdminClient.list_topics).
                log.debug("%s v%d from %s: %d trailing bytes ignored", handler.api.name, version,
                          _peer(conn), len(frame) - end)
        except DecodeError as e:
            log.warning("closing connection from %s: malformed %s v%d request (%s)",
                        _peer(conn), handler.api.name, version, e)
            conn.close("malformed request")
            return None
        try:
            response = await handler.fn(ctx, request)
        except KafkaError as e:
            response = _error_response(handler.api, e.code)
            if response is None:
                log.warning("%s v%d from %s failed: %s", handler.api.name, version, _peer(conn), e)
                conn.close("request failed")
                return None
        except Exception:
            log.exception("%s v%d from %s failed", handler.api.name, version, _peer(conn))
            response = _error_response(handler.api, ErrorCode.UNKNOWN_SERVER_ERROR)
            if response is None:
                conn.close("internal error")
                return None
        self.metrics.request(header.api_key, version, time.perf_counter() - started)
        if self.tracer is not None:
            self.tracer.request(ctx, request, response, frame, started)
        chunks = (encode_response_frame(handler.api, version, header.correlation_id, response)
                  if response is not None else None)
        if self.quota_store.quotas:
            throttle = request_throttle_ms(self.client_quotas, header.api_key, header.client_id or "",
                                           len(frame) + 4, response, chunks, time.perf_counter() - started,
                                           user=quota_user(conn.principal))
            if throttle:
                # KIP-219: answer at once with the throttle time, then mute the channel for it
                conn.mute(throttle)
                if response is not None and hasattr(response, "throttle_time_ms"):
                    response.throttle_time_ms = max(response.throttle_time_ms, throttle)
                    chunks = encode_response_frame(handler.api, version, header.correlation_id, response)
        return chunks

    def _unsupported_version(self, ctx: RequestContext, handler: Handler) -> list[Any] | None:
        header = ctx.header
        if header.api_key == api_versions.API.key:
            # KIP-511: answer in ApiVersions v0 with our ranges so the client can pick a version.
            body = api_versions.RESPONSE(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                         api_keys=advertised(self.handlers.versions))
            out = Output(b"\0\0\0\0")
            t.write_int32(out, header.correlation_id)
            encode(api_versions.RESPONSE, 0, body, out)
            out[0:4] = (len(out) - 4).to_bytes(4, "big")
            return [out]
        log.warning("closing connection from %s: %s v%d is not supported (we serve v%s)",
                    _peer(ctx.connection), handler.api.name, header.api_version, handler.versions)
        if ctx.connection is not None:
            ctx.connection.close("unsupported version")
        return None


def _error_response(api: Api, code: int) -> Any:
    """A response carrying `code` in its top-level error field, for APIs that have one."""
    if any(f.name == "error_code" for f in api.response.fields):
        return api.response(error_code=code)
    return None


def _peer(conn: Channel | None) -> str:
    return conn.peer if conn is not None else "?"
