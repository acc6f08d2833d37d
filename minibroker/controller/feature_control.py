"""The finalized feature levels a new cluster starts with (Kafka: FeatureControlManager, BootstrapMetadata).

A metadata log that is empty and has no snapshot gets its bootstrap records first: one
FeatureLevelRecord per feature this software finalizes (minibroker.features: metadata.version,
transaction.version, group.version, ...), as Kafka's `kafka-storage format` writes them into the
bootstrap snapshot. A directory Kafka's StorageTool formatted brings its own bootstrap snapshot
(`00000000000000000000-0000000000.checkpoint`), whose levels are used instead. Later changes come
with UpdateFeatures (`update_features`).
"""

from __future__ import annotations

from collections.abc import Mapping

from minibroker.features import ELIGIBLE_LEADER_REPLICAS_VERSION, FEATURES, METADATA_VERSION, kraft_supported
from minibroker.metadata.image import BROKER_RESOURCE, MetadataImage
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import update_features as uf
from minibroker_protocol.apis.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion


def bootstrap_records(min_insync_replicas: int = 1) -> list[ApiMessageAndVersion]:
    """The levels a new cluster starts with (Kafka: `kafka-storage format`'s defaults): the table's,
    capped at what a KRaft broker supports (minibroker.features.kraft_supported).
    With Eligible Leader Replicas on, also the cluster-level `min.insync.replicas`, the controller's
    own static value: Kafka 4.4 keeps it there while ELR decides who may lead (KIP-966;
    `kafka-configs --describe --entity-type brokers --entity-default` shows it)."""
    brokers = kraft_supported()
    levels = {f.name: min(f.level, brokers.get(f.name, (0, f.level))[1]) for f in FEATURES.values()}
    records = [ApiMessageAndVersion(mr.FEATURE_LEVEL_RECORD(name=n, feature_level=level), 0)
               for n, level in sorted(levels.items()) if level > 0]
    return records + _elr_bootstrap_config(levels.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0), {}, min_insync_replicas)


def formatted_bootstrap_records(image: MetadataImage, min_insync_replicas: int = 1) -> list[ApiMessageAndVersion]:
    """What follows the bootstrap snapshot of a directory Kafka's StorageTool formatted, at first start:
    its feature levels are the image's already, but with ELR on Kafka's controller also writes the
    cluster-level min.insync.replicas (ConfigurationControlManager.maybeGenerateElrSafetyRecords at
    activation), which `kafka-storage format` does not put in the checkpoint."""
    return _elr_bootstrap_config(image.features.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0),
                                 image.configs.get((BROKER_RESOURCE, ""), {}), min_insync_replicas)


def _elr_bootstrap_config(elr_level: int, cluster_configs: Mapping[str, str],
                          min_insync_replicas: int) -> list[ApiMessageAndVersion]:
    if elr_level < 1 or "min.insync.replicas" in cluster_configs:
        return []
    return [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=BROKER_RESOURCE, resource_name="",
                                                  name="min.insync.replicas", value=str(min_insync_replicas)), 0)]


UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures upgrade_type (Kafka: FeatureUpdate.UpgradeType)


def update_features(image: MetadataImage, req: UpdateFeaturesRequest, version: int,
                    min_insync_replicas: int = 1) -> tuple[list[ApiMessageAndVersion], UpdateFeaturesResponse]:
    """UpdateFeatures (KIP-584, `kafka-features upgrade/downgrade`): each level must be one this
    software supports; lowering one needs a downgrade type, and metadata.version only goes down
    unsafely. All or nothing: one refused update refuses the request (v2 answers only the top error)."""
    records: list[ApiMessageAndVersion] = []
    results: list[UpdateFeaturesResponse.UpdatableFeatureResult] = []
    failure: KafkaError | None = None
    for u in req.feature_updates:
        kind = u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)
        try:
            records.append(_update(image, u.feature, u.max_version_level, kind))
            results.append(uf.RESPONSE.UpdatableFeatureResult(feature=u.feature, error_code=0, error_message=None))
        except KafkaError as e:
            failure = failure or e
            results.append(uf.RESPONSE.UpdatableFeatureResult(feature=u.feature, error_code=e.code,
                                                              error_message=e.message))
    resp = uf.RESPONSE(error_code=0, error_message=None, results=results if version < 2 else [])
    if failure is not None:
        if version >= 2:
            resp.error_code, resp.error_message = failure.code, failure.message
        return [], resp
    if req.validate_only:
        return [], resp
    return records + _elr_transition_records(image, records, min_insync_replicas), resp


def _elr_transition_records(image: MetadataImage, records: list[ApiMessageAndVersion],
                            min_insync_replicas: int) -> list[ApiMessageAndVersion]:
    """ELR switched on: the cluster-level min.insync.replicas (the controller's static value) if
    none is set, and the broker-level ones removed (Kafka: ConfigurationControlManager.
    maybeGenerateElrSafetyRecords); switched off: every ELR cleared (a ClearElrRecord for all)."""
    before = image.features.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0)
    after = before
    for r in records:
        if isinstance(r.message, mr.FeatureLevelRecord) and r.message.name == ELIGIBLE_LEADER_REPLICAS_VERSION:
            after = r.message.feature_level
    if before == 0 and after >= 1:
        out = []
        if "min.insync.replicas" not in image.configs.get((BROKER_RESOURCE, ""), {}):
            out.append(ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=BROKER_RESOURCE, resource_name="",
                                                             name="min.insync.replicas",
                                                             value=str(min_insync_replicas)), 0))
        out += [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=BROKER_RESOURCE, resource_name=name,
                                                      name="min.insync.replicas", value=None), 0)
                for (kind, name), values in sorted(image.configs.items())
                if kind == BROKER_RESOURCE and name and "min.insync.replicas" in values]
        return out
    if before >= 1 and after == 0:
        return [ApiMessageAndVersion(mr.CLEAR_ELR_RECORD(topic_name=""), 0)]
    return []


def _update(image: MetadataImage, name: str, level: int, kind: int) -> ApiMessageAndVersion:
    feature = FEATURES.get(name)
    current = image.features.get(name, 0)
    if feature is None or not (level == 0 or feature.min_version <= level <= feature.max_version):
        raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION,
                         f"Invalid update version {level} for feature {name}. Local controller 'minibroker' only "
                         f"supports versions {feature.min_version}-{feature.max_version}" if feature is not None
                         else f"Invalid update version {level} for feature {name}. The controller does not support "
                              "this feature.")
    for b in sorted(image.brokers.values(), key=lambda b: b.id):  # every registered broker must support it
        supported = b.features.get(name)
        if supported is None and level > 0:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. "
                             f"Broker {b.id} does not support this feature.")
        if supported is not None and not supported[0] <= level <= supported[1]:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. "
                             f"Broker {b.id} only supports versions {supported[0]}-{supported[1]}")
    if level < current:
        if kind == UPGRADE:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION,
                             "Can't downgrade the version of this feature without setting the upgrade type to either "
                             "safe or unsafe downgrade.")
        if name == METADATA_VERSION and kind == SAFE_DOWNGRADE:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION,
                             "Invalid metadata.version. Refusing to perform the requested downgrade because it might "
                             "delete metadata information.")
    return ApiMessageAndVersion(mr.FEATURE_LEVEL_RECORD(name=name, feature_level=level), 0)
