"""DescribeConfigs v0-4, AlterConfigs v0-2, IncrementalAlterConfigs v0-1.

Behavior (Kafka: ConfigHelper, ConfigAdminManager, ControllerConfigurationValidator):
- Resources are TOPIC (2), BROKER (4), CLIENT_METRICS (16, KIP-714: minibroker/client_metrics.py)
  and GROUP (32, the keys of each group kind: the consumer
  and share-group handler modules, GROUP_CONFIG_PROVIDERS). A BROKER resource is named by this node's id (every
  broker key with its value, source and synonyms) or "" (the cluster-wide dynamic defaults only).
  Another id, or a non-numeric name, gets INVALID_REQUEST with Kafka's message. BROKER_LOGGER and
  other types get INVALID_REQUEST "Unsupported resource type" (minibroker has no log4j loggers).
- DescribeConfigs: every key (or those in `configuration_keys`) with value, read-only, sensitive
  (value hidden), source (v1+; v0 has is_default), synonyms when asked (v1+), type and
  documentation when asked (v3+). An unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
- AlterConfigs replaces a resource's whole set of overrides; IncrementalAlterConfigs applies
  SET/DELETE/APPEND/SUBTRACT to them (APPEND/SUBTRACT only on list keys). Every value goes
  through the config model; a bad one fails its resource with INVALID_CONFIG and Kafka's message,
  and nothing of that resource changes. `validate_only` checks and changes nothing.
- Topic changes apply live to the open logs (segment size, retention, cleanup policy...) and
  are stored with the topic's overrides; broker changes go to the dynamic layers
  (minibroker.dynamic_config).

Version notes: DescribeConfigs v1 adds include_synonyms, config_source and synonyms (replacing
is_default), v2 is v1, v3 adds include_documentation, config_type and documentation, v4 is
flexible. AlterConfigs v1 is v0, v2 is flexible. IncrementalAlterConfigs v1 is flexible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from minibroker.config import (
    BROKER_CONFIGS,
    ConfigEntry,
    ConfigError,
    ConfigValue,
    OpType,
    apply_incremental_ops,
    effective_topic_config,
    format_value,
    validate_topic_config,
)
from minibroker.config.kafka_dynamic import per_broker_only, per_listener_only
from minibroker.handlers import authz, consumer_groups, share_groups, streams_group_configs
from minibroker.handlers.registry import RequestContext, handles
from minibroker.metadata_cache import TopicImage
from minibroker.services import BrokerServices
from minibroker.topics import validate_topic_name
from minibroker_protocol.apis import alter_configs, describe_configs, incremental_alter_configs
from minibroker_protocol.errors import ErrorCode, KafkaError, error_name

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CLIENT_METRICS = 16
GROUP = 32  # Kafka's ConfigResource.Type.GROUP (KIP-848/KIP-932 group configs)


def _denied(ctx: RequestContext, rtype: int, name: str, op: authz.AclOperation) -> int:
    """The ACL check of a config resource (Kafka: ConfigHelper / ControllerApis.authorizeAlterResource):
    BROKER, BROKER_LOGGER and CLIENT_METRICS are the cluster's, TOPIC and GROUP their own; 0 if
    allowed (or another type, which the handlers refuse on their own)."""
    if rtype in (BROKER, BROKER_LOGGER, CLIENT_METRICS):
        return authz.cluster_denied(ctx, op)
    if rtype == TOPIC:
        return authz.denied(ctx, op, authz.ResourceType.TOPIC, name)
    if rtype == GROUP:
        return authz.denied(ctx, op, authz.ResourceType.GROUP, name)
    return 0


class GroupConfigProvider(Protocol):
    """One kind of group's config keys on GROUP resources (share groups: handlers/share_groups.py).
    Describe lists every provider's keys; an alteration goes to the provider owning each key."""

    def group_keys(self) -> frozenset[str]: ...

    def describe_group(self, services: BrokerServices, group: str) -> list[ConfigEntry]: ...

    def alter_group(self, services: BrokerServices, group: str, ops: list[tuple[str, int, str | None]],
                    replace: bool, validate_only: bool) -> None: ...


# Kafka's GroupConfig holds both kinds' keys; here each kind's handler module owns its own
GROUP_CONFIG_PROVIDERS: tuple[GroupConfigProvider, ...] = (consumer_groups.GROUP_CONFIGS, share_groups.GROUP_CONFIGS,
                                                          streams_group_configs.GROUP_CONFIGS)


