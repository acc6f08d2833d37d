"""SCRAM credentials in the metadata log (Kafka: ScramControlManager).

A broker forwards AlterUserScramCredentials here (after checking ALTER on the cluster); the
request is decided as a single broker decides it (minibroker.security.scram_alterations) against
the image's credentials, and each change is a UserScramCredentialRecord (salt, StoredKey,
ServerKey, iterations: never the password) or a RemoveUserScramCredentialRecord, which every
broker's ScramPublisher hands to its SASL listeners.
"""

from __future__ import annotations

from minibroker.metadata.image import MetadataImage
from minibroker.security import scram_alterations
from minibroker.security.scram import MECHANISMS
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from minibroker_protocol.metadata_serde import ApiMessageAndVersion


def alter_user_scram_credentials(image: MetadataImage, req: AlterUserScramCredentialsRequest
                                 ) -> tuple[list[ApiMessageAndVersion], AlterUserScramCredentialsResponse]:
    planned = scram_alterations.plan(req, lambda user, mechanism: (user, MECHANISMS[mechanism][1]) in image.scram)
    records = [ApiMessageAndVersion(mr.REMOVE_USER_SCRAM_CREDENTIAL_RECORD(name=user, mechanism=MECHANISMS[m][1]), 0)
               for user, m in planned.deletions]
    records += [ApiMessageAndVersion(mr.USER_SCRAM_CREDENTIAL_RECORD(
        name=user, mechanism=MECHANISMS[m][1], salt=c.salt, stored_key=c.stored_key, server_key=c.server_key,
        iterations=c.iterations), 0) for user, m, c in planned.upserts]
    return records, planned.response
