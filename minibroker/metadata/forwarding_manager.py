"""A KRaft broker's admin requests, sent to the controller (Kafka: ForwardingManager,
AutoTopicCreationManager).

Theory of operation. In KRaft mode a broker decides no metadata change itself: CreateTopics,
DeleteTopics, CreatePartitions, IncrementalAlterConfigs (and AlterConfigs, made incremental against
the image), ElectLeaders and UpdateFeatures (the last
two served by a KRaft broker only for this) are handled by forwarding handlers (`install`) that
send the client's request, decoded, to the controller on a channel of their own, and answer
with the controller's response (the dispatcher encodes it at the client's version). Before
answering, the broker waits until its own metadata image holds everything the controller had
committed when it answered (the controller's high watermark, asked with DescribeQuorum), so a
client's next Metadata on this broker sees the change; the wait is bounded by the request's
timeout. The TopicRegistry's creations (auto-created topics of Metadata, the coordinators'
internal topics) go the same way (`create_topic`, Kafka: AutoTopicCreationManager), with the
internal topics' replication factors (offsets.topic.replication.factor and its siblings).

Kafka forwards the request's bytes in an Envelope with the client's principal and the controller
authorizes it; here the broker makes the controller's checks itself, against the same ACLs (the
metadata log's, minibroker.metadata.forwarded_authorization), and forwards what they allow
plainly. CreateAcls and DeleteAcls are forwarded too: the ACLs are AccessControlEntryRecords of the
metadata log (minibroker.controller.acl_control), so every broker decides on the same rules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from minibroker.config import BrokerConfig, ConfigValue
from minibroker.handlers.registry import Handler, RequestContext, ServedHandlers
from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker.metadata.forwarded_authorization import authorized_forward, config_resource_refusal
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker.services import BrokerServices
from minibroker_protocol.apis import (
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_topics,
    describe_quorum,
    elect_leaders,
    incremental_alter_configs,
    list_partition_reassignments,
    unregister_broker,
    unregister_controller,
    update_features,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import Api, Message, Versions

log = logging.getLogger("minibroker.metadata")

FORWARDED: tuple[Api, ...] = (create_topics.API, delete_topics.API, create_partitions.API,
                              incremental_alter_configs.API, create_acls.API, delete_acls.API,
                              alter_user_scram_credentials.API, alter_client_quotas.API)
# served by Kafka's brokers for forwarding only, at Kafka 4.4's broker versions
# (ListPartitionReassignments too: Kafka's admin client sends it to any broker Metadata names as
# the controller, kafka-topics --describe and kafka-reassign-partitions --execute ask it first)
FORWARDED_ONLY: tuple[tuple[Api, str], ...] = ((elect_leaders.API, "0-2"), (update_features.API, "0-2"),
                                               (alter_partition_reassignments.API, "0-1"),
                                               (list_partition_reassignments.API, "0-0"),
                                               # `kafka-cluster unregister` (KIP-500 brokers forward it)
                                               (unregister_broker.API, "0-0"),
                                               # `kafka-cluster unregister-controller` (KIP-919, Kafka 4.4)
                                               (unregister_controller.API, "0-0"))
METADATA_WAIT_S = 30.0  # the longest a forwarded answer waits for this broker's image to catch up
# an internal topic's replication factor (Kafka: AutoTopicCreationManager.creatableTopic)
INTERNAL_REPLICATION_FACTOR = {"__consumer_offsets": "offsets.topic.replication.factor",
                               "__transaction_state": "transaction.state.log.replication.factor",
                               "__share_group_state": "share.coordinator.state.topic.replication.factor"}


def _config_string(value: ConfigValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


class ForwardingManager:
    def __init__(self, channel: ControllerChannel, loader: MetadataLoader, config: Callable[[], BrokerConfig]):
        self.channel = channel
        self.loader = loader
        self.config = config

    async def forward(self, api: Api, request: Message, timeout_s: float = METADATA_WAIT_S,
                      version: int | None = None) -> Message:
        """The controller's answer to `request`, once this broker's image has what it committed.
        `version`: the client's (the controller is asked at the nearest version it serves)."""
        try:
            response = await self.channel.send(api, request, timeout=timeout_s, near_version=version)
        except ControllerUnavailable as e:
            log.warning("forwarding %s to the controller failed: %s", api.name, e)
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"The controller did not answer: {e}") from None
        await self.wait_for_metadata(timeout_s)
        return response

    async def wait_for_metadata(self, timeout_s: float = METADATA_WAIT_S) -> bool:
        """Wait until this broker's image includes the controller's committed records."""
        try:
            quorum = await self.channel.send(describe_quorum.API, describe_quorum.REQUEST(topics=[
                describe_quorum.REQUEST.TopicData(topic_name="__cluster_metadata", partitions=[
                    describe_quorum.REQUEST.PartitionData(partition_index=0)])]), timeout=timeout_s)
        except ControllerUnavailable:
            return False
        assert isinstance(quorum, describe_quorum.DescribeQuorumResponse)
        if quorum.error_code != ErrorCode.NONE or not quorum.topics or not quorum.topics[0].partitions:
            return False
        high_watermark = quorum.topics[0].partitions[0].high_watermark
        return await self.loader.wait_for_offset(high_watermark - 1, timeout_s)

    async def create_topic(self, name: str, num_partitions: int, overrides: Mapping[str, ConfigValue]) -> None:
        """CreateTopics of one topic through the controller (Kafka: AutoTopicCreationManager); an
        error the controller answered (other than TOPIC_ALREADY_EXISTS) is raised."""
        req = create_topics.REQUEST
        rf_key = INTERNAL_REPLICATION_FACTOR.get(name)
        rf = int(self.config().get(rf_key)) if rf_key is not None else -1
        msg = req(topics=[req.CreatableTopic(
            name=name, num_partitions=num_partitions, replication_factor=rf, assignments=[],
            configs=[req.CreatableTopicConfig(name=k, value=_config_string(v)) for k, v in overrides.items()])],
            timeout_ms=int(METADATA_WAIT_S * 1000), validate_only=False)
        resp = await self.forward(create_topics.API, msg)
        assert isinstance(resp, create_topics.CreateTopicsResponse)
        (result,) = resp.topics
        if result.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            log.warning("Auto topic creation failed for %s with error '%s': %s", name,
                        ErrorCode(result.error_code).name, result.error_message)
            raise KafkaError(result.error_code, result.error_message or "")

    def handler(self, api: Api, versions: Versions) -> Handler:
        """The broker's handler of `api`, forwarding to the controller."""
        async def forwarded(ctx: RequestContext, request: Message) -> Message:
            timeout_ms = getattr(request, "timeout_ms", None)
            timeout_s = METADATA_WAIT_S if not timeout_ms or timeout_ms <= 0 else min(timeout_ms / 1000 + 1,
                                                                                       METADATA_WAIT_S)
            # a task of its own: the request's coroutine is not one (asyncio.timeout needs a task),
            # and a client that goes away does not cut the controller's exchange in half
            async def send(allowed: Message) -> Message:
                return await asyncio.ensure_future(self.forward(api, allowed, timeout_s, ctx.version))
            return await authorized_forward(ctx, api.key, request, send)
        return Handler(api, versions, forwarded)

    def legacy_alter_configs(self, versions: Versions) -> Handler:
        """AlterConfigs (the whole config of a resource) as the IncrementalAlterConfigs our
        controller serves: SET for each key given, DELETE for each key the image holds that is not
        (Kafka's controller serves AlterConfigs itself, with the same outcome)."""
        inc = incremental_alter_configs.REQUEST
        SET, DELETE = 0, 1

        async def alter(ctx: RequestContext, request: alter_configs.AlterConfigsRequest) -> Message:
            configs = self.loader.image.configs
            R = alter_configs.RESPONSE
            refusals = [config_resource_refusal(ctx, r.resource_type, r.resource_name) for r in request.resources]
            resources = []
            for r, refused in zip(request.resources, refusals, strict=True):
                if refused is not None:
                    continue
                given = {c.name: c.value for c in r.configs}
                ops = [inc.AlterableConfig(name=k, config_operation=SET if v is not None else DELETE, value=v)
                       for k, v in given.items()]
                ops += [inc.AlterableConfig(name=k, config_operation=DELETE, value=None)
                        for k in configs.get((r.resource_type, r.resource_name), {}) if k not in given]
                resources.append(inc.AlterConfigsResource(resource_type=r.resource_type,
                                                          resource_name=r.resource_name, configs=ops))
            answered = []
            if resources:
                answer = await asyncio.ensure_future(self.forward(incremental_alter_configs.API, inc(
                    resources=resources, validate_only=request.validate_only)))
                assert isinstance(answer, incremental_alter_configs.IncrementalAlterConfigsResponse)
                answered = answer.responses
            it = iter(answered)
            out = []
            for r, refused in zip(request.resources, refusals, strict=True):
                if refused is not None:  # ALTER_CONFIGS refused: answered here, in the request's order
                    out.append(R.AlterConfigsResourceResponse(error_code=refused[0], error_message=refused[1],
                                                              resource_type=r.resource_type,
                                                              resource_name=r.resource_name))
                elif (a := next(it, None)) is not None:
                    out.append(R.AlterConfigsResourceResponse(
                        error_code=a.error_code, error_message=a.error_message, resource_type=a.resource_type,
                        resource_name=a.resource_name))
            return R(throttle_time_ms=0, responses=out)
        return Handler(alter_configs.API, versions, alter)

    def install(self, handlers: ServedHandlers, services: BrokerServices) -> None:
        """Replace the broker's own handlers of the forwarded APIs, and serve (and advertise) the
        ones only a KRaft broker serves: they exist only to be forwarded (ElectLeaders, UpdateFeatures)."""
        for api in FORWARDED:
            if api.key in handlers:
                handlers.loaded[api.key] = self.handler(api, handlers.versions[api.key])
        if alter_configs.API.key in handlers:
            handlers.loaded[alter_configs.API.key] = self.legacy_alter_configs(handlers.versions[alter_configs.API.key])
        served = dict(services.served_versions)
        for api, versions in FORWARDED_ONLY:
            served[api.key] = handlers.versions[api.key] = Versions(versions)
            handlers.loaded[api.key] = self.handler(api, Versions(versions))
        services.served_versions = served