def _describe_group(services: BrokerServices, name: str) -> list[ConfigEntry]:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    return [e for p in GROUP_CONFIG_PROVIDERS for e in p.describe_group(services, name)]


def _alter_group(services: BrokerServices, name: str, new_text: dict[str, str | None] | None,
                 ops: list[tuple[str, int, str | None]] | None, validate_only: bool) -> None:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    given = ops if ops is not None else [(k, int(OpType.SET), v) for k, v in (new_text or {}).items()]
    for key, op, _ in given:  # Kafka's controller: no group key is a LIST (KafkaConfigSchema.isSplittable)
        if OpType(op) in (OpType.APPEND, OpType.SUBTRACT):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {OpType(op).name} to key {key} because its type is not LIST.")
    for key, _, _ in given:
        if not any(key in p.group_keys() for p in GROUP_CONFIG_PROVIDERS):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {key}")
    for p in GROUP_CONFIG_PROVIDERS:
        mine = [op for op in given if op[0] in p.group_keys()]
        if mine or ops is None:
            p.alter_group(services, name, mine, ops is None, validate_only)
def _alter_client_metrics(services: BrokerServices, name: str, new_text: dict[str, str | None] | None,
                          ops: list[tuple[str, int, str | None]] | None, validate_only: bool) -> None:
    """KIP-714 subscriptions (minibroker/client_metrics.py): SET and DELETE; APPEND/SUBTRACT refused."""
    if ops is None:
        services.client_metrics.alter(name, list((new_text or {}).items()), True, validate_only)
        return
    pairs: list[tuple[str, str | None]] = []
    for key, op, value in ops:
        if OpType(op) not in (OpType.SET, OpType.DELETE):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value append is not allowed for config key: {key}")
        pairs.append((key, value if OpType(op) is OpType.SET else None))
    services.client_metrics.alter(name, pairs, False, validate_only)


if TYPE_CHECKING:

    # the two AlterConfigs forms share the resource fields, not the config entries
    _AlterResource: TypeAlias = (alter_configs.AlterConfigsRequest.AlterConfigsResource
                                 | incremental_alter_configs.IncrementalAlterConfigsRequest.AlterConfigsResource)

_AlterResult = TypeVar("_AlterResult", "alter_configs.AlterConfigsResponse.AlterConfigsResourceResponse",
                       "incremental_alter_configs.IncrementalAlterConfigsResponse.AlterConfigsResourceResponse")

DC = describe_configs.RESPONSE
AC = alter_configs.RESPONSE
IAC = incremental_alter_configs.RESPONSE


def _broker_resource(services: BrokerServices, name: str | None) -> bool:
    """True for this broker's own resource, False for the cluster default (""); else raises."""
    if not name:
        return False
    try:
        node = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if node != services.node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {services.node_id} or empty string, but received {name}")
    return True


def _topic(services: BrokerServices, name: str) -> TopicImage:
    validate_topic_name(name)  # an illegal name is INVALID_TOPIC_EXCEPTION (Kafka: Topic.validate)
    topic = services.metadata_cache.topic(name)
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    return topic


def _unsupported(resource_type: int) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type}")


# --------------------------------------------------------------------------------- describe


def _entry(e: ConfigEntry, version: int, synonyms: bool, docs: bool
           ) -> describe_configs.DescribeConfigsResponse.DescribeConfigsResourceResult:
    return DC.DescribeConfigsResourceResult(
        name=e.name, value=e.value, read_only=e.read_only, is_default=e.is_default, config_source=e.source,
        is_sensitive=e.sensitive,
        synonyms=[DC.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms] if synonyms else [],
        config_type=e.type, documentation=e.doc if docs else None)


