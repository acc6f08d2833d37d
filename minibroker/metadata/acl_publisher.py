"""A KRaft broker's ACLs from the metadata log (Kafka: AclPublisher).

The authorizer of a KRaft broker decides on the image's ACLs (AccessControlEntryRecords the
controller wrote, minibroker.controller.acl_control), not on a file of its own: on the first image
(or a snapshot) and on every delta that added or removed one, the whole set is handed over, so
every broker of the cluster applies the same rules a moment after the controller committed them.
"""

from __future__ import annotations

import logging

from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.security.authorizer import Authorizer

log = logging.getLogger("minibroker.security")


class AclPublisher:
    def __init__(self, authorizer: Authorizer):
        self.authorizer = authorizer
        self.first = True
        if authorizer.use_metadata_log():
            log.warning("KRaft mode: the ACLs of %s are not used; the metadata log holds the cluster's ACLs",
                        authorizer.FILE_NAME)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if self.first or delta.acls_changed or delta.image.offset < 0:
            self.first = False
            self.authorizer.set_acls(image.acls.values())
