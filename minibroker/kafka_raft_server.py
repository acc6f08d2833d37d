"""A KRaft node by its `process.roles` (Kafka: KafkaRaftServer, SharedServer).

`process.roles=controller`: a ControllerServer on the controller listener
(`controller.listener.names`), its metadata log in the data dir. `broker`: the BrokerServer as
always, plus registration and heartbeats with the controller named by `controller.quorum.voters`
(`id@host:port`) or `controller.quorum.bootstrap.servers` (`host:port`), and the metadata log
followed into an image whose changes go to the publishers (`add_publisher`; the server wires the
ReplicaManager there). `broker,controller`: both in one process, the broker talking to its own
controller over the controller listener, as Kafka's combined nodes do. Without `process.roles`
none of this is imported: the node is the single combined broker it always was.

Stopping a broker first runs a controlled shutdown (leadership moves away, bounded by
`controlled.shutdown`-like 30 s), then stops the broker, then the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import minibroker.faults.cluster_kinds  # noqa: F401 - registers the cluster's fault kinds (broker.kill, leader.move...)
import minibroker.faults.network_kinds  # noqa: F401 - registers replica.fetch.cut, controller.cut
from minibroker.config import BrokerConfig
from minibroker.controller.controller_server import ControllerServer
from minibroker.controller.leader_balance import DEFAULT_UNCLEAN_INTERVAL_MS
from minibroker.controller.quorum_controller import ControllerConfig
from minibroker.controller.replication_control import TopicDefaults
from minibroker.faults.control import FaultControlServer, start_fault_control
from minibroker.features import FeatureLevels, kraft_supported
from minibroker.metadata.acl_publisher import AclPublisher
from minibroker.metadata.alter_partition_manager import ControllerAlterPartitionManager
from minibroker.metadata.assignments_manager import AssignmentsManager
from minibroker.metadata.broker_lifecycle_manager import (
    BrokerLifecycleManager,
    ListenerInfo,
    RegistrationRefused,
)
from minibroker.metadata.broker_metadata_publisher import BrokerMetadataPublisher
from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.controller_nodes import ControllerNodeProvider
from minibroker.metadata.delegation_token_forwarding import install_token_forwarding
from minibroker.metadata.delegation_token_publisher import DelegationTokenPublisher, delegation_token_settings
from minibroker.metadata.forwarding_manager import ForwardingManager
from minibroker.metadata.group_config_publisher import GroupConfigPublisher
from minibroker.metadata.metadata_loader import MetadataLoader, MetadataPublisher
from minibroker.metadata.producer_id_blocks import ControllerProducerIdBlocks
from minibroker.metadata.quota_publisher import QuotaPublisher
from minibroker.metadata.scram_publisher import ScramPublisher
from minibroker.network.socket_server import SocketServer
from minibroker.server import BrokerServer
from minibroker_storage.checkpoint import uuid_from_kafka
from minibroker_storage.meta_properties import MetaPropertiesError, ensure_meta_properties

if TYPE_CHECKING:  # --trace's listener, imported by the CLI only when asked for
    from minibroker.tools.trace import TraceListener

log = logging.getLogger("minibroker.kraft")

CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0
CATCH_UP_LOG_INTERVAL_S = 10.0
UNFENCE_WAIT_S = 30.0
_SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True, slots=True)
class QuorumAddress:
    node_id: int  # -1 when only a bootstrap server is known
    host: str
    port: int


def _report_registration(task: asyncio.Task[None]) -> None:
    # a refused registration (another cluster id, an unsupported metadata.version) ends the task:
    # say why, as Kafka's broker logs it before giving up
    if not task.cancelled() and task.exception() is not None:
        log.error("the broker could not register with the controller: %s", task.exception())


def parse_quorum(config: BrokerConfig) -> list[QuorumAddress]:
    """controller.quorum.voters (id@host:port) or controller.quorum.bootstrap.servers (host:port)."""
    out = []
    for entry in config.get("controller.quorum.voters"):
        node, _, address = entry.partition("@")
        host, _, port = address.rpartition(":")
        out.append(QuorumAddress(int(node), host.strip("[]"), int(port)))
    if not out:
        for entry in config.get("controller.quorum.bootstrap.servers"):
            host, _, port = entry.rpartition(":")
            out.append(QuorumAddress(-1, host.strip("[]"), int(port)))
    return out


def roles(config: BrokerConfig) -> set[str]:
    return {r.strip().lower() for r in config.get("process.roles") if r.strip()}


class KafkaRaftServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.roles = roles(config)
        self.controller: ControllerServer | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self.loader: MetadataLoader | None = None
        # the leader's ISR proposals to the controller: what the ReplicaManager's partitions submit to
        self.alter_partition_manager: ControllerAlterPartitionManager | None = None
        self._publishers: list[MetadataPublisher] = []
        self._registering: asyncio.Task[None] | None = None
        self.forwarding: ForwardingManager | None = None
        self.producer_id_blocks: ControllerProducerIdBlocks | None = None
        # KIP-858: the directory of each replica, to the controller (Kafka: AssignmentsManager)
        self.assignments: AssignmentsManager | None = None

    def add_publisher(self, publisher: MetadataPublisher) -> None:
        """A consumer of every new metadata image (before `start_broker`)."""
        self._publishers.append(publisher)

    async def start_controller(self) -> None:
        if "controller" not in self.roles:
            return
        cfg, data_dir = self.config, Path(self.config.data_dir)
        meta = ensure_meta_properties(data_dir, node_id=cfg.node_id,
                                      cluster_id=cfg.get("cluster.id") if cfg.is_set("cluster.id") else None)
        if not cfg.controller_endpoints:
            raise ValueError("process.roles includes controller, but no listener is named in controller.listener.names")
        endpoint = cfg.controller_endpoints[0]
        voters = tuple(q.node_id for q in parse_quorum(cfg) if q.node_id >= 0) or (cfg.node_id,)
        if voters != (cfg.node_id,):
            raise ValueError(f"minibroker's controller is a single voter; controller.quorum.voters names {voters}")
        controller_config = ControllerConfig(
            node_id=cfg.node_id, cluster_id=meta.cluster_id, voters=voters,
            session_timeout_ms=cfg.get("broker.session.timeout.ms"),
            max_idle_interval_ms=cfg.get("metadata.max.idle.interval.ms"),
            snapshot_max_bytes=cfg.get("metadata.log.max.record.bytes.between.snapshots"),
            snapshot_interval_ms=cfg.get("metadata.log.max.snapshot.interval.ms"),
            retention_bytes=cfg.get("metadata.max.retention.bytes"),
            retention_ms=cfg.get("metadata.max.retention.ms"),
            segment_bytes=cfg.get("metadata.log.segment.bytes"),
            topic_defaults=TopicDefaults(cfg.get("num.partitions"), cfg.get("default.replication.factor"),
                                         cfg.get("unclean.leader.election.enable"), cfg.get("min.insync.replicas")),
            directory_id=uuid_from_kafka(meta.directory_id),
            leader_imbalance_check_interval_ms=(cfg.get("leader.imbalance.check.interval.seconds") * 1000
                                                if cfg.get("auto.leader.rebalance.enable") else None),
            # Kafka's internal key: accepted from the properties, not described (cfg.unknown keeps it)
            unclean_leader_election_interval_ms=int(str(cfg.unknown.get(
                "unclean.leader.election.interval.ms", DEFAULT_UNCLEAN_INTERVAL_MS))),
            delegation_tokens=delegation_token_settings(cfg), properties=cfg)
        self.controller = ControllerServer(data_dir, controller_config, endpoint.host or "0.0.0.0", endpoint.port,
                                           endpoint.listener_name)
        await self.controller.startup()

    def prepare_broker(self, cluster_id: str, log_dirs: Sequence[uuid.UUID] = ()) -> None:
        """Build the broker's side of KRaft (the loader, the lifecycle, the channels to the
        controller); nothing runs until `start_broker`."""
        if "broker" not in self.roles:
            return
        cfg = self.config
        quorum = parse_quorum(cfg)
        if not quorum:
            raise ValueError("process.roles includes broker, but neither controller.quorum.voters nor "
                             "controller.quorum.bootstrap.servers names a controller")
        if self.controller is not None:  # combined: our own controller, on the port it bound
            nodes = ControllerNodeProvider.single(quorum[0].host, self.controller.port)
        else:  # the active one of the quorum, learned from the metadata fetches (several voters: Kafka's)
            nodes = ControllerNodeProvider({q.node_id: (q.host, q.port) for q in quorum if q.node_id >= 0},
                                           [(q.host, q.port) for q in quorum])
        target = quorum[0]

        def channel(client_id: str) -> ControllerChannel:
            return ControllerChannel(target.host, target.port, client_id=client_id, nodes=nodes)

        self.loader = MetadataLoader(channel(f"raft-client-{cfg.node_id}"), node_id=cfg.node_id, cluster_id=cluster_id)
        loader = self.loader
        self.lifecycle = BrokerLifecycleManager(
            channel(f"broker-{cfg.node_id}-heartbeat-channel"),
            node_id=cfg.node_id, cluster_id=cluster_id,
            listeners=[ListenerInfo(e.listener_name, e.host, e.port, _SECURITY_PROTOCOL_IDS[e.security_protocol])
                       for e in cfg.advertised_endpoints],
            features=kraft_supported(),
            metadata_offset=lambda: loader.highest_offset,
            heartbeat_interval_ms=cfg.get("broker.heartbeat.interval.ms"),
            # the directory ids of meta.properties: Kafka's controller refuses a registration
            # without them ("No directories specified in request", metadata.version >= 3.7-IV2)
            log_dirs=log_dirs)
        lifecycle = self.lifecycle
        self.alter_partition_manager = ControllerAlterPartitionManager(
            channel(f"broker-{cfg.node_id}-alter-partition-channel"),
            broker_id=cfg.node_id, broker_epoch=lambda: lifecycle.broker_epoch)
        self.forwarding = ForwardingManager(
            channel(f"broker-{cfg.node_id}-forwarding-channel"),
            loader, lambda: cfg)
        self.producer_id_blocks = ControllerProducerIdBlocks(
            channel(f"broker-{cfg.node_id}-producer-id-channel"),
            broker_id=cfg.node_id, broker_epoch=lambda: lifecycle.broker_epoch)
        self.assignments = AssignmentsManager(
            channel(f"broker-{cfg.node_id}-directory-assignments-channel"),
            broker_id=cfg.node_id, broker_epoch=lambda: lifecycle.broker_epoch, image=lambda: loader.image)

    def wire(self, server: BrokerServer) -> None:
        """The broker's components on the metadata log (Kafka: BrokerServer.startup's KRaft part):
        the BrokerMetadataPublisher, the ReplicaManager's AlterPartition channel, the forwarded
        admin requests and auto-created topics, producer id blocks from the controller."""
        # every directory of log.dirs is registered (Kafka: BrokerRegistrationRequest.LogDirs, KIP-858)
        self.prepare_broker(server.cluster_id, [uuid_from_kafka(ld.directory_id)
                                                for ld in server.log_manager.log_dirs if not ld.offline])
        lifecycle = self.lifecycle
        if lifecycle is not None:
            # KIP-966: registering with the epoch a clean shutdown wrote keeps this broker in the
            # ELR; the next clean shutdown writes the epoch it has then (Kafka: BrokerServer.startup)
            lifecycle.previous_broker_epoch = server.log_manager.broker_epoch_from_clean_shutdown_files()
            server.broker_epoch = lambda: lifecycle.broker_epoch
            # a failed log dir is named in every heartbeat from then on
            server.log_manager.log_dir_failure_listeners.append(
                lambda ld, _partitions: lifecycle.propagate_directory_failure(uuid_from_kafka(ld.directory_id)))
        if self.loader is None or self.forwarding is None or self.producer_id_blocks is None:
            return
        rm = server.replica_manager
        rm.alter_partition_manager = self.alter_partition_manager
        loader = self.loader
        publisher = BrokerMetadataPublisher(
            self.config.node_id, config=lambda: server.dynamic_config.current, topics=server.topics,
            metadata_cache=server.metadata_cache, replica_manager=rm, log_manager=server.log_manager,
            inter_broker_listener=self.config.listener_name,
            caught_up=lambda: loader.highest_offset >= loader.high_watermark - 1,
            dynamic_config=server.dynamic_config, assignments=self.assignments)
        self.add_publisher(publisher)
        if server.services.log_dirs is not None:  # a replica moved by AlterReplicaLogDirs (KIP-858)
            server.services.log_dirs.replica_moved = publisher.replica_moved
        # ApiVersions: the levels registered with the controller, the metadata log's finalized ones
        server.services.feature_levels = lambda: FeatureLevels(kraft_supported(), dict(loader.image.features),
                                                               max(loader.image.offset, 0))
        self.add_publisher(AclPublisher(server.authorizer))
        self.add_publisher(ScramPublisher(server.scram_credentials))
        if server.delegation_tokens is not None:  # the tokens of the image (Kafka: DelegationTokenPublisher)
            self.add_publisher(DelegationTokenPublisher(server.delegation_tokens))
            install_token_forwarding(server.handlers, self.forwarding)
        self.add_publisher(QuotaPublisher(server.quota_store))
        self.add_publisher(GroupConfigPublisher(server.consumer_group_configs, server.coordinators))
        self.forwarding.install(server.handlers, server.services)
        server.topics.remote_creator = self.forwarding
        server.producer_ids.block_source = self.producer_id_blocks
        server.controller_channels = self.controller_channels()  # what a controller.cut cuts (minibroker.faults)

    def controller_channels(self) -> list[ControllerChannel]:
        """Every channel of this broker to the controller (Kafka's NodeToControllerChannelManagers)."""
        out = [self.loader.channel if self.loader is not None else None,
               self.lifecycle.channel if self.lifecycle is not None else None,
               self.alter_partition_manager.channel if self.alter_partition_manager is not None else None,
               self.forwarding.channel if self.forwarding is not None else None,
               self.producer_id_blocks.channel if self.producer_id_blocks is not None else None,
               self.assignments.channel if self.assignments is not None else None]
        return [c for c in out if isinstance(c, ControllerChannel)]

    async def wire_and_catch_up(self, server: BrokerServer) -> None:
        """`wire`, `start_broker`, then wait for the initial catch-up with the metadata log and (at
        most UNFENCE_WAIT_S) for the controller to unfence this broker: it serves clients once its
        image has every topic and names it (Kafka: BrokerServer.startup waits for the lifecycle
        manager's initial catch-up before enabling request processing, then for the unfencing)."""
        self.wire(server)
        await self.start_broker()
        if self.loader is not None:
            waited = 0.0
            while not self.loader.caught_up.is_set():
                self._raise_if_refused()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.loader.caught_up.wait(), CATCH_UP_LOG_INTERVAL_S)
                waited += CATCH_UP_LOG_INTERVAL_S
                if not self.loader.caught_up.is_set():
                    log.info("broker %d: waiting for the metadata log (%.0f s)", self.config.node_id, waited)
            # and, bounded, for the controller to unfence it (its Metadata would list no broker)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + UNFENCE_WAIT_S
            while not self._unfenced() and loop.time() < deadline:
                await asyncio.sleep(0.05)

    def _raise_if_refused(self) -> None:
        # a controller that refused the registration (another cluster's id) will never let this
        # broker catch up: a start-up error said in one line, where Kafka's broker keeps retrying
        task = self._registering
        exc = task.exception() if task is not None and task.done() and not task.cancelled() else None
        if isinstance(exc, RegistrationRefused):
            raise exc

    def _unfenced(self) -> bool:
        assert self.loader is not None
        me = self.loader.image.brokers.get(self.config.node_id)
        return me is not None and not me.fenced

    async def start_broker(self) -> None:
        """Register with the controller and follow the metadata log (in the background: the broker
        keeps retrying until a controller answers, as Kafka's does)."""
        if self.loader is None or self.lifecycle is None:
            return
        for p in self._publishers:
            self.loader.add_publisher(p)
        self.loader.start()
        self._registering = asyncio.create_task(self._register(), name="broker-registration")
        self._registering.add_done_callback(_report_registration)

    async def _register(self) -> None:
        assert self.lifecycle is not None
        await self.lifecycle.start()
        if self.producer_id_blocks is not None:
            self.producer_id_blocks.prefetch()

    async def shutdown(self) -> None:
        if self.lifecycle is not None:
            if self.lifecycle.broker_epoch >= 0:
                done = await self.lifecycle.controlled_shutdown(CONTROLLED_SHUTDOWN_TIMEOUT_S)
                log.info("controlled shutdown %s", "completed" if done else "timed out")
            if self._registering is not None:
                self._registering.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._registering
            await self.lifecycle.stop()
        if self.loader is not None:
            await self.loader.stop()
        if self.alter_partition_manager is not None:
            await self.alter_partition_manager.close()
        if self.forwarding is not None:
            await self.forwarding.channel.close()
        if self.producer_id_blocks is not None:
            await self.producer_id_blocks.close()
        if self.assignments is not None:
            await self.assignments.close()

    async def shutdown_controller(self) -> None:
        if self.controller is not None:
            await self.controller.shutdown()