@handles(describe_configs.API, "0-4")
async def handle_describe_configs(ctx: RequestContext, req: describe_configs.DescribeConfigsRequest) -> describe_configs.DescribeConfigsResponse:
    services = ctx.services
    dyn = services.dynamic_config
    synonyms = ctx.version >= 1 and bool(req.include_synonyms)
    docs = ctx.version >= 3 and bool(req.include_documentation)
    results, refused = [], []
    for r in req.resources:
        # Kafka answers a described resource with an empty message, not null (ConfigHelper)
        result = DC.DescribeConfigsResult(error_code=0, error_message="", resource_type=r.resource_type,
                                          resource_name=r.resource_name, configs=[])
        if code := _denied(ctx, r.resource_type, r.resource_name, authz.Op.DESCRIBE_CONFIGS):
            # DESCRIBE_CONFIGS on the resource; Kafka answers the refused ones after the others
            result.error_code, result.error_message = code, authz.MESSAGES[code]
            refused.append(result)
            continue
        results.append(result)
        try:
            if r.resource_type == TOPIC:
                topic = _topic(services, r.resource_name)
                entries = dyn.describe_topic(services.config, dict(topic.overrides))
            elif r.resource_type == BROKER:
                if _broker_resource(services, r.resource_name):
                    entries = dyn.describe_broker(services.config)
                else:
                    entries = dyn.describe_default()
            elif r.resource_type == GROUP and GROUP_CONFIG_PROVIDERS:
                entries = _describe_group(services, r.resource_name)
            elif r.resource_type == CLIENT_METRICS:
                entries = services.client_metrics.describe(r.resource_name)
            else:
                raise _unsupported(r.resource_type)
        except KafkaError as e:
            result.error_code, result.error_message = e.code, e.message or error_name(e.code)
            if e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                result.error_message = ""  # Kafka 4.4 names no topic here (tests/reference)
            continue
        wanted = set(r.configuration_keys) if r.configuration_keys else None
        result.configs = [_entry(e, ctx.version, synonyms, docs) for e in entries
                          if wanted is None or e.name in wanted]
    return DC(results=results + refused)


# --------------------------------------------------------------------------------- alter


def _alter_topic(services: BrokerServices, name: str, new_text: dict[str, str | None] | None,
                 ops: list[tuple[str, int, str | None]] | None, validate_only: bool) -> None:
    topic = _topic(services, name)
    try:
        if ops is not None:
            overrides = apply_incremental_ops(dict(topic.overrides), ops, services.config)
        else:
            assert new_text is not None
            overrides = validate_topic_config(new_text, services.config)
        effective = effective_topic_config(services.config, overrides)
    except ConfigError as e:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if validate_only:
        return
    services.topics.alter_config(services.topics[topic.name], overrides, effective)  # the metadata's publisher


def _text_layer(layer: dict[str, ConfigValue]) -> dict[str, str | None]:
    return {k: format_value(BROKER_CONFIGS[k], v) for k, v in layer.items()}


def _check_security_scope(keys: list[str], per_broker: bool) -> None:
    """Kafka's scope rules for its dynamic security keys (config/kafka_dynamic.py), checked before
    the values, with Kafka's error code and the start of its message."""
    listener = sorted(k for k in keys if per_listener_only(k))
    if listener:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "These security configs can be dynamically updated only "
                         f"per-listener using the listener prefix: [{', '.join(listener)}]")
    broker_only = sorted(k for k in keys if per_broker_only(k))
    if broker_only and not per_broker:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, "
                         f"broker id must be specified: [{', '.join(broker_only)}]")


def _alter_broker(services: BrokerServices, name: str, new_text: dict[str, str | None] | None,
                  ops: list[tuple[str, int, str | None]] | None, validate_only: bool) -> None:
    per_broker = _broker_resource(services, name)
    _check_security_scope([k for k, _, _ in ops] if ops is not None else list(new_text or {}), per_broker)
    dyn = services.dynamic_config
    try:
        if ops is not None:
            text = _text_layer(dyn.layer(per_broker))
            for key, op, value in ops:
                spec = BROKER_CONFIGS.get(key)
                op = OpType(op)
                if op is OpType.SET:
                    text[key] = value
                elif op is OpType.DELETE:
                    text.pop(key, None)
                else:
                    if spec is None or spec.type != "list":
                        verb = "append" if op is OpType.APPEND else "subtract"
                        raise ConfigError(f"Config value {verb} is not allowed for config key: {key}")
                    base = text.get(key) or format_value(spec, services.config.value(key)) or ""
                    old = [s for s in base.split(",") if s]
                    given = [s for s in (value or "").split(",") if s]
                    text[key] = ",".join(old + [s for s in given if s not in old] if op is OpType.APPEND
                                         else [s for s in old if s not in given])
        else:
            assert new_text is not None
            text = dict(new_text)
        parsed = dyn.validate(text, per_broker)
        if validate_only:
            return
        dyn.replace_layer(per_broker, parsed)  # its listeners give topics and logs their new configs
    except (ConfigError, ValueError) as e:
        # Kafka 4 (KRaft: the controller validates broker configs) answers INVALID_REQUEST here
        raise KafkaError(ErrorCode.INVALID_REQUEST, str(e)) from None


