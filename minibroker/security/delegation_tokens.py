"""Delegation tokens (KIP-48, KIP-373): what a token is, the decisions on it, and where it is kept.

Theory of operation. A user authenticated by SASL (or by a TLS client certificate) asks for a token
(CreateDelegationToken); the broker answers its id and its HMAC, HMAC-SHA512 of the id keyed by
`delegation.token.secret.key` (Kafka: DelegationTokenControlManager.createHmac). A client then
authenticates with SCRAM, the token id as user name, the base64 HMAC as password and the extension
`tokenauth=true`; the connection's principal is the token's owner, marked token-authenticated (so it
may not ask for tokens itself). The SCRAM credentials of a token are derived from its HMAC with the
mechanism's minimum iterations, as Kafka's DelegationTokenManager.prepareScramCredentials does.

Nothing secret is kept: the store (`delegation-tokens.json` in the data directory, mode 0600,
rewritten whole: temporary file, fsync, rename) holds what Kafka's DelegationTokenRecord holds (id,
owner, requester, renewers, issue, max and expiry timestamps); the HMAC is derived again from the
secret key when the token is loaded, so a broker restarted with another key has tokens no client
can use, as Kafka's.

The decisions (`plan_create`, `plan_renew`, `plan_expire`, `expired`) are pure functions of the
token, the principal and the time, in Kafka's order of checks (DelegationTokenControlManager), so
a KRaft controller can make them as a single broker does.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from minibroker_protocol.errors import ErrorCode

if TYPE_CHECKING:
    # scram.py comes with the first SCRAM exchange (sasl.py derives a token's credentials), not with
    # a broker starting with tokens on (issue 22)
    from minibroker.config import BrokerConfig
    from minibroker.security.scram import ScramCredential

log = logging.getLogger("minibroker.security")

FILE_NAME = "delegation-tokens.json"
ERROR_TIMESTAMP = -1  # Kafka: DelegationTokenManager.ErrorTimestamp


@dataclass(frozen=True, slots=True)
class TokenInformation:
    """One token as Kafka's TokenInformation: principals as "Type:name" strings."""

    token_id: str
    owner: str
    token_requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: str) -> bool:
        """Who may describe the token as their own (KIP-373: the requester too)."""
        return principal in (self.owner, self.token_requester) or principal in self.renewers

    def allowed_to_renew(self, principal: str) -> bool:
        """Who may renew or expire it: the owner and the renewers (not the requester)."""
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_timestamp < now_ms or self.expiry_timestamp < now_ms


