"""DeleteRecords v0-2, DescribeCluster v0-2, DescribeLogDirs v0-5, OffsetForLeaderEpoch v0-4,
DescribeTopicPartitions v0 (KIP-966), AlterReplicaLogDirs v1-2.

Behavior, for one broker that leads every partition and is its whole ISR:
- DeleteRecords moves each partition's log start offset up to the given offset (-1 = the high
  watermark); whole segments below it go (renamed `.deleted`, removed after
  file.delete.delay.ms). The answer is the new low watermark. An offset above the high watermark
  is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" is POLICY_VIOLATION
  (Kafka: Partition.deleteRecordsOnLeader).
- DescribeCluster: this broker, as the only broker and the controller. v1 asks for an endpoint
  type; only brokers (1) are served here (a controller request gets MISMATCHED_ENDPOINT_TYPE).
  v2 (KIP-1073) may ask for fenced brokers too and marks each broker's fencing; this broker is
  the one that answers, so it is registered and unfenced, and the list is the same either way.
- DescribeLogDirs: each directory of log.dirs with every (or each asked) partition's size in bytes
  and offset lag (a current log's is max(HW - LEO, 0), a future log's how far it is behind the
  current one), KAFKA_STORAGE_ERROR for an offline one; v4 adds the disk's total and usable bytes.
- AlterReplicaLogDirs v1-2: moves partitions between this broker's log dirs (minibroker.log_dirs).
- OffsetForLeaderEpoch: the end offset of the requested epoch from the leader-epoch cache
  (the latest epoch ends at the LEO). current_leader_epoch is checked against this broker's
  epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
- DescribeTopicPartitions: topics by name (or all, sorted), partitions paged by
  response_partition_limit with a cursor, as Kafka's DescribeTopicPartitionsRequestHandler does.

Version notes: DeleteRecords v1 is v0, v2 flexible. DescribeCluster v0 is flexible, v1 adds
endpoint_type, v2 include_fenced_brokers / is_fenced. DescribeLogDirs v2 flexible, v3 a top-level
error code, v4 total/usable bytes, v5 is_cordoned
(KIP-1066: a directory no new partition is placed in; minibroker never cordons a directory).
OffsetForLeaderEpoch v1 returns the epoch, v2 adds current_leader_epoch and throttle time, v3
replica_id, v4 flexible. DescribeTopicPartitions has only v0.
"""

from __future__ import annotations

