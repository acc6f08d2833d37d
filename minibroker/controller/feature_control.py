"""The finalized feature levels a new cluster starts with (Kafka: FeatureControlManager, BootstrapMetadata).

A metadata log that is empty and has no snapshot gets its bootstrap records first: one
FeatureLevelRecord per feature this software finalizes (minibroker.features: metadata.version,
transaction.version, group.version, ...), as Kafka's `kafka-storage format` writes them into the
bootstrap snapshot. A directory Kafka's StorageTool formatted brings its own bootstrap snapshot
(`00000000000000000000-0000000000.checkpoint`), whose levels are used instead.
"""

from __future__ import annotations

from minibroker.features import FEATURES
from protocol import metadata_records as mr
from protocol.metadata_serde import ApiMessageAndVersion


def bootstrap_records() -> list[ApiMessageAndVersion]:
    return [ApiMessageAndVersion(mr.FEATURE_LEVEL_RECORD(name=f.name, feature_level=f.level), 0)
            for f in sorted(FEATURES.values(), key=lambda f: f.name) if f.level > 0]
