"""The requests a controller answers on its listener (Kafka: ControllerApis).

ApiVersions v0-4 (the APIs below, nothing else: a broker's NodeToControllerChannelManager picks its
versions from it) / BrokerRegistration v0-4 / BrokerHeartbeat v0-2 / UnregisterBroker v0 /
ControllerRegistration v0 and UnregisterController v0 (KIP-919: minibroker.controller.
controller_registration_control) /
AlterPartition v2-3 / AssignReplicasToDirs v0 (KIP-858: minibroker.controller.directory_assignment) /
AllocateProducerIds v0 / CreateTopics v2-7, DeleteTopics v0-6, CreatePartitions
v0-3, ElectLeaders v0-2, IncrementalAlterConfigs v0-1, UpdateFeatures v0-2 (what Kafka 4 brokers forward) /
Create/Renew/ExpireDelegationToken v1-3/v1-2/v1-2 (answered inside an Envelope only: they need the
client's principal, minibroker.controller.delegation_token_control) /
Fetch v13-18 of `__cluster_metadata-0` only (KRaft observers: the brokers; one behind the log start
is sent the latest snapshot's id) / FetchSnapshot v0-1 (that snapshot, a slice at a time) / Envelope v0 (KIP-590:
what a Kafka 4 broker forwards, CreateTopics among them, wrapped with the client's principal) /
DescribeQuorum v0-2 and DescribeCluster v1-2 with the controller endpoint type (what
`kafka-metadata-quorum --bootstrap-controller` asks): the registered controllers (the image's
RegisterControllerRecords) with their endpoint on this listener.

Behavior: every answer comes from minibroker.controller.quorum_controller after its records are
committed. Fetch long-polls up to `max_wait_ms` for records past the fetch offset and answers with
the committed batches (high watermark, log start, the leader and its epoch in `current_leader`);
a topic other than the metadata one gets UNKNOWN_TOPIC_ID, a fetch offset past the log end
OFFSET_OUT_OF_RANGE.

DescribeQuorum: this node the only voter (its log end offset, now as its fetch and caught-up
times), every node that fetched the metadata log an observer with the offset it last fetched
from, the time of that fetch and the last time it fetched from the high watermark.

Envelope: the inner request is answered as if it came alone, its answer wrapped back; the
principal is not checked (the controller listener has no authorizer here) but read
(DefaultPrincipalData) for the delegation-token requests, which answer for it; an inner request the
controller does not serve, or a principal that does not decode, gets INVALID_REQUEST.

Version notes: the records are read into memory for the answer (this listener serves a handful
of brokers, not clients; the broker listeners keep the sendfile path).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from minibroker.controller.quorum_controller import QuorumController
from minibroker.features import FEATURES
from minibroker.raft.metadata_log import METADATA_TOPIC, METADATA_TOPIC_ID
from minibroker.raft.snapshots import SnapshotId, latest_snapshot
from minibroker.security import principal_serde
from minibroker.security.principal_serde import EnvelopePrincipal
from minibroker_protocol.apis import (
    allocate_producer_ids,
    alter_client_quotas,
    alter_partition,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    api_versions,
    assign_replicas_to_dirs,
    broker_heartbeat,
    broker_registration,
    controller_registration,
    create_acls,
    create_delegation_token,
    create_partitions,
    create_topics,
    delete_acls,
    delete_topics,
    describe_cluster,
    describe_quorum,
    elect_leaders,
    envelope,
    expire_delegation_token,
    fetch,
    fetch_snapshot,
    incremental_alter_configs,
    list_partition_reassignments,
    renew_delegation_token,
    unregister_broker,
    unregister_controller,
    update_features,
)
from minibroker_protocol.apis.fetch import FetchRequest, FetchResponse
from minibroker_protocol.codec import decode
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.headers import decode_request_header, encode_response_frame
from minibroker_protocol.schema import ZERO_UUID, Api, Message, Schema
from minibroker_protocol.types import DecodeError

CONTROLLER_ENDPOINT = 2  # DescribeCluster endpoint_type (KIP-919)
ControllerHandler = Callable[[Message, int], Awaitable[Message]]
# the principal of the Envelope whose inner request is being answered (None: a request that came alone)
ENVELOPE_PRINCIPAL: contextvars.ContextVar[EnvelopePrincipal | None] = contextvars.ContextVar(
    "envelope_principal", default=None)


async def answered(response: Schema[Message], done: Awaitable[None]) -> Message:
    """`response` with no error once `done` completes, or the KafkaError it raised (the
    throttle time / error code / error message responses of APIs 70 and 94). The message of a
    success is "" (Kafka's generated default for these nullable strings, what its controller sends)."""
    try:
        await done
    except KafkaError as e:
        return response(throttle_time_ms=0, error_code=e.code, error_message=e.message or None)
    return response(throttle_time_ms=0, error_code=0, error_message="")


@dataclass(frozen=True, slots=True)
class Served:
    api: Api
    lo: int
    hi: int
    handler: ControllerHandler


@dataclass(slots=True)
class ObserverState:
    """What DescribeQuorum reports of a node fetching the metadata log (Kafka: ReplicaState)."""

    fetch_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int = -1


class ControllerApis:
    def __init__(self, controller: QuorumController, listener: tuple[str, str, int] = ("CONTROLLER", "", 0)):
        self.controller = controller
        self.listener = listener  # (name, host, port) of the controller listener, for DescribeQuorum/DescribeCluster
        self.observers: dict[int, ObserverState] = {}
        c = controller

        async def registration(req: Message, v: int) -> Message:
            assert isinstance(req, broker_registration.BrokerRegistrationRequest)
            return await c.register_broker(req)

        async def controller_registered(req: Message, v: int) -> Message:
            assert isinstance(req, controller_registration.ControllerRegistrationRequest)
            return await answered(controller_registration.RESPONSE, c.register_controller(req))

        async def controller_unregistered(req: Message, v: int) -> Message:
            assert isinstance(req, unregister_controller.UnregisterControllerRequest)
            return await answered(unregister_controller.RESPONSE, c.unregister_controller(req.controller_id))

        async def heartbeat(req: Message, v: int) -> Message:
            assert isinstance(req, broker_heartbeat.BrokerHeartbeatRequest)
            return await c.broker_heartbeat(req)

        async def unregister(req: Message, v: int) -> Message:
            assert isinstance(req, unregister_broker.UnregisterBrokerRequest)
            return await c.unregister_broker(req)

        async def assign_dirs(req: Message, v: int) -> Message:
            assert isinstance(req, assign_replicas_to_dirs.AssignReplicasToDirsRequest)
            return await c.assign_replicas_to_dirs(req)

        async def alter(req: Message, v: int) -> Message:
            assert isinstance(req, alter_partition.AlterPartitionRequest)
            return await c.alter_partition(req, v)

        async def producer_ids(req: Message, v: int) -> Message:
            assert isinstance(req, allocate_producer_ids.AllocateProducerIdsRequest)
            return await c.allocate_producer_ids(req)

        async def topics(req: Message, v: int) -> Message:
            assert isinstance(req, create_topics.CreateTopicsRequest)
            return await c.create_topics(req)

        async def delete(req: Message, v: int) -> Message:
            assert isinstance(req, delete_topics.DeleteTopicsRequest)
            return await c.delete_topics(req, v)

        async def partitions(req: Message, v: int) -> Message:
            assert isinstance(req, create_partitions.CreatePartitionsRequest)
            return await c.create_partitions(req)

        async def elect(req: Message, v: int) -> Message:
            assert isinstance(req, elect_leaders.ElectLeadersRequest)
            return await c.elect_leaders(req, v)

        async def reassign(req: Message, v: int) -> Message:
            assert isinstance(req, alter_partition_reassignments.AlterPartitionReassignmentsRequest)
            return await c.alter_partition_reassignments(req)

        async def acls_created(req: Message, v: int) -> Message:
            assert isinstance(req, create_acls.CreateAclsRequest)
            return await c.create_acls(req)

        async def acls_deleted(req: Message, v: int) -> Message:
            assert isinstance(req, delete_acls.DeleteAclsRequest)
            return await c.delete_acls(req)

        async def scram(req: Message, v: int) -> Message:
            assert isinstance(req, alter_user_scram_credentials.AlterUserScramCredentialsRequest)
            return await c.alter_user_scram_credentials(req)

        async def tokens(req: Message, v: int) -> Message:
            return await c.delegation_token_request(req, ENVELOPE_PRINCIPAL.get())

        async def quotas(req: Message, v: int) -> Message:
            assert isinstance(req, alter_client_quotas.AlterClientQuotasRequest)
            return await c.alter_client_quotas(req)

        async def list_reassignments(req: Message, v: int) -> Message:
            assert isinstance(req, list_partition_reassignments.ListPartitionReassignmentsRequest)
            return c.list_partition_reassignments(req)

        async def configs(req: Message, v: int) -> Message:
            assert isinstance(req, incremental_alter_configs.IncrementalAlterConfigsRequest)
            return await c.incremental_alter_configs(req)

        async def features(req: Message, v: int) -> Message:
            assert isinstance(req, update_features.UpdateFeaturesRequest)
            return await c.update_features(req, v)

        async def snapshot(req: Message, v: int) -> Message:
            assert isinstance(req, fetch_snapshot.FetchSnapshotRequest)
            return self.fetch_snapshot(req)

        async def fetch_metadata(req: Message, v: int) -> Message:
            assert isinstance(req, FetchRequest)
            return await self.fetch(req, v)

        async def quorum(req: Message, v: int) -> Message:
            return self.describe_quorum()

        async def cluster(req: Message, v: int) -> Message:
            assert isinstance(req, describe_cluster.DescribeClusterRequest)
            return self.describe_cluster(req)

        async def versions(req: Message, v: int) -> Message:
            return self.api_versions()

        async def forwarded(req: Message, v: int) -> Message:
            assert isinstance(req, envelope.EnvelopeRequest)
            return await self.envelope(req)

        self.served: dict[int, Served] = {s.api.key: s for s in (
            Served(api_versions.API, 0, 4, versions),
            Served(broker_registration.API, 0, 4, registration),
            Served(broker_heartbeat.API, 0, 2, heartbeat),
            Served(unregister_broker.API, 0, 0, unregister),
            Served(controller_registration.API, 0, 0, controller_registered),
            Served(unregister_controller.API, 0, 0, controller_unregistered),
            Served(alter_partition.API, 2, 3, alter),
            Served(assign_replicas_to_dirs.API, 0, 0, assign_dirs),
            Served(allocate_producer_ids.API, 0, 0, producer_ids),
            Served(create_topics.API, 2, 7, topics),
            Served(fetch.API, 13, 18, fetch_metadata),
            Served(envelope.API, 0, 0, forwarded),
            Served(describe_quorum.API, 0, 2, quorum),
            Served(describe_cluster.API, 1, 2, cluster),
            Served(delete_topics.API, 0, 6, delete),
            Served(create_partitions.API, 0, 3, partitions),
            Served(elect_leaders.API, 0, 2, elect),
            Served(alter_partition_reassignments.API, 0, 1, reassign),
            Served(list_partition_reassignments.API, 0, 0, list_reassignments),
            Served(create_acls.API, 1, 3, acls_created),
            Served(delete_acls.API, 1, 3, acls_deleted),
            Served(alter_user_scram_credentials.API, 0, 0, scram),
            Served(alter_client_quotas.API, 0, 1, quotas),
            Served(create_delegation_token.API, 1, 3, tokens),
            Served(renew_delegation_token.API, 1, 2, tokens),
            Served(expire_delegation_token.API, 1, 2, tokens),
            Served(incremental_alter_configs.API, 0, 1, configs),
            Served(update_features.API, 0, 2, features),
            Served(fetch_snapshot.API, 0, 1, snapshot),
        )}

    def api_versions(self) -> api_versions.ApiVersionsResponse:
        """The served APIs, and (KIP-584) the features this software supports and the levels the
        metadata log finalized, epoch = the offset the image is at (what kafka-features reads)."""
        resp = api_versions.RESPONSE
        image = self.controller.image
        return resp(error_code=0, api_keys=[resp.ApiVersion(api_key=k, min_version=s.lo, max_version=s.hi)
                                            for k, s in sorted(self.served.items())],
                    supported_features=[resp.SupportedFeatureKey(name=f.name, min_version=f.min_version,
                                                                 max_version=f.max_version)
                                        for f in sorted(FEATURES.values(), key=lambda f: f.name)],
                    finalized_features_epoch=image.offset,
                    finalized_features=[resp.FinalizedFeatureKey(name=n, max_version_level=level,
                                                                 min_version_level=level)
                                        for n, level in sorted(image.features.items())])

    async def envelope(self, req: envelope.EnvelopeRequest) -> envelope.EnvelopeResponse:
        inner = bytes(req.request_data)
        try:
            header, pos = decode_request_header(inner)
            served = self.served.get(header.api_key)
            if served is None or served.api.key == envelope.API.key or not served.lo <= header.api_version <= served.hi:
                return envelope.RESPONSE(error_code=ErrorCode.INVALID_REQUEST, response_data=None)
            request = decode(served.api.request, header.api_version, inner, pos)
            who = principal_serde.deserialize(bytes(req.request_principal)) if req.request_principal else None
        except (DecodeError, ValueError, IndexError):
            return envelope.RESPONSE(error_code=ErrorCode.INVALID_REQUEST, response_data=None)
        mark = ENVELOPE_PRINCIPAL.set(who)
        try:
            answer = await served.handler(request, header.api_version)
        finally:
            ENVELOPE_PRINCIPAL.reset(mark)
        chunks = encode_response_frame(served.api, header.api_version, header.correlation_id, answer)
        data = b"".join(c if isinstance(c, bytes | bytearray | memoryview) else c.read_all() for c in chunks)
        return envelope.RESPONSE(error_code=0, response_data=data[4:])  # without the frame's size

    def describe_quorum(self) -> describe_quorum.DescribeQuorumResponse:
        resp = describe_quorum.RESPONSE
        c, ml = self.controller, self.controller.log
        now = c.clock()
        state = resp.ReplicaState
        voter = state(replica_id=c.config.node_id, replica_directory_id=c.config.directory_id,
                      log_end_offset=ml.end_offset,
                      last_fetch_timestamp=now, last_caught_up_timestamp=now)
        observers = [state(replica_id=rid, replica_directory_id=ZERO_UUID, log_end_offset=o.fetch_offset,
                           last_fetch_timestamp=o.last_fetch_ms, last_caught_up_timestamp=o.last_caught_up_ms)
                     for rid, o in sorted(self.observers.items())]
        part = resp.PartitionData(partition_index=0, error_code=0, error_message=None, leader_id=c.config.node_id,
                                  leader_epoch=ml.epoch, high_watermark=ml.high_watermark, current_voters=[voter],
                                  observers=observers)
        name, host, port = self.listener
        return resp(error_code=0, error_message=None,
                    topics=[resp.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
                    nodes=[resp.Node(node_id=c.config.node_id,
                                     listeners=[resp.Listener(name=name, host=host, port=port)])])

    def describe_cluster(self, req: describe_cluster.DescribeClusterRequest) -> describe_cluster.DescribeClusterResponse:
        resp = describe_cluster.RESPONSE
        c = self.controller
        if req.endpoint_type != CONTROLLER_ENDPOINT:
            return resp(error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, error_message="The request was sent to an "
                        "endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER", cluster_id="",
                        brokers=[], endpoint_type=req.endpoint_type)
        # the registered controllers with an endpoint on the listener asked (Kafka:
        # ControllerRegistrationsPublisher.describeClusterControllers)
        name = self.listener[0]
        return resp(error_code=0, endpoint_type=CONTROLLER_ENDPOINT, cluster_id=c.config.cluster_id,
                    controller_id=c.config.node_id,
                    brokers=[resp.DescribeClusterBroker(broker_id=r.id, host=e.host, port=e.port, rack=None)
                             for _, r in sorted(c.image.controllers.items())
                             if (e := r.endpoint(name)) is not None])

    def fetch_snapshot(self, req: fetch_snapshot.FetchSnapshotRequest) -> fetch_snapshot.FetchSnapshotResponse:
        """A slice of a snapshot file from `position` (Kafka: KafkaRaftClient.handleFetchSnapshotRequest)."""
        resp = fetch_snapshot.RESPONSE
        ml = self.controller.log
        out = resp(error_code=0, topics=[])
        if req.cluster_id is not None and req.cluster_id != self.controller.config.cluster_id:
            out.error_code = ErrorCode.INCONSISTENT_CLUSTER_ID
            return out
        for t in req.topics:
            topic = resp.TopicSnapshot(name=t.name, partitions=[])
            out.topics.append(topic)
            for p in t.partitions:
                part = resp.PartitionSnapshot(
                    index=p.partition, error_code=0, size=0, position=p.position, unaligned_records=b"",
                    snapshot_id=resp.SnapshotId(end_offset=p.snapshot_id.end_offset, epoch=p.snapshot_id.epoch))
                part.current_leader = resp.LeaderIdAndEpoch(leader_id=self.controller.config.node_id,
                                                            leader_epoch=ml.epoch)
                topic.partitions.append(part)
                path = ml.dir / SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch).file_name
                if t.name != METADATA_TOPIC or p.partition != 0:
                    part.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not path.exists():
                    part.error_code = ErrorCode.SNAPSHOT_NOT_FOUND
                else:
                    data = path.read_bytes()
                    if not 0 <= p.position <= len(data):
                        part.error_code = ErrorCode.POSITION_OUT_OF_RANGE  # Kafka's error 99
                        continue
                    part.size = len(data)
                    part.unaligned_records = data[p.position:p.position + max(req.max_bytes, 1)]
        return out

    async def fetch(self, req: FetchRequest, version: int = 17) -> FetchResponse:
        resp = fetch.RESPONSE
        out = resp(error_code=0, session_id=0, responses=[])
        if req.cluster_id is not None and req.cluster_id != self.controller.config.cluster_id:
            out.error_code = ErrorCode.INCONSISTENT_CLUSTER_ID  # Kafka's raft leader checks it first
            return out
        ml = self.controller.log
        for t in req.topics:
            topic = resp.FetchableTopicResponse(topic_id=t.topic_id, partitions=[])
            out.responses.append(topic)
            for p in t.partitions:
                part = resp.PartitionData(partition_index=p.partition, error_code=0, high_watermark=ml.high_watermark,
                                          log_start_offset=ml.start_offset, records=None)
                part.current_leader = resp.LeaderIdAndEpoch(leader_id=self.controller.config.node_id,
                                                                          leader_epoch=ml.epoch)
                topic.partitions.append(part)
                if t.topic_id != METADATA_TOPIC_ID or p.partition != 0:
                    part.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                if p.fetch_offset >= ml.high_watermark and req.max_wait_ms > 0:
                    await self.controller.wait_for(p.fetch_offset, req.max_wait_ms / 1000)
                replica = req.replica_state.replica_id if version >= 15 else req.replica_id
                if replica >= 0:
                    now = self.controller.clock()
                    seen = self.observers.setdefault(replica, ObserverState(p.fetch_offset, now))
                    seen.fetch_offset, seen.last_fetch_ms = p.fetch_offset, now
                    if p.fetch_offset >= ml.high_watermark:
                        seen.last_caught_up_ms = now
                if p.fetch_offset < ml.start_offset:  # behind the log: the snapshot first (KIP-630)
                    snap = latest_snapshot(ml.dir)
                    if snap is not None:
                        part.snapshot_id = resp.SnapshotId(end_offset=snap.end_offset, epoch=snap.epoch)
                        part.records = b""
                        continue
                try:
                    info = self.controller.read(p.fetch_offset, p.partition_max_bytes)
                except KafkaError as e:
                    part.error_code = e.code
                    continue
                part.high_watermark = ml.high_watermark
                part.records = info.region.read_all() if info.region is not None else b""
        return out
