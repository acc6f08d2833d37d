"""`BrokerServer`: the broker's one composition root (Kafka: BrokerServer).

Theory of operation: `startup()` is the broker's life from a config to serving, in order:

  1. bind every listener (minibroker.network.socket_server; port 0 picks a free port, which is
     then advertised), accepting nothing yet;
  2. `build()`: every component, born once and handed what it uses (the list is in its body):
     dynamic config, storage (`LogManager`, recovery of the logs), topics, the `ReplicaManager`,
     producer ids, fetch sessions, the coordinators, the cleaner and the periodic log tasks, the
     limits (memory pool, client and connection quotas), SCRAM credentials, the authorizer, the
     `BrokerServices` handlers are given, the served handlers and the dispatcher (`KafkaApis`);
  3. load the coordinators whose state is on disk, start the background work;
  4. enable request processing: accept connections, their frames going to the dispatcher;
  5. the web console and /metrics, when `console.port` >= 0; the schema registry (Confluent's REST
     API over the _schemas topic, minibroker.schema_registry), when `schema.registry.port` >= 0.
`shutdown()` undoes it: the console and the schema registry, then the socket server (stop accepting, let each connection
finish what it has read), the background tasks, the coordinators, and the logs (flushed, with
checkpoints and the clean-shutdown marker, so the next start scans nothing).

The components are attributes of the server (Kafka's BrokerServer fields), so tools and tests that
look inside a broker hold the server. Alone, this broker is the controller, the leader of every
partition and the whole ISR; `ReplicaManager.apply_delta` makes it leader or follower of partitions
the metadata places on several brokers (followers fetch with the ReplicaFetcherManager, built when
the first partition is followed).

One Produce, socket to disk: minibroker/network/processor.py (frame) -> kafka_apis.py `handle` ->
handlers/produce.py -> replica_manager.py -> storage/log.py `append_as_leader`
(storage/log_validator.py checks and assigns offsets) -> storage/segment.py / file_records.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from minibroker.cleaner import LogCleanerTask
from minibroker.client_metrics import ClientMetricsConfigs
from minibroker.config import BrokerConfig, ConfigValue, effective_topic_config, to_log_config
from minibroker.coordinator.group.consumer_group_configs import ConsumerGroupConfigs
from minibroker.coordinator.txn.producer_id_manager import ProducerIdManager
from minibroker.coordinators import Coordinators
from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker.fetch_sessions import FetchSessionCache
from minibroker.handlers.registry import ServedHandlers, served_versions
from minibroker.kafka_apis import KafkaApis
from minibroker.log_dirs import LogDirsManager
from minibroker.log_scheduler import LogScheduler
from minibroker.metadata_cache import MetadataCache
from minibroker.metrics import BrokerMetrics
from minibroker.network.connection_quotas import ConnectionQuotas
from minibroker.network.memory_pool import MemoryPool
from minibroker.network.socket_server import ListenerBindError, SocketServer
from minibroker.quotas.manager import ClientQuotaManager
from minibroker.quotas.store import QuotaStore
from minibroker.replica_manager import ReplicaManager
from minibroker.security.authorizer import AUTHORIZER_CLASSES, Authorizer, parse_super_users
from minibroker.security.credentials import ScramCredentialStore
from minibroker.security.delegation_tokens import DelegationTokenCache, delegation_token_cache, sweep_expired
from minibroker.services import BrokerServices
from minibroker.topics import Topic, TopicRegistry
from minibroker_storage.clock import Clock, wall_clock_ms
from minibroker_storage.file_lock import FileLock, lock_log_dir
from minibroker_storage.log_manager import LogManager
from minibroker_storage.meta_properties import MetaProperties, ensure_meta_properties

if TYPE_CHECKING:
    from minibroker.console import Console
    from minibroker.coordinator.group.group_coordinator import GroupCoordinator
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator
    from minibroker.coordinator.txn.transaction_coordinator import TransactionCoordinator
    from minibroker.faults import FaultRegistry
    from minibroker.metadata.controller_channel import ControllerChannel
    from minibroker.replica_fetcher_manager import ReplicaFetcherManager
    from minibroker.schema_registry import SchemaRegistry
    from minibroker.tools.trace import TraceListeners
    from minibroker_storage.log import Log

log = logging.getLogger("minibroker.server")


class BrokerServer:
    """One broker. `socket_server` may come bound already (minibroker.cli binds the listeners
    before importing this module, so a client that connects while the broker's modules load
    waits in the backlog instead of being refused)."""

    # the components, built by build() (typed here: one place to read what a broker holds)
    dynamic_config: DynamicBrokerConfig
    meta_properties: MetaProperties
    log_manager: LogManager
    topics: TopicRegistry
    metadata_cache: MetadataCache
    metrics: BrokerMetrics
    replica_manager: ReplicaManager
    producer_ids: ProducerIdManager
    fetch_sessions: FetchSessionCache
    consumer_group_configs: ConsumerGroupConfigs
    client_metrics: ClientMetricsConfigs
    coordinators: Coordinators
    cleaner: LogCleanerTask | None
    scheduler: LogScheduler
    memory_pool: MemoryPool
    quota_store: QuotaStore
    client_quotas: ClientQuotaManager
    connection_quotas: ConnectionQuotas
    scram_credentials: ScramCredentialStore
    delegation_tokens: DelegationTokenCache | None  # None without delegation.token.secret.key
    authorizer: Authorizer
    services: BrokerServices
    handlers: ServedHandlers
    apis: KafkaApis

    def __init__(self, config: BrokerConfig, *, clock: Clock = wall_clock_ms,
                 socket_server: SocketServer | None = None):
        self.config = config  # the static config (the dynamic layers lie over it: dynamic_config)
        self.clock = clock
        # reads the listeners' SASL and TLS settings: a bad JAAS config or keystore fails here
        self.socket_server = socket_server if socket_server is not None else SocketServer(config)
        self.node_id: int = config.node_id
        self.console: Console | None = None  # the web console and /metrics, when console.port >= 0
        self.schema_registry: SchemaRegistry | None = None  # when schema.registry.port >= 0
        self._background: list[asyncio.Task[None]] = []
        # awaited once every component is built, before requests are served (a KRaft broker wires its
        # metadata publisher and forwarding there and catches up with the metadata log:
        # minibroker.kafka_raft_server)
        self.on_built: Callable[[BrokerServer], Awaitable[None]] | None = None
        # a KRaft broker's channels to the controller, set by its wiring (a controller.cut cuts them)
        self.controller_channels: Sequence[ControllerChannel] = ()
        # the broker epoch the clean-shutdown files keep: a KRaft broker's, set by its wiring
        # (Kafka: logManager.shutdown(lifecycleManager.brokerEpoch)); -1 for a broker on its own
        self.broker_epoch: Callable[[], int] = lambda: -1

    # -- life ------------------------------------------------------------------------------
    async def startup(self) -> None:
        t0 = time.perf_counter()
        # Every listener is bound before the broker is built: a listener on port 0 gets its port
        # here, and the broker advertises the bound ports (Kafka: SocketServer binds its
        # acceptors, then the broker registers its endpoints).
        self.socket_server.bind()
        self.build()
        if self.on_built is not None:
            await self.on_built(self)
        # the coordinators with state on disk load before the broker serves; the others are built
        # in the background, or by the first request that needs one (minibroker.coordinators)
        await self.coordinators.start()
        self._background.append(asyncio.create_task(self.coordinators.load_rest(), name="coordinators-load"))
        self._background.append(asyncio.create_task(self.scheduler.run(), name="broker-periodic"))
        self._background.append(asyncio.create_task(self.replica_manager.run_isr_expiration(), name="isr-expiration"))
        if self.delegation_tokens is not None:
            self._background.append(asyncio.create_task(sweep_expired(
                self.delegation_tokens, self.clock, self.config.get("delegation.token.expiry.check.interval.ms")),
                name="delegation-token-expiry"))
        if self.cleaner is not None:
            self._background.append(asyncio.create_task(self.cleaner.run(), name="log-cleaner"))
        self.socket_server.enable_request_processing(self.apis.handle, self.memory_pool, self.connection_quotas,
                                                     self.scram_credentials)
        if self.config.get("console.port") >= 0:
            await self._start_console()
        if self.config.get("schema.registry.port") >= 0:
            await self._start_schema_registry()
        log.info("minibroker node %d (cluster %s) listening on %s, advertising %s, data in %s (%.0f ms)",
                 self.node_id, self.cluster_id, self.socket_server.listening,
                 ",".join(map(str, self.config.advertised_endpoints)),
                 self.config.data_dir, (time.perf_counter() - t0) * 1000)

    def build(self) -> None:
        """Build every component, once, in the order they need each other, and load the logs
        (recovery where the last stop was not clean) and the topics on them. Nothing is started:
        no socket, no task (tests/coordinator builds a broker this way, without a server)."""
        data_dir = Path(self.config.data_dir)
        # Kafka's LogManager creates and locks its log dir (`.lock`) before anything in it is read
        # or written: a second broker on this directory stops here (minibroker_storage.file_lock)
        dir_lock = lock_log_dir(data_dir)
        try:
            self._build(data_dir, dir_lock)
        except BaseException:
            dir_lock.unlock()  # a start that failed leaves the directory to the next one
            raise

    def _build(self, data_dir: Path, dir_lock: FileLock) -> None:
        config, clock = self.config, self.clock
        # the data dir's identity (Kafka: KafkaRaftServer.initializeLogDirs): meta.properties read
        # and verified (or written on a first start); its cluster id is the one answers report
        self.meta_properties = ensure_meta_properties(
            data_dir, node_id=self.node_id, cluster_id=config.get("cluster.id") if config.is_set("cluster.id") else None)
        config.cluster_id = self.meta_properties.cluster_id
        # dynamic broker configs (AlterConfigs) stored by an earlier run lie over the static ones
        self.dynamic_config = DynamicBrokerConfig(config, data_dir)
        self.dynamic_config.load()
        cfg = self.dynamic_config.current
        self.log_manager = LogManager(
            data_dir, to_log_config(effective_topic_config(cfg, {})), now_ms=clock, node_id=self.node_id,
            cluster_id=self.meta_properties.cluster_id,
            topic_config=lambda overrides: to_log_config(effective_topic_config(self.dynamic_config.current,
                                                                                overrides)),
            dir_lock=dir_lock, extra_dirs=config.log_dirs[1:])
        self.topics = TopicRegistry(self.log_manager, cfg)
        self.metrics = BrokerMetrics()  # counters the hot paths bump; /metrics (minibroker.console) reads them
        self.replica_manager = ReplicaManager(self.metrics, self.node_id, now_ms=clock)
        # replication: logs for partitions the metadata places here, the ISR check's period
        self.replica_manager.log_manager = self.log_manager
        self.replica_manager.replica_lag_time_max_ms = cfg.get("replica.lag.time.max.ms")
        self.replica_manager.fetcher_manager_factory = self._replica_fetcher_manager
        self.metadata_cache = MetadataCache(self.node_id)
        if not config.get("process.roles"):
            self.topics.add_publisher(self.metadata_cache)  # the registry publishes every topic change
            self.topics.add_publisher(self.replica_manager)
        # else a KRaft broker: the metadata log is the one publisher (minibroker.kafka_raft_server)
        # producer ids (InitProducerId) never repeat: a persisted block, and never below an id in the logs
        self.producer_ids = ProducerIdManager(data_dir, self.node_id)
        self.fetch_sessions = FetchSessionCache(cfg.get("max.incremental.fetch.session.cache.slots"))
        # GROUP config resources of consumer groups, read by the manager from the next heartbeat on
        self.consumer_group_configs = ConsumerGroupConfigs(data_dir, {})
        self.consumer_group_configs.load()
        self.client_metrics = ClientMetricsConfigs(data_dir)  # KIP-714 subscriptions (config resources)
        self.client_metrics.load()
        # the group, transaction and share-group coordinators: built when first needed, or at
        # start when their state is on disk (minibroker.coordinators; issue 22)
        self.coordinators = Coordinators(cfg, data_dir, clock, self.topics, self.replica_manager, self.producer_ids,
                                         self.log_manager, self.consumer_group_configs)
        # apply_delta tells them which internal-topic partitions this broker leads (Kafka: onElection)
        self.replica_manager.coordinator_elections = self.coordinators
        self.coordinators.metadata_cache = self.metadata_cache
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
        self.connection_quotas = ConnectionQuotas(lambda: self.dynamic_config.current, self.client_quotas)
        # SCRAM credentials (salted, iterated; AlterUserScramCredentials), read by SASL listeners
        self.scram_credentials = ScramCredentialStore(data_dir)
        self.scram_credentials.load()
        self.delegation_tokens = delegation_token_cache(cfg, data_dir)
        self.scram_credentials.token_cache = self.delegation_tokens
        # ACLs (StandardAuthorizer's rules), on when authorizer.class.name names Kafka's authorizer
        self.authorizer = Authorizer(data_dir, enabled=cfg.get("authorizer.class.name") in AUTHORIZER_CLASSES,
                                     super_users=parse_super_users(cfg.get("super.users")),
                                     allow_if_no_acl=cfg.get("allow.everyone.if.no.acl.found"))
        self.authorizer.load()
        self.topics.on_delete(self._topic_deleted)
        self.dynamic_config.on_change(self.topics.reconfigure)
        # share groups off (group.share.enable=false): their APIs are not served, so not advertised.
        # A handler module is imported by the first request for one of its keys (issue 22).
        # A KRaft broker serves them too: its share partitions keep their state with the share
        # coordinators (minibroker.coordinator.share.persister)
        served = served_versions(share_groups=cfg.get("group.share.enable"))
        self.services = BrokerServices(
            node_id=self.node_id, host=config.advertised_host, port=config.advertised_port, started_ms=clock(),
            clock=clock, dynamic_config=self.dynamic_config, log_manager=self.log_manager, topics=self.topics,
            metadata_cache=self.metadata_cache,
            replica_manager=self.replica_manager, coordinators=self.coordinators, producer_ids=self.producer_ids,
            fetch_sessions=self.fetch_sessions, metrics=self.metrics, quota_store=self.quota_store,
            advertised={e.listener_name: e for e in config.advertised_endpoints},
            scram_credentials=self.scram_credentials,
            client_quotas=self.client_quotas, authorizer=self.authorizer,
            consumer_group_configs=self.consumer_group_configs, served_versions=served,
            client_metrics=self.client_metrics,
            log_dirs=LogDirsManager(self.log_manager, self.replica_manager, cleaning=self._cleaning,
                                    topics=self.topics))
        self.handlers = ServedHandlers(served)
        self.apis = KafkaApis(self.services, self.handlers)
        # storage: the logs (recovery happens here) and the topics on them
        self.log_manager.startup()
        self.topics.load()
        self.producer_ids.ensure_above(max((pid for lg in self.log_manager.logs().values()
                                            for pid in lg.producer_state.producers), default=-1))

    async def _start_console(self) -> None:
        # aiohttp costs most of a second to import; a broker without a console starts in ~10 ms
        from minibroker.console import Console  # lazy: aiohttp, only with console.port
        from minibroker.console.limits import Limits  # lazy: as above

        ss = self.socket_server
        limits = Limits(self.memory_pool, self.connection_quotas, self.client_quotas,
                        lambda: ss.slow_requests_dropped, lambda: ss.idle_closed)
        self.console = Console(self.services, self.handlers, self.trace_listeners,
                               bootstrap=self.bootstrap, allow_writes=self.config.get("console.allow.writes"),
                               limits=limits,
                               plain_users={u: pw for st in ss.sasl.values() for u, pw in st.plain_users.items()},
                               faults=(lambda: self.faults) if self.config.get("console.allow.faults") else None,
                               schema_registry=lambda: self.schema_registry.browser if self.schema_registry else None)
        host, port = self.config.get("console.host"), self.config.get("console.port")
        try:
            await self.console.start(host, port)
        except OSError as e:  # the port taken or the host not this machine's: one line, as a listener's
            self.console = None
            raise ListenerBindError(f"Console failed to bind to {host}:{port} (console.port): "
                                    f"{os.strerror(e.errno) if e.errno else e}.") from e

    async def _start_schema_registry(self) -> None:
        # aiohttp and the schema libraries (avro, jsonschema, protobuf): only with schema.registry.port
        from minibroker.schema_registry import SchemaRegistry  # lazy: only with schema.registry.port

        self.schema_registry = SchemaRegistry(self.topics, self.replica_manager, self.clock)
        await self.schema_registry.start(self.config.get("schema.registry.host"),
                                         self.config.get("schema.registry.port"))
        self.replica_manager.record_schema_validator = self.schema_registry.validator

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Stop accepting, finish in-flight requests (within `timeout`), then stop the background
        work and the coordinators and close the logs cleanly."""
        if self.console is not None:
            await self.console.stop()
            self.console = None
        if "faults" in self.__dict__:
            self.faults.clear()  # a paused broker resumes, a held ("drop") request ends: nothing waits
        if self.schema_registry is not None:
            self.replica_manager.record_schema_validator = None
            await self.schema_registry.stop()
            self.schema_registry = None
        await self.socket_server.stop(timeout)
        for task in self._background:
            task.cancel()
        for task in self._background:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._background = []
        if hasattr(self, "scheduler"):  # built (a start that failed binding built nothing)
            if self.cleaner is not None:
                await self.cleaner.stop()  # a cleaning still writing on its thread finishes first
            if self.services.log_dirs is not None:
                await self.services.log_dirs.stop()
            await self.replica_manager.shutdown()
            await self.coordinators.stop()
            self.log_manager.shutdown(self.broker_epoch())
        log.info("minibroker stopped")

    # -- wiring ----------------------------------------------------------------------------
    def _replica_fetcher_manager(self) -> ReplicaFetcherManager:
        from minibroker.replica_fetcher_manager import ReplicaFetcherManager  # lazy: followers only

        rm = self.replica_manager
        return ReplicaFetcherManager(self.node_id, broker_epoch=rm.local_broker_epoch, on_append=rm.on_follower_append,
                                     quotas=rm.replication_quotas)

    def _cleaning(self) -> set[tuple[str, int]]:
        return self.cleaner.in_progress if self.cleaner is not None else set()

    def _topic_deleted(self, topic: Topic) -> None:
        group = self.coordinators.group_if_built
        if group is not None:
            group.on_partitions_deleted(topic.name)  # Kafka drops a deleted topic's offsets
        for p in topic.partitions:
            self.replica_manager.wake(topic.name, p)

    @functools.cached_property
    def trace_listeners(self) -> TraceListeners:
        """The --trace and console listeners, on the dispatcher's trace hook; the trace tool is
        imported when the first one comes (not at start-up: issue 22)."""
        from minibroker.tools.trace import TraceListeners  # lazy: only with --trace or the console

        return TraceListeners(self.apis)

    @functools.cached_property
    def faults(self) -> FaultRegistry:
        """The faults set on this broker (issue 32); the fault modules are imported by the first use."""
        from minibroker.faults import FaultRegistry  # lazy: only a test that sets faults needs them

        return FaultRegistry(self.apis, self, self.metadata_cache.topic_name)

    # -- addresses -------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """host:port of the first listener."""
        return self.socket_server.bootstrap

    def bootstrap_for(self, listener: str) -> str:
        """host:port that listener `listener` (a listener name, as in `listeners`) is bound to."""
        return self.socket_server.bootstrap_for(listener)

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    # -- shortcuts for tools and tests that look inside a broker --------------------------
    @property
    def cluster_id(self) -> str:
        return self.log_manager.cluster_id

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self.coordinators.group

    @property
    def txn_coordinator(self) -> TransactionCoordinator:
        return self.coordinators.txn

    @property
    def share_groups(self) -> ShareGroupCoordinator:
        return self.coordinators.share

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.topics.get_log(topic, partition)

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, ConfigValue] | None = None) -> Topic:
        return self.topics.create(name, num_partitions, overrides)
