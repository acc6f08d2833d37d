"""Delegation tokens in the metadata log (Kafka: DelegationTokenControlManager, KIP-48).

A broker forwards CreateDelegationToken, RenewDelegationToken and ExpireDelegationToken here in an
Envelope with the client's principal (after its own checks: the connection may ask for tokens, the
CREATE_TOKENS ACL, the renewers' type). The controller decides them as a single broker does
(minibroker.security.delegation_tokens' plan_* functions, in Kafka's order of checks) against the
image's tokens, and each change is a DelegationTokenRecord (id, owner, requester, renewers,
timestamps) or a RemoveDelegationTokenRecord. The HMAC is in no record: the controller derives it
to answer Create and to find the token a Renew or Expire names, and every broker derives it again
from the same `delegation.token.secret.key` (minibroker.metadata.delegation_token_publisher).
Expired tokens are removed every `delegation.token.expiry.check.interval.ms` (Kafka:
QuorumController's sweepExpiredDelegationTokens task).
"""

from __future__ import annotations

import hmac as hmac_lib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.metadata.image import MetadataImage
from minibroker.security.delegation_tokens import (
    TokenInformation,
    create_hmac,
    plan_create,
    plan_expire,
    plan_renew,
)
from minibroker.security.principal_serde import EnvelopePrincipal
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import create_delegation_token, expire_delegation_token, renew_delegation_token
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import ApiMessageAndVersion
from minibroker_protocol.schema import Message

log = logging.getLogger("minibroker.controller")
Records = list[ApiMessageAndVersion]


@dataclass(frozen=True, slots=True)
class DelegationTokenSettings:
    secret_key: str | None = None  # delegation.token.secret.key (None: tokens disabled)
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000  # delegation.token.max.lifetime.ms
    expiry_time_ms: int = 24 * 3600 * 1000  # delegation.token.expiry.time.ms
    expiry_check_interval_ms: int = 3600 * 1000  # delegation.token.expiry.check.interval.ms


def token_information(r: mr.DelegationTokenRecord) -> TokenInformation:
    return TokenInformation(r.token_id, r.owner, r.requester, tuple(r.renewers), r.issue_timestamp,
                            r.max_timestamp, r.expiration_timestamp)


def token_record(t: TokenInformation) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.DELEGATION_TOKEN_RECORD(
        owner=t.owner, requester=t.token_requester, renewers=list(t.renewers), issue_timestamp=t.issue_timestamp,
        max_timestamp=t.max_timestamp, expiration_timestamp=t.expiry_timestamp, token_id=t.token_id), 0)


def _removal(token_id: str) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.REMOVE_DELEGATION_TOKEN_RECORD(token_id=token_id), 0)


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


