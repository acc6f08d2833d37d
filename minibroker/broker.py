"""The broker's state and its request dispatcher.

Theory of operation: `Broker` ties the layers together. It owns the `LogManager` (storage), the
topic registry built on it, the coordinators, and the waiters of long-polling fetches. A
connection hands each frame to `dispatch`, which decodes the header, finds the handler
registered for the API, checks the version, decodes the body with the API's schema, awaits the
handler and encodes the response (header + body, with record data left as file regions for the
zero-copy path). A single-node cluster: this broker is the controller, the leader of every
partition and the whole ISR.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from minibroker.config import BrokerConfig, effective_topic_config, to_log_config, validate_topic_config
from minibroker.handlers.registry import RequestContext, load_all
from protocol import types as t
from protocol.apis import api_versions
from protocol.codec import Output, decode_from, encode
from protocol.errors import ErrorCode, KafkaError
from protocol.headers import decode_request_header, encode_response_header, response_header_version
from protocol.types import DecodeError
from storage.log import Log
from storage.log_manager import LogManager

log = logging.getLogger("minibroker.broker")

MAX_TOPIC_NAME_LENGTH = 249  # Kafka: Topic.MAX_NAME_LENGTH
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def validate_topic_name(name: str) -> None:
    """Kafka's org.apache.kafka.common.internals.Topic.validate rules."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}",
        )
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, "
            "'.', '_' and '-'",
        )


