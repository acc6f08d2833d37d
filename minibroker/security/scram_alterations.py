"""AlterUserScramCredentials decided (Kafka: ScramControlManager.alterCredentials): which
credentials a request upserts and deletes, and each user's answer. Shared by the broker's handler
(one broker: the credentials file) and the controller (a cluster: UserScramCredentialRecords of
the metadata log), so both answer alike. Errors as Kafka's: a user twice in one request
DUPLICATE_RESOURCE, an empty name or iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL, an
unknown mechanism UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist
RESOURCE_NOT_FOUND; a user with any error changes nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from minibroker.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
)
from minibroker_protocol.apis import alter_user_scram_credentials
from minibroker_protocol.apis.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)
from minibroker_protocol.errors import ErrorCode

AR = alter_user_scram_credentials.RESPONSE


@dataclass
class ScramAlterations:
    upserts: list[tuple[str, str, ScramCredential]] = field(default_factory=list)  # user, mechanism, credential
    deletions: list[tuple[str, str]] = field(default_factory=list)  # user, mechanism
    response: AlterUserScramCredentialsResponse = field(default_factory=lambda: AR(results=[]))


def plan(req: AlterUserScramCredentialsRequest, exists: Callable[[str, str], bool]) -> ScramAlterations:
    """The changes `req` makes (`exists(user, mechanism)` tells what is there now) and the answer."""
    counts = Counter([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    errors: dict[str, tuple[int, str]] = {}

    def fail(name: str, code: int, message: str) -> None:
        errors.setdefault(name, (code, message))

    for name, count in counts.items():
        if count > 1:
            fail(name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    deletions: list[tuple[str, str]] = []
    for d in req.deletions:
        mechanism = MECHANISM_BY_TYPE.get(d.mechanism)
        if not d.name:
            fail(d.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            fail(d.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif not exists(d.name, mechanism):
            fail(d.name, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletions.append((d.name, mechanism))
    upserts: list[tuple[str, str, ScramCredential]] = []
    for u in req.upsertions:
        mechanism = MECHANISM_BY_TYPE.get(u.mechanism)
        if not u.name:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            fail(u.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif u.iterations < MIN_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upserts.append((u.name, mechanism,
                            credential_from_salted(mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations)))
    response = AR(results=[AR.AlterUserScramCredentialsResult(user=name, error_code=errors.get(name, (0, None))[0],
                                                               error_message=errors.get(name, (0, None))[1])
                           for name in counts])
    return ScramAlterations([x for x in upserts if x[0] not in errors], [x for x in deletions if x[0] not in errors],
                            response)


def refused(req: AlterUserScramCredentialsRequest, code: int, client_id: str | None
            ) -> AlterUserScramCredentialsResponse:
    """ALTER on the cluster refused, as Kafka's controller answers it: every user gets the error,
    with the shape of the controller's text (Kafka's names its internal request object)."""
    users = sorted({d.name for d in req.deletions} | {u.name for u in req.upsertions})
    text = f"Request AlterUserScramCredentials(clientId={client_id}) needs ALTER permission."
    return AR(results=[AR.AlterUserScramCredentialsResult(user=u, error_code=code, error_message=text)
                       for u in users])