async def serve_kraft(config: BrokerConfig, stop: asyncio.Event | None = None,
                      tracer: TraceListener | None = None) -> int:
    """A node with Kafka's process.roles: controller, broker or both (minibroker.kafka_raft_server).
    `stop`: set by SIGTERM/SIGINT from the process's first moment (minibroker.cli.serve); a signal
    that came while the node started stops it once started (one made here would miss it).
    `tracer`: --trace's listener, on the broker's requests once it serves (a controller alone has none)."""
    node = KafkaRaftServer(config)
    server = None
    control: FaultControlServer | None = None
    try:
        await node.start_controller()
        if "broker" in node.roles:
            socket_server = SocketServer(config)
            socket_server.bind()
            server = BrokerServer(config, socket_server=socket_server)

            async def built(s: BrokerServer) -> None:  # before any request is served
                nonlocal control  # the fault control endpoint: up before the broker serves (issue 32)
                control = await start_fault_control(s, config.data_dir)  # None unless the cluster has it
                await node.wire_and_catch_up(s)
            server.on_built = built
            await server.startup()
            if tracer is not None:
                server.trace_listeners.add(tracer)
    except (MetaPropertiesError, ValueError) as e:
        print(f"minibroker: {e}", file=sys.stderr, flush=True)
        await node.shutdown_controller()
        return 1
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    logging.getLogger("minibroker").info("shutting down")
    if control is not None:
        await control.close()
    await node.shutdown()  # the controlled shutdown first: leadership moves while the broker still serves
    if server is not None:
        await server.shutdown()
    await node.shutdown_controller()
    return 0