def _collision_key(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them.
    return name.replace(".", "_")


class Topic:
    """What the broker knows of a topic: its id, partitions and config overrides."""

    __slots__ = ("name", "topic_id", "partitions", "overrides", "config")

    def __init__(self, name: str, topic_id: uuid.UUID, partitions: dict[int, Log],
                 overrides: dict[str, Any], config: dict[str, Any]):
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.overrides = overrides
        self.config = config  # effective topic config (Kafka keys -> parsed values)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class Topics(dict[str, Topic]):
    """Topics by name, with an index by topic id kept in step (Fetch v13+, Produce v13 and the v10
    offset APIs name topics by id, once per topic per request)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[uuid.UUID, Topic] = {}

    def __setitem__(self, name: str, topic: Topic) -> None:
        old = self.get(name)
        if old is not None:
            self.by_id.pop(old.topic_id, None)
        super().__setitem__(name, topic)
        self.by_id[topic.topic_id] = topic

    def __delitem__(self, name: str) -> None:
        self.by_id.pop(self[name].topic_id, None)
        super().__delitem__(name)

    def pop(self, name: str, *default: Any) -> Any:  # type: ignore[override]
        topic = super().pop(name, *default)
        if isinstance(topic, Topic):
            self.by_id.pop(topic.topic_id, None)
        return topic


class FetchWaiters:
    """Long-polling fetches waiting for data, woken by appends (Kafka: DelayedFetch purgatory)."""

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = {}

    async def wait(self, keys: Iterable[tuple[str, int]], timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        keys = list(keys)
        for k in keys:
            self._waiters.setdefault(k, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            pass
        finally:
            for k in keys:
                s = self._waiters.get(k)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiters[k]

    def notify(self, key: tuple[str, int]) -> None:
        waiters = self._waiters.get(key)
        if waiters:
            for fut in list(waiters):
                if not fut.done():
                    fut.set_result(None)


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.node_id: int = config.node_id
        self.host = config.advertised_host
        self.port = config.advertised_port
        self.log_manager = LogManager(Path(config.data_dir), to_log_config(
            effective_topic_config(config, {})), now_ms=now_ms, node_id=self.node_id,
            cluster_id=config.get("cluster.id") if config.is_set("cluster.id") else None,
            topic_config=lambda overrides: to_log_config(effective_topic_config(self.config, overrides)))
        self.topics = Topics()
        self.fetch_waiters = FetchWaiters()
        self.started_ms = now_ms()
        self.handlers = load_all()
        self.coordinators: dict[str, Any] = {}  # "group", "transaction": set by their modules
        self.producer_ids: Any = None  # coordinator.transaction_producer_ids.ProducerIdManager, set at startup
        self.fetch_sessions: Any = None
        self.tracer: Any = None  # minibroker.tools.trace sets this when --trace is on
        self._background: list[asyncio.Task[None]] = []
        self.cleaner: Any = None  # minibroker.cleaner.LogCleanerTask once started
        self._creating_internal: dict[str, asyncio.Future[Topic]] = {}
        # held while retired segment files are removed off the loop, so that the cleaner does not
        # retire more segments of a log at the same moment (its swap waits for the lock)
        self.file_deletion_lock = asyncio.Lock()
        self._creating: dict[str, asyncio.Future[Topic]] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def startup(self) -> None:
        from minibroker.dynamic_config import apply_broker_config, dynamic_config

        dyn = dynamic_config(self)  # dynamic broker configs (AlterConfigs) stored by an earlier run
        if dyn.per_broker or dyn.cluster_default:
            apply_broker_config(self, dyn.combined())
        self.log_manager.startup()
        self.cluster_id = self.log_manager.cluster_id
        by_topic: dict[str, dict[int, Log]] = {}
        for (topic, partition), lg in self.log_manager.logs().items():
            by_topic.setdefault(topic, {})[partition] = lg
        ids = self.log_manager.topic_ids()
        for name, parts in by_topic.items():
            overrides = self.log_manager.topic_overrides(name)
            self.topics[name] = Topic(name, ids.get(name) or uuid.uuid4(), parts, overrides,
                                      effective_topic_config(self.config, overrides))
        from minibroker.fetch_sessions import FetchSessionCache

        self.fetch_sessions = FetchSessionCache(self.config.get("max.incremental.fetch.session.cache.slots"))
        from minibroker.coordinator.group_coordinator import GroupCoordinator

        self.coordinators["group"] = GroupCoordinator.from_broker(self)
        from minibroker.coordinator.transaction_producer_ids import ProducerIdManager

        # producer ids (InitProducerId) never repeat: a persisted block, and never below an id in the logs
        self.producer_ids = ProducerIdManager(self.log_manager.data_dir, self.node_id)
        self.producer_ids.ensure_above(max((pid for lg in self.log_manager.logs().values()
                                            for pid in lg.producer_state.producers), default=-1))
        from minibroker.coordinator.transaction_coordinator import TransactionCoordinator

        self.coordinators["transaction"] = TransactionCoordinator.from_broker(self)

    async def start_background(self) -> None:
        """Periodic work on the loop: flushes, checkpoints, retention (blocking parts off the loop)."""
        for hook in list(self.coordinators.values()):
            start = getattr(hook, "start", None)
            if start is not None:
                await start()
        self._background.append(asyncio.create_task(self._periodic(), name="broker-periodic"))
        if self.config.get("log.cleaner.enable"):
            from minibroker.cleaner import LogCleanerTask

            self.cleaner = LogCleanerTask(self)
            self._background.append(asyncio.create_task(self.cleaner.run(), name="log-cleaner"))

    async def _periodic(self) -> None:
        flush_every = self.config.get("log.flush.scheduler.interval.ms")
        checkpoint_every = self.config.get("log.flush.offset.checkpoint.interval.ms")
        retention_every = self.config.get("log.retention.check.interval.ms")
        # log.flush.scheduler.interval.ms defaults to Long.MAX_VALUE ("never"); tick at least once a
        # second anyway, for checkpoints, retention and flush.ms.
        tick = max(0.05, min(1.0, flush_every / 1000 if 0 < flush_every < 1 << 40 else 1.0, retention_every / 1000))
        last_ckpt = last_ret = now_ms()
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(tick)
            for lg in list(self.log_manager.logs().values()):
                if lg.needs_flush():  # flush.ms / flush.messages, or a rolled segment: fsync off the loop
                    await loop.run_in_executor(None, lg.maybe_flush)
            t_now = now_ms()
            if t_now - last_ckpt >= checkpoint_every:
                last_ckpt = t_now
                await loop.run_in_executor(None, self.log_manager.checkpoint)
            if t_now - last_ret >= retention_every:
                last_ret = t_now
                self.run_retention()
                # closing and unlinking retired files is blocking work: off the loop, one log at a time
                async with self.file_deletion_lock:
                    for lg in list(self.log_manager.logs().values()):
                        await loop.run_in_executor(None, lg.cleanup_deleted, now_ms())
                self.log_manager.cleanup_deleted(now_ms())  # `-delete` directories of deleted topics

    def run_retention(self) -> None:
        """Retire segments past retention (renames only; Kafka: UnifiedLog.deleteOldSegments). Runs
        on the loop because it changes the segment list that appends and fetches use."""
        busy = self.cleaner.in_progress if self.cleaner is not None else set()
        for tp, lg in list(self.log_manager.logs().items()):
            if tp in busy:
                continue  # the cleaner is reading these segments; retention waits for the next round
            try:
                lg.delete_old_segments()
            except Exception:
                log.exception("retention failed for %s-%d", lg.topic, lg.partition)

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
        for hook in list(self.coordinators.values()):
            stop = getattr(hook, "stop", None)
            if stop is not None:
                await stop()
        self.log_manager.shutdown()

    # -- topics ----------------------------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> Log | None:
        t_ = self.topics.get(topic)
        return t_.partitions.get(partition) if t_ else None

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self.topics.by_id.get(topic_id)

    def check_new_topic(self, name: str, num_partitions: int, replication_factor: int,
                        configs: dict[str, str]) -> dict[str, Any]:
        """Validate a topic creation as Kafka does; return the parsed config overrides."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        key = _collision_key(name)
        for other in self.topics:
            if _collision_key(other) == key:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"Topic '{name}' collides with existing topic: {other}")
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor != 1:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                "factor of " f"{replication_factor} cannot be reached because only 1 broker(s) are registered.",
            )
        try:
            return validate_topic_config(configs)
        except Exception as e:  # ConfigError
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, Any] | None = None,
                     *, topic_id: uuid.UUID | None = None) -> Topic:
        overrides = dict(overrides or {})
        topic_id = topic_id or uuid.uuid4()
        effective = effective_topic_config(self.config, overrides)
        log_config = to_log_config(effective)
        self.log_manager.set_topic_overrides(name, overrides)
        parts = {p: self.log_manager.create_log(name, p, topic_id, log_config) for p in range(num_partitions)}
        topic = Topic(name, topic_id, parts, overrides, effective)
        self.topics[name] = topic
        log.info("Created topic %s with %d partition(s), id %s", name, num_partitions, topic_id)
        return topic

    async def create_topic_async(self, name: str, num_partitions: int, overrides: dict[str, Any] | None = None,
                                 ) -> Topic:
        """create_topic with the partition directories made off the event loop.

        Each new partition costs a few fsyncs (partition.metadata, leader-epoch-checkpoint, the
        directory); 50 of them for __consumer_offsets would stall every connection for most of a
        second. Concurrent calls for the same topic share one creation.
        """
        pending = self._creating.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        if name in self.topics:
            return self.topics[name]
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Topic] = loop.create_future()
        self._creating[name] = fut
        try:
            overrides = dict(overrides or {})
            topic_id = uuid.uuid4()
            effective = effective_topic_config(self.config, overrides)
            log_config = to_log_config(effective)
            self.log_manager.set_topic_overrides(name, overrides)
            parts = await loop.run_in_executor(None, lambda: {
                p: self.log_manager.create_log(name, p, topic_id, log_config) for p in range(num_partitions)})
            topic = Topic(name, topic_id, parts, overrides, effective)
            self.topics[name] = topic
            log.info("Created topic %s with %d partition(s), id %s", name, num_partitions, topic_id)
            fut.set_result(topic)
            return topic
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: waiters get it, nobody else needs a warning
            raise
        finally:
            del self._creating[name]

    async def ensure_internal_topic_async(self, name: str, partitions: int, overrides: dict[str, Any]) -> Topic:
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        # concurrent callers (librdkafka sends FindCoordinator on several connections at once)
        # share one creation; two would race on the same partition directories
        pending = self._creating_internal.get(name)
        if pending is None:
            pending = asyncio.ensure_future(self.create_topic_async(name, partitions, overrides))
            self._creating_internal[name] = pending
            pending.add_done_callback(lambda _f: self._creating_internal.pop(name, None))
        return await asyncio.shield(pending)

    def add_partitions(self, topic: Topic, total: int) -> None:
        log_config = to_log_config(topic.config)
        for p in range(len(topic.partitions), total):
            topic.partitions[p] = self.log_manager.create_log(topic.name, p, topic.topic_id, log_config)

    def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.log_manager.delete_topic(name)
        groups = self.coordinators.get("group")
        if groups is not None:
            groups.on_partitions_deleted(name)  # Kafka drops a deleted topic's committed offsets
        for p in topic.partitions:
            self.fetch_waiters.notify((name, p))
        log.info("Deleted topic %s", name)

    def maybe_auto_create(self, name: str) -> Topic | None:
        """Metadata auto-creation (auto.create.topics.enable), with the broker's defaults."""
        if not self.config.get("auto.create.topics.enable"):
            return None
        validate_topic_name(name)
        return self.create_topic(name, self.config.get("num.partitions"))

    def ensure_internal_topic(self, name: str, partitions: int, overrides: dict[str, Any]) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            topic = self.create_topic(name, partitions, overrides)
        return topic

    # -- dispatch --------------------------------------------------------------------------
    async def dispatch(self, conn: Any, frame: bytes | bytearray) -> list[Any] | None:
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
        handler = self.handlers.get(header.api_key)
        if handler is None:
            log.warning("closing connection from %s: unknown api key %d (client %s)",
                        _peer(conn), header.api_key, header.client_id)
            conn.close("unknown api key")
            return None
        version = header.api_version
        ctx = RequestContext(header, self, conn)
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
        if self.tracer is not None:
            self.tracer.request(ctx, request, response, frame, started)
        if response is None:
            return None
        return self.encode_response(header.api_key, version, header.correlation_id, response, handler.api)

    def encode_response(self, api_key: int, version: int, correlation_id: int, response: Any,
                        api: Any) -> list[Any]:
        out = Output(b"\0\0\0\0")
        encode_response_header(out, correlation_id, response_header_version(api_key, version))
        encode(api.response, version, response, out)
        out[0:4] = (out.total_size - 4).to_bytes(4, "big", signed=True)
        return out.chunks()

    def _unsupported_version(self, ctx: RequestContext, handler: Any) -> list[Any] | None:
        header = ctx.header
        if header.api_key == api_versions.API.key:
            # KIP-511: answer in ApiVersions v0 with our ranges so the client can pick a version.
            from minibroker.handlers.api_versions import advertised

            body = api_versions.RESPONSE(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                         api_keys=advertised(self.handlers.values()))
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


def _error_response(api: Any, code: int) -> Any:
    """A response carrying `code` in its top-level error field, for APIs that have one."""
    if any(f.name == "error_code" for f in api.response.fields):
        return api.response(error_code=code)
    return None


def _peer(conn: Any) -> str:
    return getattr(conn, "peer", "?")