def create_hmac(secret_key: str, token_id: str) -> bytes:
    """HMAC-SHA512 of the token id keyed by the secret (Kafka: createHmac)."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """A random id as Kafka's Uuid.randomUuid().toString(): a version-4 UUID's 16 bytes in url-safe
    base64 without padding, never starting with '-' (Kafka draws again then)."""
    while True:
        b = bytearray(os.urandom(16))
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        text = base64.urlsafe_b64encode(bytes(b)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _sum(now: int, duration: int) -> int:
    return min(now + duration, (1 << 63) - 1)


def plan_create(owner: str, requester: str, renewers: list[str], max_lifetime_ms: int, now_ms: int,
                default_max_lifetime_ms: int, default_renew_ms: int) -> tuple[int, TokenInformation | None]:
    """(error, the new token) for CreateDelegationToken: the requested lifetime capped at
    delegation.token.max.lifetime.ms, the first expiry delegation.token.expiry.time.ms away."""
    if any(not r.startswith("User:") for r in renewers):
        return ErrorCode.INVALID_PRINCIPAL_TYPE, None
    max_life = min(default_max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else default_max_lifetime_ms
    max_ts = _sum(now_ms, max_life)
    return ErrorCode.NONE, TokenInformation(new_token_id(), owner, requester, tuple(renewers), now_ms, max_ts,
                                            min(max_ts, _sum(now_ms, default_renew_ms)))


def plan_renew(token: TokenInformation | None, principal: str, renew_period_ms: int, now_ms: int,
               default_renew_ms: int) -> tuple[int, TokenInformation | None]:
    """(error, the renewed token): expired before owner mismatch, as Kafka checks them."""
    if token is None:
        return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, None
    if token.expired(now_ms):
        return ErrorCode.DELEGATION_TOKEN_EXPIRED, None
    if not token.allowed_to_renew(principal):
        return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, None
    life = min(default_renew_ms, renew_period_ms) if renew_period_ms > 0 else default_renew_ms
    return ErrorCode.NONE, replace(token, expiry_timestamp=min(token.max_timestamp, now_ms + life))


def plan_expire(token: TokenInformation | None, principal: str, expiry_period_ms: int,
                now_ms: int) -> tuple[int, TokenInformation | None, int]:
    """(error, the token with its new expiry or None when it goes now, the expiry to answer):
    owner mismatch before expired, and a negative period removes the token at once."""
    if token is None:
        return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, None, ERROR_TIMESTAMP
    if not token.allowed_to_renew(principal):
        return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, None, ERROR_TIMESTAMP
    if expiry_period_ms < 0:
        return ErrorCode.NONE, None, now_ms
    if token.expired(now_ms):
        return ErrorCode.DELEGATION_TOKEN_EXPIRED, None, ERROR_TIMESTAMP
    expiry = min(token.max_timestamp, _sum(now_ms, expiry_period_ms))
    return ErrorCode.NONE, replace(token, expiry_timestamp=expiry), expiry


def visible(token: TokenInformation, principal: str, owners: list[str] | None,
            may_describe_token: Callable[[str], bool], may_describe_owner: Callable[[str], bool]) -> bool:
    """Whether DescribeDelegationToken lists the token (Kafka: DelegationTokenManager.filterToken):
    asked for (owners null: all), then the principal's own, or DESCRIBE on the DELEGATION_TOKEN
    resource, or DESCRIBE_TOKENS on the owner's USER resource (KIP-373)."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    return (token.owner_or_renewer(principal) or may_describe_token(token.token_id)
            or may_describe_owner(token.owner))


