"""CreateDelegationToken v1-3, RenewDelegationToken v1-2, ExpireDelegationToken v1-2,
DescribeDelegationToken v1-3 (KIP-48, KIP-373; v0 is gone from Kafka 4's definitions).

Behavior as Kafka's KafkaApis and DelegationTokenControlManager: a connection that is PLAINTEXT, SSL
without a client certificate, or authenticated with a token gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
(KafkaApis.allowTokenRequests); then, without `delegation.token.secret.key`,
DELEGATION_TOKEN_AUTH_DISABLED. Create: a token for another owner (v3) needs CREATE_TOKENS on that
owner's USER resource (else DELEGATION_TOKEN_AUTHORIZATION_FAILED); renewers must be User
principals (INVALID_PRINCIPAL_TYPE). Renew and Expire go by the HMAC: unknown
DELEGATION_TOKEN_NOT_FOUND, not the owner or a renewer DELEGATION_TOKEN_OWNER_MISMATCH, past its
expiry DELEGATION_TOKEN_EXPIRED (minibroker.security.delegation_tokens has the order). Describe
lists the tokens of the owners asked (null: all) that the principal owns, renews or requested, or
may DESCRIBE (DELEGATION_TOKEN resource) or DESCRIBE_TOKENS (owner's USER resource).
Version notes: v3 of Create and Describe adds the owner and the requester (KIP-373).
KRaft mode: Create, Renew and Expire go to the controller after the checks of `create_refused`,
`renew_refused`, `expire_refused` (minibroker.metadata.delegation_token_forwarding); Describe reads
the cache the metadata image fills (minibroker.metadata.delegation_token_publisher).
"""

from __future__ import annotations

from minibroker.handlers.registry import RequestContext, handles
from minibroker.security.authorizer import AclOperation, ResourceType
from minibroker.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    DelegationTokenCache,
    TokenInformation,
    plan_create,
    plan_expire,
    plan_renew,
    visible,
)
from minibroker.security.sasl import SaslAuthenticator
from minibroker_protocol.apis import (
    create_delegation_token,
    describe_delegation_token,
    expire_delegation_token,
    renew_delegation_token,
)
from minibroker_protocol.errors import ErrorCode