from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.metadata import offline_replicas
from minibroker.handlers.registry import RequestContext, handles
from minibroker.log_dirs import alter_response
from minibroker.metadata_cache import PartitionImage
from minibroker.services import BrokerServices
from minibroker_protocol.apis import (
    alter_replica_log_dirs,
    delete_records,
    describe_cluster,
    describe_log_dirs,
    describe_topic_partitions,
    offset_for_leader_epoch,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

DR = delete_records.RESPONSE
DCL = describe_cluster.RESPONSE
DLD = describe_log_dirs.RESPONSE
OLE = offset_for_leader_epoch.RESPONSE
DTP = describe_topic_partitions.RESPONSE

_NO_OPERATIONS = authorized_ops.OMITTED  # KIP-430: not asked for, or refused
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2


@handles(delete_records.API, "0-2")
async def handle_delete_records(ctx: RequestContext, req: delete_records.DeleteRecordsRequest) -> delete_records.DeleteRecordsResponse:
    services = ctx.services
    topics = []
    undeletable = authz.denied_topics(ctx, (t.name for t in req.topics), authz.Op.DELETE)  # DELETE on the topic
    for t in req.topics:
        parts = []
        for p in t.partitions:
            result = DR.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                     error_code=0)
            parts.append(result)
            try:
                if t.name in undeletable:
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                result.low_watermark = await services.replica_manager.delete_records_and_wait(
                    t.name, p.partition_index, p.offset, req.timeout_ms)
            except KafkaError as e:
                result.error_code = e.code
        topics.append(DR.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return DR(topics=topics)


@handles(describe_cluster.API, "0-2")
async def handle_describe_cluster(ctx: RequestContext, req: describe_cluster.DescribeClusterRequest) -> describe_cluster.DescribeClusterResponse:
    services = ctx.services
    endpoint_type = req.endpoint_type if ctx.version >= 1 else BROKER_ENDPOINT
    host, port = ctx.advertised
    brokers = [DCL.DescribeClusterBroker(broker_id=services.node_id, host=host, port=port, rack=None, is_fenced=False)]
    cache = services.metadata_cache
    if cache.brokers:  # a KRaft broker: every registered one (fenced ones with v2's include_fenced_brokers)
        listener = (ctx.connection.listener if ctx.connection is not None else None) or services.config.listener_name
        brokers = [DCL.DescribeClusterBroker(broker_id=b.node_id, host=e[0], port=e[1], rack=b.rack, is_fenced=b.fenced)
                   for _, b in sorted(cache.brokers.items())
                   if (e := b.endpoints.get(listener)) is not None
                   and (not b.fenced or (ctx.version >= 2 and req.include_fenced_brokers))]
    resp = DCL(error_code=0, error_message=None, endpoint_type=BROKER_ENDPOINT, cluster_id=services.cluster_id,
               controller_id=cache.controller_id, brokers=brokers,
               cluster_authorized_operations=(authorized_ops.cluster(ctx) if req.include_cluster_authorized_operations
                                              else _NO_OPERATIONS))
    if endpoint_type != BROKER_ENDPOINT:
        resp.error_code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        resp.error_message = ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
                              "type CONTROLLER")
        resp.brokers = []
        resp.cluster_id = ""
        resp.controller_id = -1
    return resp


@handles(describe_log_dirs.API, "0-5")
async def handle_describe_log_dirs(ctx: RequestContext, req: describe_log_dirs.DescribeLogDirsRequest) -> describe_log_dirs.DescribeLogDirsResponse:
    services = ctx.services
    if code := authz.cluster_denied(ctx, authz.Op.DESCRIBE):  # DESCRIBE on the cluster (KafkaApis)
        return DLD(error_code=code, results=[])
    if req.topics is None:
        wanted: dict[str, set[int]] | None = None
    else:
        wanted = {}
        for t in req.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    assert services.log_dirs is not None
    return DLD(error_code=0, results=services.log_dirs.describe(wanted, with_space=ctx.version >= 4))


@handles(alter_replica_log_dirs.API, "1-2")
async def handle_alter_replica_log_dirs(ctx: RequestContext, req: alter_replica_log_dirs.AlterReplicaLogDirsRequest) -> alter_replica_log_dirs.AlterReplicaLogDirsResponse:
    """ALTER on the cluster (KafkaApis.handleAlterReplicaLogDirsRequest), then each partition's
    move (minibroker.log_dirs). v0 is gone from Kafka 4 (KIP-896); v2 is flexible."""
    services = ctx.services
    if authz.cluster_denied(ctx, authz.Op.ALTER):
        return alter_response({(t.name, p): ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                               for d in req.dirs for t in d.topics for p in t.partitions})
    assert services.log_dirs is not None
    return alter_response(services.log_dirs.alter(req.dirs))


