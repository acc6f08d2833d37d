"""Topic and broker configs in the metadata log (Kafka: ConfigurationControlManager).

IncrementalAlterConfigs (what a Kafka 4 broker forwards for `kafka-configs --alter`): for a topic
(resource type 2) the topic must exist and the resulting overrides pass the topic config checks
(unknown keys, values, as CreateTopics); for a broker (type 4, "" for the cluster default or a
broker id) the key must be a broker key. SET (0) writes the value, DELETE (1) a null value (the
key goes back to its default), APPEND (2) / SUBTRACT (3) edit a list value. Each change is a
ConfigRecord; a resource whose checks fail changes nothing and answers its error.

With Eligible Leader Replicas on (KIP-966), `min.insync.replicas` decides who is eligible, so
Kafka 4.4 keeps it at the cluster and topic levels only: a broker-level value is refused, the
cluster-level one cannot be removed, and every change of it clears the ELRs it governed (a
ClearElrRecord for the topic, or for every topic at the cluster level, even when the value stays
the same). Kafka: ConfigurationControlManager.isDisallowedBrokerMinIsrTransition,
isDisallowedClusterMinIsrTransition, createClearElrRecordsAsNeeded.

A GROUP (type 32, named by the group id) holds the KIP-848/KIP-932/KIP-1071 group configs: the
resulting set is checked whole against the controller's own properties (their group bounds),
APPEND/SUBTRACT are refused (no group key is a LIST in Kafka's KafkaConfigSchema), and only the
keys whose value changes become ConfigRecords (ConfigurationControlManager writes unchanged values
again only for BROKER resources). Every broker applies them from its image
(minibroker.metadata.group_config_publisher).
"""

from __future__ import annotations

from minibroker.config import BrokerConfig, ConfigError
from minibroker.config.kafka_dynamic import REPLICATION_THROTTLE_KEYS
from minibroker.config.keys import BROKER_CONFIGS
from minibroker.config.topic import validate_topic_config
from minibroker.controller import eligible_leader_replicas as elr_rules
from minibroker.coordinator.group.group_config_validation import validate_group_configs, validate_group_name
from minibroker.metadata.image import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE, MetadataImage
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import incremental_alter_configs as iac
from minibroker_protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka: AlterConfigOp.OpType


def incremental_alter_configs(image: MetadataImage, req: IncrementalAlterConfigsRequest,
                              properties: BrokerConfig | None = None
                              ) -> tuple[list[ApiMessageAndVersion], IncrementalAlterConfigsResponse]:
    """`properties`: the controller's own (the bounds of the GROUP configs; Kafka's defaults if None)."""
    resp = iac.RESPONSE(responses=[])
    records: list[ApiMessageAndVersion] = []
    for res in req.resources:
        out = iac.RESPONSE.AlterConfigsResourceResponse(error_code=0, error_message=None,
                                                        resource_type=res.resource_type, resource_name=res.resource_name)
        resp.responses.append(out)
        try:
            changes = _changes(image, res, properties)
        except KafkaError as e:
            out.error_code, out.error_message = e.code, e.message
            continue
        if elr_rules.enabled(image) and res.resource_type == BROKER_RESOURCE \
                and elr_rules.MIN_INSYNC_KEY in changes:
            if res.resource_name:
                out.error_code, out.error_message = ErrorCode.INVALID_CONFIG, BROKER_MIN_ISR_REFUSED
                continue
            if changes[elr_rules.MIN_INSYNC_KEY] is None:
                out.error_code, out.error_message = ErrorCode.INVALID_CONFIG, CLUSTER_MIN_ISR_REMOVAL_REFUSED
                continue
        if not req.validate_only:
            records += [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=res.resource_type,
                                                              resource_name=res.resource_name, name=k, value=v), 0)
                        for k, v in changes.items()]
    return records + _clear_elr_records(image, records), resp


BROKER_MIN_ISR_REFUSED = "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
CLUSTER_MIN_ISR_REMOVAL_REFUSED = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."


def _clear_elr_records(image: MetadataImage, records: list[ApiMessageAndVersion]) -> list[ApiMessageAndVersion]:
    """A ClearElrRecord after each min.insync.replicas ConfigRecord: the topic's, or every topic's
    for the cluster level (Kafka: createClearElrRecordsAsNeeded)."""
    if not elr_rules.enabled(image):
        return []
    out = []
    for r in records:
        m = r.message
        if isinstance(m, mr.ConfigRecord) and m.name == elr_rules.MIN_INSYNC_KEY:
            topic = m.resource_name if m.resource_type == TOPIC_RESOURCE else ""
            out.append(ApiMessageAndVersion(mr.CLEAR_ELR_RECORD(topic_name=topic), 0))
    return out


def _changes(image: MetadataImage, res: IncrementalAlterConfigsRequest.AlterConfigsResource,
             properties: BrokerConfig | None = None) -> dict[str, str | None]:
    before = image.configs.get((res.resource_type, res.resource_name), {})
    current = dict(before)
    changes: dict[str, str | None] = {}
    for c in res.configs:
        old = current.get(c.name)
        if c.config_operation == SET:
            new: str | None = c.value
        elif c.config_operation == DELETE:
            new = None
        elif c.config_operation in (APPEND, SUBTRACT) and res.resource_type == GROUP_RESOURCE:
            verb = "APPEND" if c.config_operation == APPEND else "SUBTRACT"
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {c.name} because its type is not LIST.")
        elif c.config_operation in (APPEND, SUBTRACT):
            items = [x for x in (old or "").split(",") if x]
            given = [x for x in (c.value or "").split(",") if x]
            items = items + [x for x in given if x not in items] if c.config_operation == APPEND else \
                [x for x in items if x not in given]
            new = ",".join(items)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {c.config_operation}")
        changes[c.name] = new
        if new is None:
            current.pop(c.name, None)
        else:
            current[c.name] = new
    if res.resource_type == TOPIC_RESOURCE:
        if image.topic(res.resource_name) is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {res.resource_name} does not exist.")
        try:
            validate_topic_config(current)
        except ConfigError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
    elif res.resource_type == BROKER_RESOURCE:
        unknown = [k for k in changes if k not in BROKER_CONFIGS and k not in REPLICATION_THROTTLE_KEYS]
        if unknown:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown broker config: {unknown[0]}")
    elif res.resource_type == GROUP_RESOURCE:
        validate_group_name(res.resource_name)
        validate_group_configs(current, properties if properties is not None else BrokerConfig({}))
        changes = {k: v for k, v in changes.items() if v != before.get(k)}
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected resource type {res.resource_type}")
    return changes
