"""The controller: one voter that turns requests into metadata records (Kafka: QuorumController).

Theory of operation. At `start` the controller opens the metadata log (minibroker.raft), loads the
latest snapshot and replays the log after it into a MetadataImage, starts a new epoch as leader
(a LeaderChange batch) and, on a log that has nothing yet, writes the bootstrap feature levels.
Every operation then runs alone (one lock: Kafka's controller is a single event queue): it reads
the image, decides records and an answer with the managers, appends the records as one batch,
replays them into the next image and waits for the commit (the flush: one voter is the majority)
before answering, so an answer never tells of an uncommitted change. A periodic task fences
brokers whose session expired, writes a NoOpRecord when the log was idle for
`metadata.max.idle.interval.ms` (observers see their fetch offset move, as in Kafka) and writes a
snapshot after `metadata.log.max.record.bytes.between.snapshots` bytes or
`metadata.log.max.snapshot.interval.ms`. Observers (brokers) read committed batches with `read`
and long-poll with `wait_for`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from minibroker.config import BrokerConfig
from minibroker.controller import (
    acl_control,
    configuration_control,
    controller_registration_control,
    directory_assignment,
    producer_id_control,
    quota_control,
    reassignment,
    scram_control,
    topic_changes,
)
from minibroker.controller.cluster_control import (
    ClusterControlManager,
    controlled_shutdown_record,
    fence_record,
    unfence_record,
    unregister_record,
    usable,
)
from minibroker.controller.delegation_token_control import (
    DelegationTokenControlManager,
    DelegationTokenSettings,
)
from minibroker.controller.directory_assignment import ReplicaAcceptor
from minibroker.controller.feature_control import (
    bootstrap_records,
    formatted_bootstrap_records,
    update_features,
)
from minibroker.controller.leader_balance import DEFAULT_UNCLEAN_INTERVAL_MS, PeriodicElections
from minibroker.controller.replication_control import ReplicationControlManager, TopicDefaults
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.raft.metadata_log import MetadataLog, MetadataLogConfig
from minibroker.security.principal_serde import EnvelopePrincipal
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import (
    allocate_producer_ids,
    alter_partition,
    assign_replicas_to_dirs,
    broker_heartbeat,
    broker_registration,
    unregister_broker,
)
from minibroker_protocol.apis.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from minibroker_protocol.apis.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from minibroker_protocol.apis.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from minibroker_protocol.apis.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from minibroker_protocol.apis.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from minibroker_protocol.apis.assign_replicas_to_dirs import (
    AssignReplicasToDirsRequest,
    AssignReplicasToDirsResponse,
)
from minibroker_protocol.apis.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from minibroker_protocol.apis.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from minibroker_protocol.apis.controller_registration import ControllerRegistrationRequest
from minibroker_protocol.apis.create_acls import CreateAclsRequest, CreateAclsResponse
from minibroker_protocol.apis.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from minibroker_protocol.apis.create_topics import CreateTopicsRequest, CreateTopicsResponse
from minibroker_protocol.apis.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from minibroker_protocol.apis.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from minibroker_protocol.apis.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from minibroker_protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from minibroker_protocol.apis.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from minibroker_protocol.apis.unregister_broker import UnregisterBrokerRequest, UnregisterBrokerResponse
from minibroker_protocol.apis.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, write_metadata_record
from minibroker_protocol.schema import ZERO_UUID, Message
from minibroker_storage.log import FetchDataInfo

log = logging.getLogger("minibroker.controller")


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The controller's settings, under Kafka's keys."""

    node_id: int
    cluster_id: str
    voters: tuple[int, ...]
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    max_idle_interval_ms: int = 500  # metadata.max.idle.interval.ms (0: no NoOpRecords)
    snapshot_max_bytes: int = 20 * 1024 * 1024  # metadata.log.max.record.bytes.between.snapshots
    snapshot_interval_ms: int = 60 * 60 * 1000  # metadata.log.max.snapshot.interval.ms
    retention_bytes: int = 100 * 1024 * 1024  # metadata.max.retention.bytes (-1: no limit)
    retention_ms: int = 7 * 24 * 60 * 60 * 1000  # metadata.max.retention.ms (-1: no limit)
    segment_bytes: int = 1024 * 1024 * 1024  # metadata.log.segment.bytes
    topic_defaults: TopicDefaults = field(default_factory=TopicDefaults)
    directory_id: uuid.UUID = ZERO_UUID  # meta.properties' directory.id, as DescribeQuorum reports the voter
    # leader.imbalance.check.interval.seconds in ms; None when auto.leader.rebalance.enable=false
    leader_imbalance_check_interval_ms: int | None = 300_000
    unclean_leader_election_interval_ms: int = DEFAULT_UNCLEAN_INTERVAL_MS  # Kafka's internal key
    delegation_tokens: DelegationTokenSettings = field(default_factory=DelegationTokenSettings)
    # the node's own properties: the bounds GROUP configs are checked against (Kafka's controller
    # validates them with its KafkaConfig); None: Kafka's defaults
    properties: BrokerConfig | None = None


