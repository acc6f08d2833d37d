"""Metadata: v0-13.

Behavior: one broker, which is the controller and the leader and only replica of every partition
(leader epoch 0). Topics are listed with their ids and internal flag. A requested topic that does
not exist is created when the request allows it (v4+) and auto.create.topics.enable is on, with
num.partitions partitions. Kafka answers LEADER_NOT_AVAILABLE the first time, because its
partitions still need leaders elected; ours exist as soon as they are created, so the topic is
returned at once and the client saves a retry. Otherwise UNKNOWN_TOPIC_OR_PARTITION. An illegal name gets INVALID_TOPIC_EXCEPTION.

Version notes: v0 an empty topic list means all topics (v1+: null means all, empty means none);
v1 controller id, rack, internal flag; v2 cluster id; v4 allow_auto_topic_creation; v5 offline
replicas; v7 leader epoch; v8 authorized operations; v9 flexible; v10 topic ids; v12 request by
topic id (name nullable); v13 a top-level error code (KIP-1102: REBOOTSTRAP_REQUIRED tells a client
its bootstrap list is stale; one broker that answers is never stale, so it is always NONE).
"""

from __future__ import annotations

from minibroker import controller_limits
from minibroker.handlers import authorized_ops, authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.metadata.partition_registration import MIGRATING, directory_online
from minibroker.metadata_cache import PartitionImage, TopicImage
from minibroker.services import BrokerServices
from minibroker.topics import INTERNAL_TOPICS, validate_topic_name
from minibroker_protocol.apis import metadata
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import ZERO_UUID

R = metadata.RESPONSE


def topic_metadata(services: BrokerServices, topic: TopicImage, error: int = 0
                   ) -> metadata.MetadataResponse.MetadataResponseTopic:
    parts = [
        R.MetadataResponsePartition(error_code=0 if p.leader_id >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                                    partition_index=p.partition, leader_id=p.leader_id,
                                    leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                                    isr_nodes=list(p.isr), offline_replicas=offline_replicas(services, p))
        for p in sorted(topic.partitions.values(), key=lambda p: p.partition)
    ]
    # a broker without a controller tells its own failed directories; on KRaft the controller's
    # metadata says it (KIP-858: the replica out of leadership and ISR, its directory offline)
    offline = services.log_dirs.offline_partitions \
        if services.log_dirs is not None and not services.metadata_cache.brokers else ()
    for part in parts if offline else ():
        if (topic.name, part.partition_index) in offline:  # its log dir failed (minibroker.log_dirs)
            part.error_code, part.leader_id = ErrorCode.LEADER_NOT_AVAILABLE, -1
            part.offline_replicas = sorted({*part.offline_replicas, services.node_id})
    return R.MetadataResponseTopic(error_code=error, name=topic.name, topic_id=topic.topic_id,
                                   is_internal=topic.is_internal, partitions=parts)


def offline_replicas(services: BrokerServices, p: PartitionImage) -> list[int]:
    """Replicas on brokers that are not registered or fenced, or in a directory their broker no
    longer registers online (KIP-858) (Kafka: KRaftMetadataCache.getOfflineReplicas,
    isReplicaOffline); none on the single broker."""
    brokers = services.metadata_cache.brokers
    if not brokers:
        return []
    dirs = dict(zip(p.replicas, p.directories, strict=True)) if len(p.directories) == len(p.replicas) else {}
    return [r for r in p.replicas if (b := brokers.get(r)) is None or b.fenced
            or not directory_online(dirs.get(r, MIGRATING), b.log_dirs)]


def _brokers(ctx: RequestContext) -> list[metadata.MetadataResponse.MetadataResponseBroker]:
    """This broker alone, or on a KRaft cluster every unfenced broker with its endpoint on the
    listener the request came in on (Kafka: KRaftMetadataCache.getAliveBrokerNodes)."""
    cache = ctx.services.metadata_cache
    if not cache.brokers:
        host, port = ctx.advertised
        return [R.MetadataResponseBroker(node_id=ctx.services.node_id, host=host, port=port)]
    listener = (ctx.connection.listener if ctx.connection is not None else None) or ctx.services.config.listener_name
    return [R.MetadataResponseBroker(node_id=b.node_id, host=e[0], port=e[1], rack=b.rack)
            for b in cache.alive_brokers() if (e := b.endpoints.get(listener)) is not None]


@handles(metadata.API, "0-13")
async def handle_metadata(ctx: RequestContext, req: metadata.MetadataRequest) -> metadata.MetadataResponse:
    services = ctx.services
    v = ctx.version
    topics = []
    if req.topics is None or (v == 0 and not req.topics):
        topics = [topic_metadata(services, t) for t in services.metadata_cache.topics()
                  if not authz.topic_denied(ctx, t.name, authz.Op.DESCRIBE)]  # hidden without DESCRIBE
    else:
        allow_create = req.allow_auto_topic_creation if v >= 4 else True
        if allow_create and controller_limits.auto_create_refused(services, [rt.name for rt in req.topics]):
            allow_create = False  # all or nothing, as Kafka's controller answers the one CreateTopics
        for rt in req.topics:
            name = rt.name
            if name is None:
                topic = services.metadata_cache.topic_by_id(rt.topic_id)
                if topic is None:
                    topics.append(R.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                                          topic_id=rt.topic_id, partitions=[]))
                elif authz.topic_denied(ctx, topic.name, authz.Op.DESCRIBE):
                    # Kafka (KafkaApis.handleTopicMetadataRequest): a topic id is not secret, its
                    # name is: refused with the id echoed and a null name
                    topics.append(R.MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None,
                                                          topic_id=rt.topic_id, partitions=[]))
                else:
                    topics.append(topic_metadata(services, topic))
                continue
            topic = services.metadata_cache.topic(name)
            error: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if authz.topic_denied(ctx, name, authz.Op.DESCRIBE):
                error, topic, may_create = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, False
            else:
                may_create = authz.may_create_topic(ctx, name)  # auto-create needs CREATE (cluster or topic)
            if topic is not None:
                topics.append(topic_metadata(services, topic))
                continue
            if allow_create and not may_create and services.config.get("auto.create.topics.enable"):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif allow_create and may_create:
                try:
                    created = await services.topics.maybe_auto_create(name)
                except KafkaError as e:
                    error = e.code
                else:
                    topic = services.metadata_cache.topic(name) if created is not None else None
                if topic is not None:
                    topics.append(topic_metadata(services, topic))
                    continue
            if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                # Kafka (KafkaApis.getTopicMetadata) tells an illegal name from a missing topic
                # even when it creates nothing.
                try:
                    validate_topic_name(name)
                except KafkaError as e:
                    error = e.code
            # Kafka flags an internal topic's name as internal even when the topic does not exist yet
            topics.append(R.MetadataResponseTopic(error_code=error, name=name, topic_id=ZERO_UUID,
                                                  is_internal=name in INTERNAL_TOPICS, partitions=[]))
    resp = R(
        brokers=_brokers(ctx),
        cluster_id=services.cluster_id,
        controller_id=services.metadata_cache.controller_id,
        topics=topics,
        error_code=ErrorCode.NONE,
    )
    authorized_ops.fill_metadata(ctx, req, resp)  # KIP-430
    return resp
