"""A KRaft broker's SCRAM credentials from the metadata log (Kafka: ScramPublisher).

The UserScramCredentialRecords the controller wrote (minibroker.controller.scram_control) are the
credentials every broker's SASL/SCRAM listeners check a login against: on the first image (or a
snapshot) and on every delta that changed one, the whole set is handed to the broker's
ScramCredentialStore, which in KRaft mode keeps them in memory only.
"""

from __future__ import annotations

import logging

from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.security.credentials import ScramCredentialStore
from minibroker.security.scram import MECHANISM_BY_TYPE, ScramCredential

log = logging.getLogger("minibroker.security")


class ScramPublisher:
    def __init__(self, store: ScramCredentialStore):
        self.store = store
        self.first = True
        if store.use_metadata_log():
            log.warning("KRaft mode: the SCRAM credentials of %s are not used; the metadata log holds the "
                        "cluster's", store.path.name)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if self.first or delta.scram_changed or delta.image.offset < 0:
            self.first = False
            self.store.set_credentials(
                (name, MECHANISM_BY_TYPE[mechanism], ScramCredential(r.salt, r.stored_key, r.server_key, r.iterations))
                for (name, mechanism), r in image.scram.items() if mechanism in MECHANISM_BY_TYPE)
