"""A KRaft broker's client quotas from the metadata log (Kafka: the ClientQuotaMetadataManager of
DynamicConfigPublisher).

The ClientQuotaRecords the controller wrote (minibroker.controller.quota_control) are the limits
every broker enforces: on the first image (or a snapshot) and on every delta that changed one, the
whole set goes to the broker's QuotaStore (in memory only in KRaft mode), whose listeners re-read
the limits in force.
"""

from __future__ import annotations

import logging

from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.quotas.store import QuotaStore

log = logging.getLogger("minibroker.quotas")


class QuotaPublisher:
    def __init__(self, store: QuotaStore):
        self.store = store
        self.first = True
        if store.use_metadata_log():
            log.warning("KRaft mode: the client quotas of %s are not used; the metadata log holds the cluster's",
                        store.path.name)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if self.first or delta.quotas_changed or delta.image.offset < 0:
            self.first = False
            self.store.set_quotas({entity: dict(values) for entity, values in image.quotas.items()})