class DelegationTokenControlManager:
    def __init__(self, settings: DelegationTokenSettings):
        self.settings = settings
        self._last_sweep_ms: int | None = None

    def decide(self, image: MetadataImage, who: EnvelopePrincipal | None, now_ms: int,
               req: Message) -> tuple[Records, Message]:
        """The records and the answer of a Create, Renew or Expire request."""
        if isinstance(req, create_delegation_token.CreateDelegationTokenRequest):
            return self.create(image, who, now_ms, req)
        if isinstance(req, renew_delegation_token.RenewDelegationTokenRequest):
            return self.renew(image, who, now_ms, req)
        assert isinstance(req, expire_delegation_token.ExpireDelegationTokenRequest)
        return self.expire(image, who, now_ms, req)

    def sweep_due(self, image: MetadataImage, now_ms: int) -> Records:
        """`sweep` once every delegation.token.expiry.check.interval.ms (nothing when tokens are off)."""
        if self.settings.secret_key is None:
            return []
        if self._last_sweep_ms is None:
            self._last_sweep_ms = now_ms
        if now_ms - self._last_sweep_ms < self.settings.expiry_check_interval_ms:
            return []
        self._last_sweep_ms = now_ms
        return self.sweep(image, now_ms)

    def _token_for_hmac(self, tokens: Mapping[str, mr.DelegationTokenRecord], given: bytes) -> TokenInformation | None:
        key = self.settings.secret_key
        assert key is not None
        for token_id, r in tokens.items():
            if hmac_lib.compare_digest(create_hmac(key, token_id), given):
                return token_information(r)
        return None

    def create(self, image: MetadataImage, who: EnvelopePrincipal | None, now_ms: int,
               req: create_delegation_token.CreateDelegationTokenRequest
               ) -> tuple[Records, create_delegation_token.CreateDelegationTokenResponse]:
        requester = who.principal if who is not None else "User:ANONYMOUS"
        owner = f"{req.owner_principal_type}:{req.owner_principal_name}" if req.owner_principal_name else requester
        (otype, oname), (rtype, rname) = _split(owner), _split(requester)
        R = create_delegation_token.RESPONSE

        def answer(code: int, t: TokenInformation | None = None, hmac: bytes = b"",
                   ) -> create_delegation_token.CreateDelegationTokenResponse:
            return R(error_code=code, principal_type=otype, principal_name=oname, token_requester_principal_type=rtype,
                     token_requester_principal_name=rname, issue_timestamp_ms=t.issue_timestamp if t else 0,
                     expiry_timestamp_ms=t.expiry_timestamp if t else 0, max_timestamp_ms=t.max_timestamp if t else 0,
                     token_id=t.token_id if t else "", hmac=hmac)

        if who is None or who.token_authenticated:  # not through a broker's Envelope, or by a token
            return [], answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        s = self.settings
        if s.secret_key is None:
            return [], answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        renewers = [f"{r.principal_type}:{r.principal_name}" for r in req.renewers]
        code, token = plan_create(owner, requester, renewers, req.max_lifetime_ms, now_ms, s.max_lifetime_ms,
                                  s.expiry_time_ms)
        if token is None:
            return [], answer(code)
        return [token_record(token)], answer(ErrorCode.NONE, token, create_hmac(s.secret_key, token.token_id))

    def renew(self, image: MetadataImage, who: EnvelopePrincipal | None, now_ms: int,
              req: renew_delegation_token.RenewDelegationTokenRequest
              ) -> tuple[Records, renew_delegation_token.RenewDelegationTokenResponse]:
        R = renew_delegation_token.RESPONSE
        if who is None or who.token_authenticated:
            return [], R(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=-1)
        if self.settings.secret_key is None:
            return [], R(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, expiry_timestamp_ms=0)
        code, token = plan_renew(self._token_for_hmac(image.delegation_tokens, req.hmac), who.principal,
                                 req.renew_period_ms, now_ms, self.settings.expiry_time_ms)
        if token is None:
            return [], R(error_code=code, expiry_timestamp_ms=0)
        return [token_record(token)], R(error_code=ErrorCode.NONE, expiry_timestamp_ms=token.expiry_timestamp)

    def expire(self, image: MetadataImage, who: EnvelopePrincipal | None, now_ms: int,
               req: expire_delegation_token.ExpireDelegationTokenRequest
               ) -> tuple[Records, expire_delegation_token.ExpireDelegationTokenResponse]:
        R = expire_delegation_token.RESPONSE
        if who is None or who.token_authenticated:
            return [], R(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=-1)
        if self.settings.secret_key is None:
            return [], R(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, expiry_timestamp_ms=0)
        old = self._token_for_hmac(image.delegation_tokens, req.hmac)
        code, token, expiry = plan_expire(old, who.principal, req.expiry_time_period_ms, now_ms)
        if code != ErrorCode.NONE:
            return [], R(error_code=code, expiry_timestamp_ms=0)
        if token is None:
            assert old is not None
            return [_removal(old.token_id)], R(error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry)
        return [token_record(token)], R(error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry)

    def sweep(self, image: MetadataImage, now_ms: int) -> Records:
        """RemoveDelegationTokenRecords of the expired tokens (Kafka: sweepExpiredDelegationTokens)."""
        out = []
        for token_id, r in sorted(image.delegation_tokens.items()):
            if token_information(r).expired(now_ms):
                log.info("Delegation token expired for token: %s for owner: %s", token_id, r.owner)
                out.append(_removal(token_id))
        return out