@handles(offset_for_leader_epoch.API, "0-4")
async def handle_offset_for_leader_epoch(ctx: RequestContext, req: offset_for_leader_epoch.OffsetForLeaderEpochRequest) -> offset_for_leader_epoch.OffsetForLeaderEpochResponse:
    services = ctx.services
    topics = []
    # KIP-320: CLUSTER_ACTION (a follower) or DESCRIBE on the topic (a consumer; KafkaApis)
    hidden = (authz.denied_topics(ctx, (t.topic for t in req.topics), authz.Op.DESCRIBE)
              if authz.cluster_denied(ctx, authz.Op.CLUSTER_ACTION) else set())
    for t in req.topics:
        parts = []
        for p in t.partitions:
            result = OLE.EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=-1, end_offset=-1)
            parts.append(result)
            if t.topic in hidden:
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            part = services.replica_manager.get_partition(t.topic, p.partition)
            if part is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            requested_current = p.current_leader_epoch if ctx.version >= 2 else -1
            error, epoch, end = part.last_offset_for_leader_epoch(requested_current, p.leader_epoch)
            if error:
                result.error_code = error
                continue
            result.leader_epoch, result.end_offset = epoch, end
        topics.append(OLE.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return OLE(topics=topics)


@handles(describe_topic_partitions.API, "0")
async def handle_describe_topic_partitions(ctx: RequestContext, req: describe_topic_partitions.DescribeTopicPartitionsRequest) -> describe_topic_partitions.DescribeTopicPartitionsResponse:
    services = ctx.services
    names = sorted({t.name for t in req.topics}) if req.topics else sorted(services.metadata_cache.topic_names())
    cursor = req.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    # DESCRIBE on each topic: the others are left out of an all-topics answer, and a named one is
    # TOPIC_AUTHORIZATION_FAILED after the rest (DescribeTopicPartitionsRequestHandler)
    hidden = authz.denied_topics(ctx, names, authz.Op.DESCRIBE)
    names = [n for n in names if n not in hidden]
    refused = [DTP.DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, topic_id=ZERO_UUID, is_internal=False, partitions=[],
        topic_authorized_operations=_NO_OPERATIONS) for n in sorted(hidden)] if req.topics else []
    budget = max(1, req.response_partition_limit)
    out = []
    next_cursor = None
    for name in names:
        topic = services.metadata_cache.topic(name)
        if topic is None:
            if cursor is not None and name == cursor.topic_name:
                continue
            out.append(DTP.DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID, is_internal=False,
                partitions=[], topic_authorized_operations=authorized_ops.topic(ctx, name)))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if budget <= 0:
            next_cursor = DTP.Cursor(topic_name=name, partition_index=start)
            break
        ids = [p for p in sorted(topic.partitions) if p >= start]
        take, rest = ids[:budget], ids[budget:]
        budget -= len(take)
        parts = [_describe_partition(services, name, topic.partitions[p]) for p in take]
        out.append(DTP.DescribeTopicPartitionsResponseTopic(
            error_code=0, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal, partitions=parts,
            topic_authorized_operations=authorized_ops.topic(ctx, name)))
        if rest:
            next_cursor = DTP.Cursor(topic_name=name, partition_index=rest[0])
            break
    return DTP(topics=out + refused, next_cursor=next_cursor)



def _describe_partition(services: BrokerServices, name: str, image: PartitionImage
                        ) -> describe_topic_partitions.DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition:
    """A partition's leadership from the metadata; its leader epoch as the partition's log last
    recorded one (this broker has led every partition since its log began)."""
    part = services.replica_manager.get_partition(name, image.partition)
    epoch = part.latest_log_epoch() if part is not None and not part.from_metadata else image.leader_epoch
    if services.log_dirs is not None and not services.metadata_cache.brokers \
            and (name, image.partition) in services.log_dirs.offline_partitions:
        # its log dir failed (minibroker.log_dirs): offline here, as Kafka's controller would report it
        return DTP.DescribeTopicPartitionsResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=image.partition, leader_id=-1,
            leader_epoch=epoch, replica_nodes=list(image.replicas), isr_nodes=list(image.isr),
            eligible_leader_replicas=list(image.elr), last_known_elr=list(image.last_known_elr),
            offline_replicas=[services.node_id])
    return DTP.DescribeTopicPartitionsResponsePartition(
        error_code=0 if image.leader_id >= 0 else ErrorCode.LEADER_NOT_AVAILABLE, partition_index=image.partition, leader_id=image.leader_id, leader_epoch=epoch,
        replica_nodes=list(image.replicas), isr_nodes=list(image.isr), eligible_leader_replicas=list(image.elr),
        last_known_elr=list(image.last_known_elr), offline_replicas=offline_replicas(services, image))
