"""CreateTopics v0-7, DeleteTopics v0-6, CreatePartitions v0-3.

Behavior:
- CreateTopics validates as Kafka's controller does: the name (legal characters, length <= 249,
  not "." or "..", no collision of '.' and '_' with an existing topic), the partition count
  (-1 = num.partitions), the replication factor (-1 = default; anything but 1 cannot be met by
  one broker), manual assignments (only this broker), and every config against the topic config
  model (INVALID_CONFIG with Kafka's message). `validate_only` checks everything and creates
  nothing. From v5 the response carries the topic's resulting configs.
- DeleteTopics deletes by name (v0-5) or by name or id (v6), removing the partition directories;
  internal topics cannot be deleted by clients.
- CreatePartitions only grows a topic (INVALID_PARTITIONS otherwise); new partitions start empty.
"""

from __future__ import annotations

import asyncio
import collections
import uuid
from typing import TYPE_CHECKING

from minibroker import controller_limits
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker_protocol.apis import create_partitions, create_topics, delete_topics
from minibroker_protocol.errors import ErrorCode, KafkaError, error_name
from minibroker_protocol.schema import ZERO_UUID

if TYPE_CHECKING:
    from minibroker.config.definitions import ConfigValue
    from minibroker.topics import Topic

CT = create_topics.RESPONSE
DT = delete_topics.RESPONSE
CP = create_partitions.RESPONSE


def _fail(result: create_topics.CreateTopicsResponse.CreatableTopicResult
          | create_partitions.CreatePartitionsResponse.CreatePartitionsTopicResult, e: KafkaError) -> None:
    result.error_code = e.code
    result.error_message = e.message or error_name(e.code)


@handles(create_topics.API, "0-7")
async def handle_create_topics(ctx: RequestContext, req: create_topics.CreateTopicsRequest) -> create_topics.CreateTopicsResponse:
    services = ctx.services
    results = []
    # A name listed twice is answered once, with INVALID_REQUEST, and neither entry is created
    # (Kafka: ControllerApis.createTopics).
    counts = collections.Counter(t.name for t in req.topics)
    answered: set[str] = set()
    # The topics of one request are created concurrently: each partition's directory costs a few
    # fsyncs on an executor thread, and one after another 1,000 topics took 14 ms each where
    # Kafka answers in 3 (bench/growth.py, issue 22); together the file system batches them.
    creating: list[tuple[create_topics.CreateTopicsResponse.CreatableTopicResult, asyncio.Future[Topic]]] = []
    # Kafka's per-request bounds (minibroker.controller_limits), over the topics that reach its
    # controller: neither duplicated nor refused for authorization
    sent = [t for t in req.topics if counts[t.name] == 1 and authz.may_create_topic(ctx, t.name)]
    too_many = controller_limits.partitions_refusal(controller_limits.requested_partitions(
        (len(t.assignments) if t.assignments else t.num_partitions for t in sent),
        services.config.get_int("num.partitions")))
    sent_results: list[create_topics.CreateTopicsResponse.CreatableTopicResult] = []
    valid: list[tuple[create_topics.CreateTopicsResponse.CreatableTopicResult, str, int, dict[str, ConfigValue], int]] = []
    for t in req.topics:
        if t.name in answered:
            continue
        result = CT.CreatableTopicResult(name=t.name, topic_id=ZERO_UUID, error_code=0, error_message=None,
                                         num_partitions=-1, replication_factor=-1, configs=None)
        results.append(result)
        try:
            if counts[t.name] > 1:
                answered.add(t.name)
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            if not authz.may_create_topic(ctx, t.name):  # CREATE on the cluster or the topic
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            sent_results.append(result)
            if too_many is not None:
                raise too_many
            num_partitions = t.num_partitions
            replication = t.replication_factor
            if t.assignments:
                if num_partitions != -1 or replication != -1:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Both numPartitions or replicationFactor and replicasAssignments were set.")
                for a in t.assignments:
                    if list(a.broker_ids) != [services.node_id]:
                        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                         f"Partition {a.partition_index} can only be assigned to broker "
                                         f"{services.node_id}")
                num_partitions, replication = len(t.assignments), 1
            if num_partitions == -1:
                num_partitions = services.config.get("num.partitions")
            if replication == -1:
                replication = services.config.get("default.replication.factor")
            configs = {c.name: c.value for c in t.configs}
            overrides = services.topics.check_new_topic(t.name, num_partitions, replication, configs)
            result.num_partitions = num_partitions
            result.replication_factor = replication
            valid.append((result, t.name, num_partitions, overrides, len(configs)))
            if req.validate_only:
                # Kafka's controller draws the id before it knows the request only validates
                # (ReplicationControlManager.createTopic), so a validate_only answer carries one too.
                result.topic_id = uuid.uuid4()
            if ctx.version >= 5:
                result.configs = [
                    CT.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                             config_source=e.source, is_sensitive=e.sensitive)
                    # through the dynamic layers, so the sources are DescribeConfigs' (cluster defaults)
                    for e in services.dynamic_config.describe_topic(services.config, overrides)
                ]
        except KafkaError as e:
            _fail(result, e)
            if ctx.version >= 5:
                result.configs = []  # Kafka answers a failed topic with an empty list, not null
    # the records Kafka's controller would write, then what this node's descriptors and disk can take:
    # refused before anything is made, never half done
    refusal = controller_limits.records_refusal((n, c) for _, _, n, _, c in valid)
    refused = sent_results if refusal is not None else [r for r, *_ in valid]
    refusal = refusal or controller_limits.headroom_refusal(services.config.data_dir, sum(n for _, _, n, _, _ in valid))
    if refusal is not None:
        for result in refused:
            _fail(result, refusal)
            result.topic_id, result.num_partitions, result.replication_factor = ZERO_UUID, -1, -1
            result.configs = [] if ctx.version >= 5 else None
        valid = []
    if not req.validate_only:
        creating = [(result, asyncio.ensure_future(services.topics.create_async(name, n, overrides)))
                    for result, name, n, overrides, _ in valid]
    for result, made in creating:
        try:
            result.topic_id = (await made).topic_id
        except KafkaError as e:
            _fail(result, e)
            if ctx.version >= 5:
                result.configs = []
    return CT(topics=results)