class DelegationTokenCache:
    """The tokens this broker knows, by id and by HMAC, with their SCRAM credentials (Kafka:
    DelegationTokenCache); persisted in the data directory unless the metadata log holds them."""

    def __init__(self, data_dir: Path, secret_key: str | None, *, max_lifetime_ms: int = 7 * 24 * 3600 * 1000,
                 expiry_time_ms: int = 24 * 3600 * 1000):
        self.path = Path(data_dir) / FILE_NAME
        self.secret_key = secret_key
        self.max_lifetime_ms = max_lifetime_ms  # delegation.token.max.lifetime.ms
        self.expiry_time_ms = expiry_time_ms  # delegation.token.expiry.time.ms
        self.persist = True  # False in KRaft mode: the metadata log holds them
        self._tokens: dict[str, TokenInformation] = {}
        self._by_hmac: dict[str, str] = {}  # base64 HMAC -> token id
        self._credentials: dict[tuple[str, str], ScramCredential] = {}  # (token id, mechanism)

    @property
    def enabled(self) -> bool:
        """delegation.token.secret.key is set (Kafka: tokenAuthEnabled)."""
        return self.secret_key is not None

    def hmac_of(self, token_id: str) -> bytes:
        assert self.secret_key is not None
        return create_hmac(self.secret_key, token_id)

    # -- reading ------------------------------------------------------------------------------
    def token(self, token_id: str) -> TokenInformation | None:
        return self._tokens.get(token_id)

    def token_for_hmac(self, hmac_bytes: bytes) -> TokenInformation | None:
        token_id = self._by_hmac.get(base64.b64encode(hmac_bytes).decode())
        return self._tokens.get(token_id) if token_id is not None else None

    def tokens(self) -> list[TokenInformation]:
        return sorted(self._tokens.values(), key=lambda t: (t.issue_timestamp, t.token_id))

    def credential(self, token_id: str, mechanism: str, make: Callable[[str], ScramCredential]) -> ScramCredential | None:
        """The token's SCRAM credential for `mechanism`, made by `make(password)` on first use (the
        password a client sends is the base64 HMAC; Kafka: prepareScramCredentials, with the
        mechanism's minimum iterations) and kept while the token lives."""
        if token_id not in self._tokens or self.secret_key is None:
            return None
        key = (token_id, mechanism)
        cred = self._credentials.get(key)
        if cred is None:
            cred = self._credentials[key] = make(base64.b64encode(self.hmac_of(token_id)).decode())
        return cred

    # -- changing -----------------------------------------------------------------------------
    def put(self, token: TokenInformation) -> None:
        self._set({**self._tokens, token.token_id: token})

    def remove(self, token_ids: Iterable[str]) -> None:
        gone = set(token_ids)
        if gone & self._tokens.keys():
            self._set({i: t for i, t in self._tokens.items() if i not in gone})

    def set_tokens(self, tokens: Iterable[TokenInformation]) -> None:
        """The whole set, as the metadata image holds it (KRaft mode)."""
        self._set({t.token_id: t for t in tokens}, write=False)

    def use_metadata_log(self) -> None:
        self.persist = False
        self._set({}, write=False)

    def sweep(self, now_ms: int) -> list[TokenInformation]:
        """Remove the expired tokens (Kafka: sweepExpiredDelegationTokens, every
        delegation.token.expiry.check.interval.ms); the ones removed."""
        gone = [t for t in self._tokens.values() if t.expired(now_ms)]
        for t in gone:
            log.info("Delegation token expired for token: %s for owner: %s", t.token_id, t.owner)
        self.remove(t.token_id for t in gone)
        return gone

    def _set(self, tokens: dict[str, TokenInformation], *, write: bool = True) -> None:
        if write and self.persist:
            self._write(tokens)
        self._tokens = tokens
        self._by_hmac = ({base64.b64encode(self.hmac_of(i)).decode(): i for i in tokens}
                         if self.secret_key is not None else {})
        self._credentials = {k: c for k, c in self._credentials.items() if k[0] in tokens}

    # -- the file -----------------------------------------------------------------------------
    def load(self) -> None:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        tokens = {t["token_id"]: TokenInformation(
            t["token_id"], t["owner"], t["token_requester"], tuple(t["renewers"]), int(t["issue_timestamp"]),
            int(t["max_timestamp"]), int(t["expiry_timestamp"])) for t in raw.get("tokens", [])}
        self._set(tokens, write=False)
        log.info("loaded %d delegation tokens from %s", len(tokens), self.path)

    def _write(self, tokens: dict[str, TokenInformation]) -> None:
        doc = {"version": 1, "tokens": [
            {"token_id": t.token_id, "owner": t.owner, "token_requester": t.token_requester,
             "renewers": list(t.renewers), "issue_timestamp": t.issue_timestamp,
             "max_timestamp": t.max_timestamp, "expiry_timestamp": t.expiry_timestamp}
            for t in tokens.values()]}
        tmp = self.path.with_suffix(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def delegation_token_cache(config: BrokerConfig, data_dir: Path) -> DelegationTokenCache | None:
    """The broker's token cache, loaded from the data directory; None when tokens are off (no
    delegation.token.secret.key nor its deprecated alias delegation.token.master.key)."""
    secret = config.get("delegation.token.secret.key") or config.get("delegation.token.master.key")
    if not secret:
        return None
    cache = DelegationTokenCache(data_dir, str(secret), max_lifetime_ms=int(config.get("delegation.token.max.lifetime.ms")),
                                 expiry_time_ms=int(config.get("delegation.token.expiry.time.ms")))
    cache.load()
    return cache


async def sweep_expired(cache: DelegationTokenCache, clock: Callable[[], int], interval_ms: int) -> None:
    """Remove expired tokens every delegation.token.expiry.check.interval.ms (Kafka: the
    controller's periodic sweepExpiredDelegationTokens), until cancelled."""
    while True:
        await asyncio.sleep(interval_ms / 1000)
        cache.sweep(clock())
