"""The group, transaction and share-group coordinators, built when they are first needed.

Theory of operation (issue 22: `python -m minibroker` listening in < 100 ms). Importing the three
coordinators costs about a fifth of a broker's start (the KIP-848 and classic group machinery with
every group API's schema, the share partitions, the transaction state machine), and a broker that
has none of their state on disk needs none of them to answer its first requests. Kafka loads its
coordinators after the socket server is up too (BrokerServer.startup: the group and transaction
coordinators load their partitions when the metadata publisher hands them over, answering
COORDINATOR_LOAD_IN_PROGRESS meanwhile); here a request never sees a coordinator half loaded:

- at start (`start`), a coordinator whose state is on disk (its internal topic, or the share
  groups' config file) is built and loaded before the broker serves, as every coordinator was
  before: a restart replays committed offsets, open transactions and share-partition state, and
  their timers (session expiry, transaction timeouts) run from the start;
- the others are built in the background a second after the broker listens (`load_rest`), one
  per turn of the loop, so that they do not hold up the first clients' ApiVersions and Metadata
  (the loop is single-threaded; Kafka loads on other threads). Their timers then run as before:
  none of them has anything to do sooner (with no state on disk the earliest is the transaction
  coordinator's check for timed-out transactions, 10 s by default, and its expiry of idle producer
  ids in every log, every 10 minutes);
- a request, the console or a test that reaches one before that (`group`, `txn`, `share`) builds
  and starts it there and then, synchronously: building replays nothing, and each coordinator's
  `start()` creates its timer tasks without awaiting anything.

Off the broker's loop (a test thread reading `broker.group_coordinator`), the build runs on the
loop and the caller waits for it.

On a cluster a coordinator loads only the partitions of its internal topic this broker leads, and
`on_election` / `on_resignation` (called by ReplicaManager.apply_delta through
minibroker.coordinator_elections, Kafka's onElection / onResignation) load and unload the others
as leadership moves; an election builds its coordinator if nothing has yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from minibroker import features
from minibroker.config import BrokerConfig
from minibroker.coordinator.coordinator_metadata_image import CoordinatorMetadataImage, TopicsMetadata
from minibroker.coordinator.group.consumer_group_configs import ConsumerGroupConfigs
from minibroker.coordinator.group.streams_group_configs import StreamsGroupConfigs
from minibroker.coordinator.txn.producer_id_manager import ProducerIdManager
from minibroker.metadata_cache import MetadataCache
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_storage.clock import Clock
from minibroker_storage.log_manager import LogManager

if TYPE_CHECKING:
    from minibroker.add_partitions_to_txn_manager import AddPartitionsToTxnManager
    from minibroker.coordinator.group.group_coordinator import GroupCoordinator
    from minibroker.coordinator.runtime.coordinator_runtime import CoordinatorRuntime
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator
    from minibroker.coordinator.txn.transaction_coordinator import TransactionCoordinator

T = TypeVar("T")

# the internal topics whose presence means a coordinator has state to replay at start
OFFSETS_TOPIC = "__consumer_offsets"  # minibroker.coordinator.group.records.TOPIC
TRANSACTION_TOPIC = "__transaction_state"  # minibroker.coordinator.txn.transaction_log.TOPIC
SHARE_STATE_TOPIC = "__share_group_state"  # minibroker.coordinator.share.share_coordinator_shard.TOPIC
SHARE_CONFIGS_FILE = "share_group_configs.json"  # minibroker.coordinator.share.share_group


def _run_now(start: Coroutine[object, None, None]) -> None:
    """Run a coordinator's `start()` to its end on the caller's turn of the loop. The three
    `start()`s await nothing (they replay their log and create their timer tasks), so a request
    that needs a coordinator gets it started before it goes on."""
    try:
        start.send(None)
    except StopIteration:
        return
    start.close()
    raise RuntimeError("a coordinator's start() suspended; build it with `await Coordinators.start()`")


class Coordinators:
    """The three coordinators of one broker, each built once, when first needed (see above)."""

    LOAD_REST_AFTER_S = 1.0

    def __init__(self, cfg: BrokerConfig, data_dir: Path, clock: Clock, topics: TopicRegistry,
                 replica_manager: ReplicaManager, producer_ids: ProducerIdManager, log_manager: LogManager,
                 consumer_group_configs: ConsumerGroupConfigs) -> None:
        self._cfg = cfg  # the config at broker construction, as when they were built there
        self._data_dir = data_dir
        self._clock = clock
        self._topics = topics
        self._replica_manager = replica_manager
        self._producer_ids = producer_ids
        self._log_manager = log_manager
        self._consumer_group_configs = consumer_group_configs
        # streams.* GROUP configs (KIP-1071), read by the streams group coordinator at each heartbeat
        self.streams_group_configs = StreamsGroupConfigs(data_dir)
        self.streams_group_configs.load()
        # a KRaft broker's: gives the share coordinator, once built, the share.* GROUP configs of the
        # metadata image (minibroker.metadata.group_config_publisher) over its own file's
        self.on_share_built: Callable[[ShareGroupCoordinator], None] | None = None
        self._runtime: CoordinatorRuntime | None = None
        self._group: GroupCoordinator | None = None
        self._txn: TransactionCoordinator | None = None
        self._share: ShareGroupCoordinator | None = None
        # in start order; stopped in reverse
        self._started: list[GroupCoordinator | TransactionCoordinator | ShareGroupCoordinator] = []
        # the broker's loop once `start` ran: from then on a coordinator is started when built
        self._loop: asyncio.AbstractEventLoop | None = None
        # the metadata (partition leaders, brokers): the transaction coordinator sends markers to
        # other brokers' partitions from it (set by the composition root, minibroker.server)
        self.metadata_cache: MetadataCache | None = None
        # KIP-890 verification against coordinators on other brokers (built by the produce handler)
        self.add_partitions_manager: AddPartitionsToTxnManager | None = None

    # -- the coordinators ------------------------------------------------------------------
    @property
    def runtime(self) -> CoordinatorRuntime:
        """The one partition writer and loader of the three internal topics, and their leadership
        hooks (`on_become_leader` / `on_resign`), built with the first coordinator."""
        if self._runtime is None:
            from minibroker.coordinator.runtime import (
                coordinator_runtime,  # lazy: imports minibroker_storage.log
            )

            self._runtime = coordinator_runtime.CoordinatorRuntime(self._topics, self._replica_manager,
                                                                   now_ms=self._clock)
            self._runtime.partition_count = self._partition_count
        return self._runtime

    def _metadata_image(self) -> TopicsMetadata:
        """The topics group assignments are made from: the metadata's (a KRaft broker's registry
        holds only its replicas), or the registry where there is no metadata cache (tests' stacks)."""
        return self._topics if self.metadata_cache is None else CoordinatorMetadataImage(self.metadata_cache)

    def _partition_count(self, topic: str) -> int | None:
        """`topic`'s partitions in the metadata (Kafka: metadataCache.numPartitions), None
        before it exists or without a metadata cache."""
        image = self.metadata_cache.topic(topic) if self.metadata_cache is not None else None
        return image.num_partitions if image is not None else None

    @property
    def group(self) -> GroupCoordinator:
        return self._group if self._group is not None else self._on_loop(self._build_group)

    @property
    def txn(self) -> TransactionCoordinator:
        return self._txn if self._txn is not None else self._on_loop(self._build_txn)

    @property
    def share(self) -> ShareGroupCoordinator:
        return self._share if self._share is not None else self._on_loop(self._build_share)

    @property
    def share_if_built(self) -> ShareGroupCoordinator | None:
        """The share coordinator if something built it (its group configs are then in memory)."""
        return self._share

    @property
    def group_if_built(self) -> GroupCoordinator | None:
        """The group coordinator if something built it (a deleted topic has no offsets to drop
        in a coordinator that was never loaded: there is no __consumer_offsets on disk)."""
        return self._group

    def _build_group(self) -> GroupCoordinator:
        if self._group is None:
            from minibroker.coordinator.group import group_coordinator, records  # lazy: issue 22

            gc = group_coordinator
            cfg = self._cfg
            offsets = self.runtime.store(OFFSETS_TOPIC, cfg.get("offsets.topic.num.partitions"),
                                         records.topic_configs(cfg.get("offsets.topic.segment.bytes")))
            group = gc.GroupCoordinator(gc.GroupConfig.from_broker_config(cfg), offsets, now_ms=self._clock,
                                        consumer_config=gc.ConsumerGroupConfig.from_broker_config(cfg),
                                        topics=self._metadata_image())
            # GROUP config resources (consumer.*), loaded at broker construction, read from the next heartbeat on
            group.consumer_groups.group_configs = self._consumer_group_configs.configs
            group.streams_groups.config = gc.StreamsGroupConfig.from_broker_config(cfg)
            group.streams_groups.group_configs = self.streams_group_configs.configs
            self._group = group
            self._start(group, OFFSETS_TOPIC)
        return self._group

    def _build_txn(self) -> TransactionCoordinator:
        if self._txn is None:
            from minibroker.coordinator.txn import (  # lazy: issue 22
                transaction_coordinator,
                transaction_log,
                txn_marker_sender,
            )

            tc = transaction_coordinator

            group = self._build_group()  # told when a marker lands in __consumer_offsets
            config = tc.TransactionConfig.from_broker_config(self._cfg, features.transaction_version())
            store = self.runtime.store(TRANSACTION_TOPIC, config.num_partitions,
                                       transaction_log.topic_configs(config.segment_bytes, config.min_isr))
            sender = (txn_marker_sender.TxnMarkerSender(self._replica_manager.node_id, self.metadata_cache,
                                                        self._replica_manager)
                      if self.metadata_cache is not None else None)
            self._txn = tc.TransactionCoordinator(config, store, self._producer_ids, self._topics, self._replica_manager,
                                               group, self._log_manager, now_ms=self._clock, marker_sender=sender)
            self._start(self._txn, TRANSACTION_TOPIC)
        return self._txn

    def _build_share(self) -> ShareGroupCoordinator:
        if self._share is None:
            from minibroker.coordinator.group import group_metadata_manager  # lazy: issue 22
            from minibroker.coordinator.share import (  # lazy: issue 22
                share_coordinator_shard,
                share_group,
                share_partition_manager,
            )

            config = share_group.ShareGroupConfig.from_broker_config(self._cfg)
            store = self.runtime.store(SHARE_STATE_TOPIC, config.state_partitions,
                                       share_coordinator_shard.topic_configs(config.state_segment_bytes))
            self._share = share_group.ShareGroupCoordinator(config, self._cfg, store, self._topics, self._replica_manager,
                                                self._data_dir, now_ms=self._clock)
            # KIP-932: share groups live in __consumer_offsets with the group coordinator's other
            # groups (it replays them on load; the share coordinator writes them)
            group = self._build_group()
            self._share.groups = group.share_groups
            self._share.write = lambda gid, records: group_metadata_manager.write_records(group.store, gid, records)
            self._share.metadata = self._metadata_image()
            if self._cfg.get("process.roles"):
                # a KRaft broker: share partitions on their topic partitions' leaders, their
                # state with the share coordinators (Kafka's SharePartitionManager + DefaultStatePersister)
                spm = share_partition_manager
                self._share.persister = spm.DefaultStatePersister(self._replica_manager.node_id, self._own_endpoint)
                self._share.manager = spm.SharePartitionManager(self._share, self._share.persister,
                                                                self._replica_manager.node_id)
                self._share.state_admin = spm.ShareGroupStateAdmin(self._share.persister, self._share)
                if self.metadata_cache is not None:  # DLQ partitions led by other brokers get a Produce
                    self._share.dlq.sender = spm.DLQSender(self.metadata_cache, self._replica_manager)
            self._start(self._share, SHARE_STATE_TOPIC)
            if self.on_share_built is not None:
                self.on_share_built(self._share)
        return self._share

    def _own_endpoint(self) -> tuple[str, int] | None:
        """This broker's listener as the metadata names it (the share persister asks it FindCoordinator)."""
        me = self._replica_manager.brokers.get(self._replica_manager.node_id)
        return (me.host, me.port) if me is not None else None

    def _start(self, coordinator: GroupCoordinator | TransactionCoordinator | ShareGroupCoordinator,
               topic: str) -> None:
        """Start `coordinator`: its `start()` loads the partitions of `topic` on disk this broker
        leads (on one node, all of them), so they are the runtime's loaded partitions from then on."""
        if self._loop is not None:  # before `start` (tests/coordinator's Stack), the owner starts it
            _run_now(coordinator.start())
            self.runtime.register(topic, coordinator, loaded=coordinator.store.partitions())
            self._started.append(coordinator)

    def _on_loop(self, build: Callable[[], T]) -> T:
        """`build()` here when this thread runs the broker's loop (or the broker has not started);
        from another thread, on the loop, waiting for it."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return build()
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            return build()

        async def on_loop() -> T:
            return build()

        return asyncio.run_coroutine_threadsafe(on_loop(), loop).result()

    # -- leadership (minibroker.coordinator_elections, from ReplicaManager.apply_delta) ------
    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None:
        """This broker leads `topic`-`partition` of a coordinator's internal topic (Kafka:
        GroupCoordinator / TransactionCoordinator / ShareCoordinator onElection). The coordinator
        is built if nothing built it yet (its start loads the partitions this broker leads), then
        the runtime loads the partition. Before `start` nothing is done: `start` builds the
        coordinators whose topic is on disk, and they load what this broker leads."""
        if self._loop is None:
            return
        build = {OFFSETS_TOPIC: self._build_group, TRANSACTION_TOPIC: self._build_txn,
                 SHARE_STATE_TOPIC: self._build_share}.get(topic)
        if build is None:
            return
        build()
        self.runtime.on_election(topic, partition, leader_epoch)

    def on_resignation(self, topic: str, partition: int, leader_epoch: int | None) -> None:
        """This broker no longer leads `topic`-`partition` (Kafka: onResignation): its state is
        unloaded (NOT_COORDINATOR for its keys from now on)."""
        if self._runtime is not None:
            self._runtime.on_resignation(topic, partition, leader_epoch)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Build and load, before the broker serves, the coordinators with state on disk."""
        self._loop = asyncio.get_running_loop()
        for coordinator in self._started_before_serving():
            coordinator()

    def _started_before_serving(self) -> list[Callable[[], object]]:
        out: list[Callable[[], object]] = []
        if self._topics.get(OFFSETS_TOPIC) is not None:
            out.append(self._build_group)
        if self._topics.get(TRANSACTION_TOPIC) is not None:
            out.append(self._build_txn)
        if self._topics.get(SHARE_STATE_TOPIC) is not None or (self._data_dir / SHARE_CONFIGS_FILE).exists():
            out.append(self._build_share)
        return out

    async def load_rest(self) -> None:
        """The background task started when the broker listens: the coordinators nothing has
        built yet, after `LOAD_REST_AFTER_S`, one per turn of the loop, so requests are answered
        in between."""
        await asyncio.sleep(self.LOAD_REST_AFTER_S)
        for build in (self._build_group, self._build_txn, self._build_share):
            await asyncio.sleep(0)
            build()

    async def stop(self) -> None:
        if self.add_partitions_manager is not None:
            await self.add_partitions_manager.close()
        self._loop = None  # one reached while the broker stops is built, not started (no timers left behind)
        for coordinator in reversed(self._started):
            await coordinator.stop()
        if self._txn is not None and self._txn.markers.sender is not None:
            await self._txn.markers.sender.close()
        self._started = []

