"""Topic and broker configs in the metadata log (Kafka: ConfigurationControlManager).

IncrementalAlterConfigs (what a Kafka 4 broker forwards for `kafka-configs --alter`): for a topic
(resource type 2) the topic must exist and the resulting overrides pass the topic config checks
(unknown keys, values, as CreateTopics); for a broker (type 4, "" for the cluster default or a
broker id) the key must be a broker key. SET (0) writes the value, DELETE (1) a null value (the
key goes back to its default), APPEND (2) / SUBTRACT (3) edit a list value. Each change is a
ConfigRecord; a resource whose checks fail changes nothing and answers its error.
"""

from __future__ import annotations

from minibroker.config import ConfigError
from minibroker.config.kafka_dynamic import REPLICATION_THROTTLE_KEYS
from minibroker.config.keys import BROKER_CONFIGS
from minibroker.config.topic import validate_topic_config
from minibroker.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import incremental_alter_configs as iac
from minibroker_protocol.apis.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka: AlterConfigOp.OpType


def incremental_alter_configs(image: MetadataImage, req: IncrementalAlterConfigsRequest
                              ) -> tuple[list[ApiMessageAndVersion], IncrementalAlterConfigsResponse]:
    resp = iac.RESPONSE(responses=[])
    records: list[ApiMessageAndVersion] = []
    for res in req.resources:
        out = iac.RESPONSE.AlterConfigsResourceResponse(error_code=0, error_message=None,
                                                        resource_type=res.resource_type, resource_name=res.resource_name)
        resp.responses.append(out)
        try:
            changes = _changes(image, res)
        except KafkaError as e:
            out.error_code, out.error_message = e.code, e.message
            continue
        if not req.validate_only:
            records += [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=res.resource_type,
                                                              resource_name=res.resource_name, name=k, value=v), 0)
                        for k, v in changes.items()]
    return records, resp


def _changes(image: MetadataImage, res: IncrementalAlterConfigsRequest.AlterConfigsResource) -> dict[str, str | None]:
    current = dict(image.configs.get((res.resource_type, res.resource_name), {}))
    changes: dict[str, str | None] = {}
    for c in res.configs:
        old = current.get(c.name)
        if c.config_operation == SET:
            new: str | None = c.value
        elif c.config_operation == DELETE:
            new = None
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
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected resource type {res.resource_type}")
    return changes