ANONYMOUS = "User:ANONYMOUS"


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _tokens_allowed(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: not over PLAINTEXT, not over SSL without a client certificate,
    not by a connection that authenticated with a token."""
    conn = ctx.connection
    if conn is None:
        return False
    auth = conn.authenticator
    if isinstance(auth, SaslAuthenticator):
        return not auth.token_authenticated
    endpoint = ctx.services.advertised.get(conn.listener) if conn.listener is not None else None
    protocol = endpoint.security_protocol if endpoint is not None else "PLAINTEXT"
    return protocol == "SSL" and conn.principal != ANONYMOUS


def _cache(ctx: RequestContext) -> DelegationTokenCache | None:
    """The token cache, None when delegation.token.secret.key is unset."""
    return ctx.services.scram_credentials.token_cache


CR = create_delegation_token.RESPONSE


def _create_names(ctx: RequestContext, req: create_delegation_token.CreateDelegationTokenRequest
                  ) -> tuple[str, str]:
    """(owner, requester) of a Create: the owner is the requester unless v3 names one."""
    requester = ctx.principal[0]
    owner = f"{req.owner_principal_type}:{req.owner_principal_name}" if req.owner_principal_name else requester
    return owner, requester


def _create_refusal(owner: str, requester: str, code: int, ts: int = ERROR_TIMESTAMP
                    ) -> create_delegation_token.CreateDelegationTokenResponse:
    (otype, oname), (rtype, rname) = _split(owner), _split(requester)
    return CR(error_code=code, principal_type=otype, principal_name=oname, token_requester_principal_type=rtype,
              token_requester_principal_name=rname, issue_timestamp_ms=ts, expiry_timestamp_ms=ts,
              max_timestamp_ms=ts, token_id="", hmac=b"")


def create_refused(ctx: RequestContext, req: create_delegation_token.CreateDelegationTokenRequest
                   ) -> create_delegation_token.CreateDelegationTokenResponse | None:
    """The broker's own checks of a Create (a KRaft broker makes them before forwarding it)."""
    owner, requester = _create_names(ctx, req)
    if not _tokens_allowed(ctx):
        return _create_refusal(owner, requester, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not ctx.authorized(AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
        return _create_refusal(owner, requester, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(r.principal_type != "User" for r in req.renewers):
        return _create_refusal(owner, requester, ErrorCode.INVALID_PRINCIPAL_TYPE)
    if _cache(ctx) is None:  # the controller's answer: its timestamps stay 0
        return _create_refusal(owner, requester, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
    return None


@handles(create_delegation_token.API, "1-3")
async def handle_create_delegation_token(ctx: RequestContext, req: create_delegation_token.CreateDelegationTokenRequest) -> create_delegation_token.CreateDelegationTokenResponse:
    if (refused := create_refused(ctx, req)) is not None:
        return refused
    owner, requester = _create_names(ctx, req)
    (otype, oname), (rtype, rname) = _split(owner), _split(requester)
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in req.renewers]
    cache = _cache(ctx)
    assert cache is not None
    code, token = plan_create(owner, requester, renewers, req.max_lifetime_ms, ctx.services.clock(),
                              cache.max_lifetime_ms, cache.expiry_time_ms)
    if token is None:
        return _create_refusal(owner, requester, code, 0)
    cache.put(token)
    return CR(error_code=ErrorCode.NONE, principal_type=otype, principal_name=oname,
              token_requester_principal_type=rtype, token_requester_principal_name=rname,
              issue_timestamp_ms=token.issue_timestamp, expiry_timestamp_ms=token.expiry_timestamp,
              max_timestamp_ms=token.max_timestamp, token_id=token.token_id, hmac=cache.hmac_of(token.token_id))


def renew_refused(ctx: RequestContext) -> renew_delegation_token.RenewDelegationTokenResponse | None:
    """The broker's own checks of a Renew (a KRaft broker makes them before forwarding it)."""
    R = renew_delegation_token.RESPONSE
    if not _tokens_allowed(ctx):
        return R(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=ERROR_TIMESTAMP)
    if _cache(ctx) is None:
        return R(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, expiry_timestamp_ms=0)
    return None


def expire_refused(ctx: RequestContext) -> expire_delegation_token.ExpireDelegationTokenResponse | None:
    """The broker's own checks of an Expire (a KRaft broker makes them before forwarding it)."""
    R = expire_delegation_token.RESPONSE
    if not _tokens_allowed(ctx):
        return R(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=ERROR_TIMESTAMP)
    if _cache(ctx) is None:
        return R(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, expiry_timestamp_ms=0)
    return None


@handles(renew_delegation_token.API, "1-2")
async def handle_renew_delegation_token(ctx: RequestContext, req: renew_delegation_token.RenewDelegationTokenRequest) -> renew_delegation_token.RenewDelegationTokenResponse:
    R = renew_delegation_token.RESPONSE
    if (refused := renew_refused(ctx)) is not None:
        return refused
    cache = _cache(ctx)
    assert cache is not None
    code, token = plan_renew(cache.token_for_hmac(req.hmac), ctx.principal[0], req.renew_period_ms,
                             ctx.services.clock(), cache.expiry_time_ms)
    if token is None:
        return R(error_code=code, expiry_timestamp_ms=0)
    cache.put(token)
    return R(error_code=ErrorCode.NONE, expiry_timestamp_ms=token.expiry_timestamp)


@handles(expire_delegation_token.API, "1-2")
async def handle_expire_delegation_token(ctx: RequestContext, req: expire_delegation_token.ExpireDelegationTokenRequest) -> expire_delegation_token.ExpireDelegationTokenResponse:
    R = expire_delegation_token.RESPONSE
    if (refused := expire_refused(ctx)) is not None:
        return refused
    cache = _cache(ctx)
    assert cache is not None
    old = cache.token_for_hmac(req.hmac)
    code, token, expiry = plan_expire(old, ctx.principal[0], req.expiry_time_period_ms, ctx.services.clock())
    if code != ErrorCode.NONE:
        return R(error_code=code, expiry_timestamp_ms=0)
    if token is None:
        assert old is not None
        cache.remove([old.token_id])
    else:
        cache.put(token)
    return R(error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry)


DR = describe_delegation_token.RESPONSE


def _described(cache: DelegationTokenCache, t: TokenInformation) -> describe_delegation_token.DescribeDelegationTokenResponse.DescribedDelegationToken:
    (otype, oname), (rtype, rname) = _split(t.owner), _split(t.token_requester)
    return DR.DescribedDelegationToken(
        principal_type=otype, principal_name=oname, token_requester_principal_type=rtype,
        token_requester_principal_name=rname, issue_timestamp=t.issue_timestamp, expiry_timestamp=t.expiry_timestamp,
        max_timestamp=t.max_timestamp, token_id=t.token_id, hmac=cache.hmac_of(t.token_id),
        renewers=[DR.DescribedDelegationTokenRenewer(principal_type=k, principal_name=n)
                  for k, n in map(_split, t.renewers)])


@handles(describe_delegation_token.API, "1-3")
async def handle_describe_delegation_token(ctx: RequestContext, req: describe_delegation_token.DescribeDelegationTokenRequest) -> describe_delegation_token.DescribeDelegationTokenResponse:
    if not _tokens_allowed(ctx):
        return DR(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[])
    cache = _cache(ctx)
    if cache is None:
        return DR(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[])
    if req.owners is not None and not req.owners:
        return DR(error_code=ErrorCode.NONE, tokens=[])
    principal = ctx.principal[0]
    owners = None if req.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in req.owners]

    def may_describe_token(token_id: str) -> bool:
        return ctx.authorized(AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id)

    def may_describe_owner(owner: str) -> bool:
        return ctx.authorized(AclOperation.DESCRIBE_TOKENS, ResourceType.USER, owner)

    return DR(error_code=ErrorCode.NONE, tokens=[
        _described(cache, t) for t in cache.tokens()
        if visible(t, principal, owners, may_describe_token, may_describe_owner)])