class QuorumController:
    def __init__(self, log_dir: Path, config: ControllerConfig, *, clock: Callable[[], int] = _wall_clock_ms):
        self.log_dir = Path(log_dir)
        self.config = config
        self.clock = clock
        self.image = MetadataImage()
        self.cluster = ClusterControlManager(config.cluster_id, config.session_timeout_ms, clock)
        self.replication = ReplicationControlManager(config.topic_defaults)
        self.elections = PeriodicElections(config.leader_imbalance_check_interval_ms,
                                           config.unclean_leader_election_interval_ms)
        self.delegation_tokens = DelegationTokenControlManager(config.delegation_tokens)
        self.metadata_log: MetadataLog | None = None
        self._lock = asyncio.Lock()
        self._committed = asyncio.Condition()
        self._periodic: asyncio.Task[None] | None = None
        self._shutdown_offsets: dict[int, int] = {}  # broker -> offset its controlled shutdown was committed at
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = 0
        self._last_write_ms = 0
        # this node's ControllerRegistration (KIP-919), set by the ControllerServer once it listens
        self.self_registration: ControllerRegistrationRequest | None = None

    # -- life ------------------------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        log_config = MetadataLogConfig(segment_bytes=self.config.segment_bytes)
        self.metadata_log = ml = await loop.run_in_executor(
            None, lambda: MetadataLog.open(self.log_dir, node_id=self.config.node_id, config=log_config,
                                           now_ms=self.clock))
        self.image = self._load(ml)
        # nothing but the bootstrap snapshot `kafka-storage format` wrote (before our LeaderChange)
        just_formatted = ml.end_offset == 0
        ml.become_leader(self.config.voters)
        if not self.image.features:
            await self._commit(bootstrap_records(self.config.topic_defaults.min_insync_replicas), lock_held=True)
        elif just_formatted and (after_format := formatted_bootstrap_records(
                self.image, self.config.topic_defaults.min_insync_replicas)):
            await self._commit(after_format, lock_held=True)
        else:
            await self._flush()
        self.cluster.start_sessions(self.image)
        self._last_snapshot_ms = self._last_write_ms = self.clock()
        self.elections.start(self.clock())
        self._periodic = asyncio.create_task(self._run_periodic(), name="controller-periodic")
        log.info("controller %d leads epoch %d of %s at offset %d", self.config.node_id, ml.epoch,
                 ml.dir.name, ml.end_offset)

    def _load(self, ml: MetadataLog) -> MetadataImage:
        """The image after the latest snapshot and every log record after it."""
        delta = MetadataDelta(MetadataImage())
        offset, epoch = -1, 0
        snap = ml.latest_snapshot()
        if snap is not None:
            for r in snap.records:
                delta.replay(r)
            offset, epoch = snap.id.end_offset - 1, snap.id.epoch
        for batch in ml.batches(max(offset + 1, ml.start_offset)):
            if not batch.is_control:
                for rec in batch.records:
                    if isinstance(rec, ApiMessageAndVersion):
                        delta.replay(rec)
            offset, epoch = batch.last_offset, batch.leader_epoch
        return delta.apply(offset, epoch)

    async def shutdown(self) -> None:
        if self._periodic is not None:
            self._periodic.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._periodic
        if self.metadata_log is not None:
            async with self._lock:
                await asyncio.get_running_loop().run_in_executor(None, self.metadata_log.close)

    @property
    def log(self) -> MetadataLog:
        assert self.metadata_log is not None, "the controller is not started"
        return self.metadata_log

    # -- writing ---------------------------------------------------------------------------------
    async def _commit(self, records: list[ApiMessageAndVersion], *, lock_held: bool) -> None:
        assert lock_held, "records are written under the controller's lock"
        if not records:
            return
        ml = self.log
        _, last = ml.append(records)
        delta = MetadataDelta(self.image)
        for r in records:
            delta.replay(r)
        self.image = delta.apply(last, ml.epoch)
        self._bytes_since_snapshot += sum(len(write_metadata_record(r)) for r in records)
        self._last_write_ms = self.clock()
        await self._flush()

    async def _flush(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.log.flush)
        async with self._committed:
            self._committed.notify_all()

    def _usable(self, exclude: int | None = None, include: int | None = None) -> ReplicaAcceptor:
        """Who may lead or join an ISR; per partition, only replicas whose directory is online
        (KIP-858; Kafka: LeaderAcceptor)."""
        image = self.image
        return ReplicaAcceptor(image, lambda b: b != exclude and (b == include or usable(image, b)))

    # -- broker lifecycle ------------------------------------------------------------------------
    async def register_broker(self, req: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        async with self._lock:
            old = self.image.brokers.get(req.broker_id)
            # a new incarnation of a broker still unfenced: the old one leaves every ISR first
            pre = (self.replication.broker_unusable(self.image, old.id, self._usable(exclude=old.id))
                   if old is not None and not old.fenced else [])
            try:
                records, epoch = self.cluster.register(self.image, req, self.log.end_offset + len(pre))
            except KafkaError as e:
                # Kafka's QuorumController logs every refused registration with its reason
                log.info("registerBroker: broker %d refused: %s", req.broker_id, e)
                return broker_registration.RESPONSE(error_code=e.code)
            await self._commit([*pre, *records], lock_held=True)
            if old is not None and old.incarnation_id != req.incarnation_id and req.previous_broker_epoch != old.epoch:
                # KIP-966: back from an unclean shutdown, out of every ISR and ELR
                unclean = self.replication.broker_unclean_shutdown(self.image, req.broker_id, self._usable())
                if unclean:
                    await self._commit(unclean, lock_held=True)
            self._shutdown_offsets.pop(req.broker_id, None)
            return broker_registration.RESPONSE(error_code=0, broker_epoch=epoch)

    async def broker_heartbeat(self, req: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        async with self._lock:
            try:
                b = self.cluster.check_epoch(self.image, req.broker_id, req.broker_epoch)
            except KafkaError as e:
                return broker_heartbeat.RESPONSE(error_code=e.code)
            self.cluster.touch(req)
            caught_up = req.current_metadata_offset >= b.epoch
            should_shut_down = False
            if req.want_shut_down:
                if b.fenced:
                    should_shut_down = True
                elif not b.in_controlled_shutdown:
                    await self._commit([controlled_shutdown_record(b), *self.replication.broker_unusable(
                        self.image, b.id, self._usable(exclude=b.id))], lock_held=True)
                    self._shutdown_offsets[b.id] = self.image.offset
                elif (self.replication.leaderships(self.image, b.id) == 0
                      and req.current_metadata_offset >= self._shutdown_offsets.get(b.id, 0)):
                    # every leadership moved and the broker has seen it: it may stop (Kafka: SHUTDOWN_NOW)
                    await self._commit([fence_record(b)], lock_held=True)
                    should_shut_down = True
            elif b.fenced and not req.want_fence and caught_up:
                await self._commit([unfence_record(b), *self.replication.broker_usable(
                    self.image, b.id, self._usable(include=b.id))], lock_held=True)
            elif not b.fenced and req.want_fence:
                await self._commit([fence_record(b), *self.replication.broker_unusable(
                    self.image, b.id, self._usable(exclude=b.id))], lock_held=True)
            if req.offline_log_dirs:
                # KIP-858: the broker's failed directories (Kafka: handleDirectoriesOffline, run on
                # every heartbeat; only directories still registered as online change anything)
                await self._commit(directory_assignment.directories_offline(
                    self.image, self.image.brokers[b.id], req.offline_log_dirs,
                    self.replication.replica_leaves(self.image, b.id, self._usable(exclude=b.id))), lock_held=True)
            now = self.image.brokers[b.id]
            return broker_heartbeat.RESPONSE(error_code=0, is_caught_up=caught_up, is_fenced=now.fenced,
                                             should_shut_down=should_shut_down)

    async def unregister_broker(self, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
        async with self._lock:
            b = self.image.brokers.get(req.broker_id)
            if b is None:
                return unregister_broker.RESPONSE(error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                  error_message=f"Broker ID {req.broker_id} is not currently registered")
            await self._commit([*self.replication.broker_unusable(self.image, b.id, self._usable(exclude=b.id)),
                                unregister_record(b)], lock_held=True)
            self.cluster.heartbeats.pop(b.id, None)
            return unregister_broker.RESPONSE(error_code=0, error_message=None)

    async def fence_expired_brokers(self) -> list[int]:
        """Fence every broker whose session ran out; the ids fenced."""
        async with self._lock:
            fenced = self.cluster.expired(self.image)
            for broker_id in fenced:
                b = self.image.brokers[broker_id]
                log.info("fencing broker %d: no heartbeat for %d ms", broker_id, self.config.session_timeout_ms)
                await self._commit([fence_record(b), *self.replication.broker_unusable(
                    self.image, broker_id, self._usable(exclude=broker_id))], lock_held=True)
            return fenced

    # -- controller registrations (KIP-919) --------------------------------------------------------
    async def register_controller(self, req: ControllerRegistrationRequest) -> None:
        """Raises KafkaError with Kafka's refusal."""
        async with self._lock:
            await self._commit(controller_registration_control.register_controller(self.image, req), lock_held=True)

    async def unregister_controller(self, controller_id: int) -> None:
        """Raises KafkaError with Kafka's refusal."""
        async with self._lock:
            await self._commit(controller_registration_control.unregister_controller(
                self.image, controller_id, self.config.node_id), lock_held=True)

    async def maybe_register_self(self) -> None:
        """Register this controller when the image lacks its incarnation (Kafka:
        ControllerRegistrationManager.maybeSendControllerRegistration on each metadata update)."""
        req = self.self_registration
        if req is not None and controller_registration_control.needs_registration(self.image, req):
            await self.register_controller(req)

    # -- partitions, topics, producer ids --------------------------------------------------------
    async def alter_partition(self, req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
        async with self._lock:
            try:
                self.cluster.check_epoch(self.image, req.broker_id, req.broker_epoch)
            except KafkaError as e:
                return alter_partition.RESPONSE(error_code=e.code, topics=[])
            records, resp = self.replication.alter_partition(self.image, req, version, self._usable())
            await self._commit(records, lock_held=True)
            return resp

    async def assign_replicas_to_dirs(self, req: AssignReplicasToDirsRequest) -> AssignReplicasToDirsResponse:
        """KIP-858: where a broker placed its replicas (Kafka: handleAssignReplicasToDirs)."""
        async with self._lock:
            try:
                self.cluster.check_epoch(self.image, req.broker_id, req.broker_epoch)
                image = self.image
                records, resp = directory_assignment.assign_replicas_to_dirs(
                    image, req, self.replication.directory_assigned(image, req.broker_id, self._usable()),
                    self.replication.replica_leaves(image, req.broker_id, self._usable(exclude=req.broker_id)))
            except KafkaError as e:
                return assign_replicas_to_dirs.RESPONSE(error_code=e.code, directories=[])
            await self._commit(records, lock_held=True)
            return resp

    async def create_topics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        async with self._lock:
            brokers = [b for b in self.image.brokers if usable(self.image, b)]
            records, resp = self.replication.create_topics(self.image, req, brokers)
            await self._commit(records, lock_held=True)
            return resp

    async def delete_topics(self, req: DeleteTopicsRequest, version: int) -> DeleteTopicsResponse:
        async with self._lock:
            records, resp = topic_changes.delete_topics(self.image, req, version)
            await self._commit(records, lock_held=True)
            return resp

    async def create_partitions(self, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
        async with self._lock:
            brokers = [b for b in self.image.brokers if usable(self.image, b)]
            records, resp = topic_changes.create_partitions(self.image, req, brokers, self.replication.rng)
            await self._commit(records, lock_held=True)
            return resp

    async def elect_leaders(self, req: ElectLeadersRequest, version: int) -> ElectLeadersResponse:
        async with self._lock:
            records, resp = topic_changes.elect_leaders(self.image, req, version, self._usable())
            await self._commit(records, lock_held=True)
            return resp

    async def alter_partition_reassignments(self, req: AlterPartitionReassignmentsRequest
                                            ) -> AlterPartitionReassignmentsResponse:
        async with self._lock:
            records, resp = reassignment.alter_partition_reassignments(
                self.image, req, self._usable(), lambda topic: self.replication.unclean(self.image, topic))
            await self._commit(records, lock_held=True)
            return resp

    async def create_acls(self, req: CreateAclsRequest) -> CreateAclsResponse:
        async with self._lock:
            records, resp = acl_control.create_acls_records(self.image, req)
            await self._commit(records, lock_held=True)
            return resp

    async def delete_acls(self, req: DeleteAclsRequest) -> DeleteAclsResponse:
        async with self._lock:
            records, resp = acl_control.delete_acls_records(self.image, req)
            await self._commit(records, lock_held=True)
            return resp

    async def alter_user_scram_credentials(self, req: AlterUserScramCredentialsRequest
                                           ) -> AlterUserScramCredentialsResponse:
        async with self._lock:
            records, resp = scram_control.alter_user_scram_credentials(self.image, req)
            await self._commit(records, lock_held=True)
            return resp

    async def delegation_token_request(self, req: Message, who: EnvelopePrincipal | None) -> Message:
        """Create/Renew/ExpireDelegationToken, forwarded in an Envelope with the client's principal."""
        async with self._lock:
            records, resp = self.delegation_tokens.decide(self.image, who, self.clock(), req)
            await self._commit(records, lock_held=True)
            return resp

    async def alter_client_quotas(self, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
        async with self._lock:
            records, resp = quota_control.alter_client_quotas(self.image, req)
            await self._commit(records, lock_held=True)
            return resp

    def list_partition_reassignments(self, req: ListPartitionReassignmentsRequest
                                     ) -> ListPartitionReassignmentsResponse:
        return reassignment.list_partition_reassignments(self.image, req)

    async def incremental_alter_configs(self, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
        async with self._lock:
            records, resp = configuration_control.incremental_alter_configs(self.image, req, self.config.properties)
            await self._commit(records, lock_held=True)
            return resp

    async def update_features(self, req: UpdateFeaturesRequest, version: int) -> UpdateFeaturesResponse:
        async with self._lock:
            records, resp = update_features(self.image, req, version,
                                            self.config.topic_defaults.min_insync_replicas)
            await self._commit(records, lock_held=True)
            return resp

    async def allocate_producer_ids(self, req: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
        async with self._lock:
            try:
                self.cluster.check_epoch(self.image, req.broker_id, req.broker_epoch)
            except KafkaError as e:
                return allocate_producer_ids.RESPONSE(error_code=e.code)
            record, start, count = producer_id_control.allocate(self.image, req.broker_id, req.broker_epoch)
            await self._commit([record], lock_held=True)
            return allocate_producer_ids.RESPONSE(error_code=0, producer_id_start=start, producer_id_len=count)

    # -- observers -------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int) -> FetchDataInfo:
        """Committed metadata batches from `offset` (an observer's Fetch of __cluster_metadata-0)."""
        return self.log.read(offset, max_bytes)

    async def wait_for(self, offset: int, timeout: float) -> bool:
        """Wait until something at or after `offset` is committed (a Fetch's long poll); False on timeout."""
        async with self._committed:
            try:
                async with asyncio.timeout(timeout):
                    await self._committed.wait_for(lambda: self.log.high_watermark > offset)
            except TimeoutError:
                return False
        return True

    # -- background ------------------------------------------------------------------------------
    async def _run_periodic(self) -> None:
        tick = max(0.05, min(self.config.session_timeout_ms, self.config.max_idle_interval_ms or 1000) / 1000 / 2)
        while True:
            await asyncio.sleep(tick)
            try:
                await self.fence_expired_brokers()
                await self.maybe_register_self()
                async with self._lock:
                    # Kafka: the electPreferred / electUnclean periodic tasks (leader_balance)
                    await self._commit(self.elections.due(self.clock(), self.image, self._usable(),
                                                          lambda t: self.replication.unclean(self.image, t)),
                                       lock_held=True)
                    await self._commit(self.delegation_tokens.sweep_due(self.image, self.clock()), lock_held=True)
                    idle = self.config.max_idle_interval_ms
                    if idle > 0 and self.clock() - self._last_write_ms >= idle:
                        await self._commit([ApiMessageAndVersion(mr.NO_OP_RECORD(), 0)], lock_held=True)
                    await self._maybe_snapshot()
            except Exception:
                log.exception("controller periodic task failed")

    async def _maybe_snapshot(self) -> None:
        now = self.clock()
        if self._bytes_since_snapshot < self.config.snapshot_max_bytes and \
                now - self._last_snapshot_ms < self.config.snapshot_interval_ms:
            return
        ml, image = self.log, self.image
        end = image.offset + 1
        if end <= 0 or end > ml.high_watermark:
            return
        records = image.records()
        stamp = ml.last_append_timestamp
        await asyncio.get_running_loop().run_in_executor(None, lambda: ml.create_snapshot(end, records, stamp))
        self._bytes_since_snapshot, self._last_snapshot_ms = 0, now
        log.info("wrote a metadata snapshot at offset %d", end)
        cfg = self.config
        deleted = await asyncio.get_running_loop().run_in_executor(
            None, lambda: ml.delete_before_snapshot(cfg.retention_bytes, cfg.retention_ms))
        if deleted:
            log.info("deleted %d metadata log segments before the snapshot; the log starts at %d", deleted,
                     ml.start_offset)