@handles(delete_topics.API, "0-6")
async def handle_delete_topics(ctx: RequestContext, req: delete_topics.DeleteTopicsRequest
                               ) -> delete_topics.DeleteTopicsResponse:
    services = ctx.services
    # (name, id): v6+ names a topic by either (the other null / zero), older versions by name only
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    results = []
    for name, topic_id in wanted:
        result = DT.DeletableTopicResult(name=name, topic_id=topic_id or ZERO_UUID, error_code=0)
        results.append(result)
        cache = services.metadata_cache
        topic = cache.topic(name) if name is not None else cache.topic_by_id(topic_id)
        if authz.topic_denied(ctx, name or (topic.name if topic else None), authz.Op.DELETE):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # DELETE on the topic
            continue
        if topic is None:
            result.error_code = (ErrorCode.UNKNOWN_TOPIC_ID if name is None
                                 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if name is not None:  # Kafka 4.4 adds the error's default message
                result.error_message = "This server does not host this topic-partition."
            continue
        result.name, result.topic_id = topic.name, topic.topic_id
        if topic.is_internal:
            result.error_code = ErrorCode.TOPIC_DELETION_DISABLED
            result.error_message = f"Cannot delete internal topic {topic.name}"
            continue
        if not services.config.get("delete.topic.enable"):
            result.error_code = ErrorCode.TOPIC_DELETION_DISABLED
            continue
        services.topics.delete(topic.name)
    return DT(responses=results)


@handles(create_partitions.API, "0-3")
async def handle_create_partitions(ctx: RequestContext, req: create_partitions.CreatePartitionsRequest) -> create_partitions.CreatePartitionsResponse:
    services = ctx.services
    results = []
    # Kafka's bound on the partitions one request adds, over the topics that reach its controller
    # (minibroker.controller_limits); then what this node's descriptors and disk can take
    allowed = [t for t in req.topics if not authz.topic_denied(ctx, t.name, authz.Op.ALTER)]
    existing = {t.name: len(topic.partitions) for t in allowed
                if (topic := services.metadata_cache.topic(t.name)) is not None}
    additional = sum(max(t.count - existing[t.name], 0) for t in allowed if t.name in existing)
    too_many = controller_limits.partitions_refusal(additional, additional=True)
    no_room = controller_limits.headroom_refusal(services.config.data_dir, additional) if too_many is None else None
    adding = []
    for t in req.topics:
        result = CP.CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        results.append(result)
        if authz.topic_denied(ctx, t.name, authz.Op.ALTER):  # ALTER on the topic, before it is looked up
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # no message (ControllerApis)
            continue
        try:
            if too_many is not None:
                raise too_many
            topic = services.metadata_cache.topic(t.name)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")
            current = len(topic.partitions)
            if t.count < current:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                                 f"Topic currently has {current} partitions, which is higher than the "
                                 f"requested {t.count}.")
            if t.count == current:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
            if t.assignments is not None:
                if len(t.assignments) != t.count - current or any(
                        list(a.broker_ids) != [services.node_id] for a in t.assignments):
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"New partitions can only be assigned to broker {services.node_id}")
            if no_room is not None:
                raise no_room
            if not req.validate_only:
                adding.append((result, asyncio.ensure_future(
                    services.topics.add_partitions_async(services.topics[t.name], t.count))))  # the publisher
        except KafkaError as e:
            _fail(result, e)
    for result, done in adding:
        try:
            await done
        except KafkaError as e:
            _fail(result, e)
    return CP(results=results)