def _alter(ctx: RequestContext, resources: Sequence[_AlterResource], incremental: bool, validate_only: bool,
           result_cls: type[_AlterResult]) -> list[_AlterResult]:
    services = ctx.services
    results = []
    names_seen: dict[tuple[int, str], int] = {}
    for r in resources:
        names_seen[(r.resource_type, r.resource_name)] = names_seen.get((r.resource_type, r.resource_name), 0) + 1
    for r in resources:
        result = result_cls(error_code=0, error_message=None, resource_type=r.resource_type,
                            resource_name=r.resource_name)
        results.append(result)
        try:
            if names_seen[(r.resource_type, r.resource_name)] > 1:
                # Kafka: AlterConfigsRequest / ConfigAdminManager refuse a resource listed twice
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Error due to duplicate config keys or resources for {r.resource_name}")
            if isinstance(r, incremental_alter_configs.IncrementalAlterConfigsRequest.AlterConfigsResource):
                keys = [c.name for c in r.configs]
                if len(keys) != len(set(keys)):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
                for c in r.configs:
                    if c.config_operation not in tuple(OpType):
                        raise KafkaError(ErrorCode.INVALID_REQUEST,
                                         f"Unknown operation type {c.config_operation}")
                ops = [(c.name, c.config_operation, c.value) for c in r.configs]
                text = None
            else:
                ops = None
                text = {c.name: c.value for c in r.configs}
            _authorize_alter(ctx, r, incremental)
            if r.resource_type == TOPIC:
                _alter_topic(services, r.resource_name, text, ops, validate_only)
            elif r.resource_type == BROKER:
                _alter_broker(services, r.resource_name, text, ops, validate_only)
            elif r.resource_type == GROUP and GROUP_CONFIG_PROVIDERS:
                _alter_group(services, r.resource_name, text, ops, validate_only)
            elif r.resource_type == CLIENT_METRICS:
                _alter_client_metrics(services, r.resource_name, text, ops, validate_only)
            else:
                raise _unsupported(r.resource_type)
        except _Refused as e:
            result.error_code = e.code
        except KafkaError as e:
            result.error_code, result.error_message = e.code, e.message or error_name(e.code)
    return results


def _authorize_alter(ctx: RequestContext, r: _AlterResource, incremental: bool) -> None:
    """ALTER_CONFIGS on the resource, before its values are looked at (Kafka 4.4 refuses even an
    invalid BROKER change with CLUSTER_AUTHORIZATION_FAILED: tests/reference). Kafka answers a
    refused topic or group with the error's default text, a refused BROKER or BROKER_LOGGER
    resource with none (ControllerApis.authorizeAlterResource, RuntimeLoggerManager)."""
    if r.resource_type == BROKER_LOGGER and not incremental:
        return  # legacy AlterConfigs has no BROKER_LOGGER: refused as an unknown type first
    code = _denied(ctx, r.resource_type, r.resource_name, authz.Op.ALTER_CONFIGS)
    if not code:
        return
    if r.resource_type in (TOPIC, GROUP):
        raise KafkaError(code, authz.MESSAGES[code])
    raise _Refused(code)


class _Refused(KafkaError):
    """An authorization failure answered with a null message."""


@handles(alter_configs.API, "0-2")
async def handle_alter_configs(ctx: RequestContext, req: alter_configs.AlterConfigsRequest) -> alter_configs.AlterConfigsResponse:
    return AC(responses=_alter(ctx, req.resources, False, req.validate_only, AC.AlterConfigsResourceResponse))


@handles(incremental_alter_configs.API, "0-1")
async def handle_incremental_alter_configs(ctx: RequestContext, req: incremental_alter_configs.IncrementalAlterConfigsRequest) -> incremental_alter_configs.IncrementalAlterConfigsResponse:
    return IAC(responses=_alter(ctx, req.resources, True, req.validate_only, IAC.AlterConfigsResourceResponse))
