"""SaslHandshake v0-1, SaslAuthenticate v0-2, DescribeUserScramCredentials v0,
AlterUserScramCredentials v0.

Behavior: on a SASL listener the authenticator (minibroker.security.sasl) answers SaslHandshake and
SaslAuthenticate itself until the client has authenticated; what reaches these handlers came on a
listener without SASL, or after authentication without a re-authentication to begin, and Kafka's
KafkaApis answers that with ILLEGAL_SASL_STATE, as here.
SCRAM credentials: the admin client salts and iterates the password itself and sends the salted
password; the broker keeps salt, iterations, StoredKey and ServerKey (minibroker.security.scram),
persisted in the data directory (in a cluster, KRaft mode: UserScramCredentialRecords of the
metadata log, the request forwarded to the controller). Errors as Kafka's ScramControlManager /
KafkaApis (minibroker.security.scram_alterations); describing a credential that does not exist
RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter

from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext, handles
from minibroker.security import scram_alterations
from minibroker.security.scram import MECHANISMS
from minibroker_protocol.apis import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
    sasl_authenticate,
    sasl_handshake,
)
from minibroker_protocol.errors import ErrorCode


@handles(sasl_handshake.API, "0-1")
async def handle_sasl_handshake(ctx: RequestContext, req: sasl_handshake.SaslHandshakeRequest) -> sasl_handshake.SaslHandshakeResponse:
    return sasl_handshake.RESPONSE(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


@handles(sasl_authenticate.API, "0-2")
async def handle_sasl_authenticate(ctx: RequestContext, req: sasl_authenticate.SaslAuthenticateRequest) -> sasl_authenticate.SaslAuthenticateResponse:
    return sasl_authenticate.RESPONSE(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"", session_lifetime_ms=0,
        error_message="SaslAuthenticate request received after successful authentication")


DR = describe_user_scram_credentials.RESPONSE


@handles(describe_user_scram_credentials.API, "0")
async def handle_describe_user_scram_credentials(ctx: RequestContext, req: describe_user_scram_credentials.DescribeUserScramCredentialsRequest) -> describe_user_scram_credentials.DescribeUserScramCredentialsResponse:
    if code := authz.cluster_denied(ctx, authz.Op.DESCRIBE):  # DESCRIBE on the cluster (KafkaApis)
        # Kafka 4.4 answers without a message (tests/reference)
        return DR(error_code=code, error_message=None, results=[
            DR.DescribeUserScramCredentialsResult(user="", error_code=code, error_message=None, credential_infos=[])
            for _ in req.users or ()])
    store = ctx.services.scram_credentials
    results = []
    if req.users is None or not req.users:  # null or empty: every user with a credential
        names = store.users()
        duplicates: set[str] = set()
    else:
        names = []
        counts = Counter(u.name for u in req.users)
        duplicates = {n for n, c in counts.items() if c > 1}
        for u in req.users:
            if u.name not in names:
                names.append(u.name)
    for name in names:
        if name in duplicates:
            results.append(DR.DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.DUPLICATE_RESOURCE, credential_infos=[],
                error_message="Cannot describe SCRAM credentials for the same user twice in a single request"))
            continue
        mechs = store.mechanisms(name)
        if not mechs:
            results.append(DR.DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND, credential_infos=[],
                error_message="Attempt to describe a user credential that does not exist"))
            continue
        infos = [DR.CredentialInfo(mechanism=MECHANISMS[m][1],
                                                                      iterations=c.iterations)
                 for m, c in sorted(mechs.items(), key=lambda mc: MECHANISMS[mc[0]][1])]
        results.append(DR.DescribeUserScramCredentialsResult(user=name, error_code=0, error_message=None,
                                                             credential_infos=infos))
    return DR(error_code=0, error_message=None, results=results)


@handles(alter_user_scram_credentials.API, "0")
async def handle_alter_user_scram_credentials(ctx: RequestContext, req: alter_user_scram_credentials.AlterUserScramCredentialsRequest) -> alter_user_scram_credentials.AlterUserScramCredentialsResponse:
    if code := authz.cluster_denied(ctx, authz.Op.ALTER):  # ALTER on the cluster, checked by Kafka's controller
        return scram_alterations.refused(req, code, ctx.client_id)
    store = ctx.services.scram_credentials
    planned = scram_alterations.plan(req, lambda user, mechanism: store.get(user, mechanism) is not None)
    store.apply(planned.upserts, planned.deletions)
    return planned.response
