"""SASL/OAUTHBEARER (RFC 7628, KIP-255, KIP-342 extensions) as Kafka's OAuthBearerSaslServer runs it,
with Kafka's unsecured JWS validator as the default and a hook for a real one.

The exchange, server side. The client's first message is `n,[a=authzid],^Aauth=Bearer <token>^A
[key=value^A...]^A` (^A = 0x01; the key=value pairs other than `auth` are SASL extensions,
KIP-342). The token goes to the listener's validator:

- accepted: the principal is the token's principal name, the exchange is complete, and the
  token's expiry bounds the session (KIP-368: the session lifetime is the smaller of the time to
  expiry and `connections.max.reauth.ms`);
- refused: the server answers with an RFC 7628 error *challenge*, the JSON
  `{"status":"invalid_token"}` (or `"insufficient_scope"` with the scope missing), not yet a
  failure; the client acknowledges it with a single 0x01 byte and only then does the exchange
  fail, with that JSON as SASL_AUTHENTICATION_FAILED's message.

A message that is not a client first message is answered with the authenticator's generic
message; an authorization id other than the token's principal and invalid extensions fail with
Kafka's own messages.

The unsecured validator (Kafka: OAuthBearerUnsecuredValidatorCallbackHandler, for development:
it trusts any token with `alg: none`) reads the JAAS options of the listener's
`oauthbearer.sasl.jaas.config`: `unsecuredValidatorPrincipalClaimName` (default `sub`),
`unsecuredValidatorScopeClaimName` (default `scope`), `unsecuredValidatorRequiredScope`
(space-separated) and `unsecuredValidatorAllowableClockSkewMs` (default 0). It checks what Kafka's
checks: three dot-separated base64url parts with an empty signature, `alg` `none`, a numeric `exp`
not past, an `iat` (if any) not in the future and before `exp`, a non-blank string principal
claim, and the required scope.

A real validator is a Python callable named by `sasl.server.callback.handler.python`
(`package.module:name`; per listener `listener.name.<l>.oauthbearer.sasl.server.callback.handler.python`),
in the place of Kafka's `sasl.server.callback.handler.class`. A class is instantiated with the JAAS
options (as Kafka configures its handler); any other callable is used as it is. It is called as
`validate(token, extensions)` and returns an `OAuthBearerToken` (or an awaitable of one: a
coroutine function may fetch keys without blocking the loop), or raises `InvalidToken` (the error
challenge) or `InvalidExtensions`. JWKS validation (KIP-768, Kafka's
OAuthBearerValidatorCallbackHandler) is not built in.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import inspect
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

# A JSON value, read-only (so that narrower values, such as a list of strings, are JSON values too).
JsonValue: TypeAlias = "str | int | float | bool | None | Sequence[JsonValue] | Mapping[str, JsonValue]"
# A claim or header value of an unsecured JWS as Kafka's OAuthBearerUnsecuredJws.toMap leaves it:
# a number, a list of strings, or anything else as its text.
Claim: TypeAlias = str | int | float | list[str]


@dataclass(frozen=True)
class OAuthBearerToken:
    """A validated token (Kafka: OAuthBearerToken)."""

    value: str
    principal: str
    lifetime_ms: int  # when it expires, ms since the epoch
    scope: frozenset[str] = frozenset()
    start_ms: int | None = None
    claims: Mapping[str, JsonValue] = field(default_factory=dict, repr=False)


class InvalidToken(Exception):
    """The validator refuses the token: answered with RFC 7628's JSON error challenge. `reason`
    is for the broker's log only."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None,
                 openid_configuration: str | None = None):
        super().__init__(reason)
        self.status, self.scope, self.openid_configuration = status, scope, openid_configuration


class InvalidExtensions(Exception):
    """Some SASL extensions are not acceptable: extension name -> why."""

    def __init__(self, invalid: Mapping[str, str]):
        super().__init__(", ".join(invalid))
        self.invalid = dict(invalid)


class OAuthBearerAuthFailed(Exception):
    """A failure whose message Kafka sends to the client; `reason` goes to the broker's log."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class OAuthBearerMalformed(Exception):
    """Not an OAUTHBEARER client first message (answered with the generic message)."""


class OAuthBearerClose(Exception):
    """Input on which Kafka's server fails with an unexpected exception and closes the connection
    without an answer (a JWS header without `alg`, a scheme other than Bearer)."""


Validator = Callable[[str, Mapping[str, str]], "OAuthBearerToken | Awaitable[OAuthBearerToken]"]

# RFC 7628 section 3.1 as Kafka's OAuthBearerClientInitialResponse reads it
_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEP}(?P<kvpairs>(?:{_KEY}={_VALUE}{_SEP})*){_SEP}")
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_.a-zA-Z0-9]+)")


class OAuthBearerServer:
    """One OAUTHBEARER exchange, server side (Kafka: OAuthBearerSaslServer)."""

    def __init__(self, validator: Validator):
        self._validator = validator
        self.user: str | None = None
        self.complete = False
        self.credential_expiry_ms: int | None = None  # the token's expiry, once complete
        self.rejection: str | None = None  # why the last token was refused (for the log)
        self._error: str | None = None  # the JSON error challenge sent, awaiting the client's 0x01

    async def evaluate(self, response: bytes) -> bytes:
        if response == b"\x01" and self._error is not None:
            # the client acknowledged our error challenge: now the exchange fails (RFC 7628 3.2.3)
            raise OAuthBearerAuthFailed(self._error, f"token refused ({self.rejection})")
        self._error = self.rejection = None
        # Kafka decodes as UTF-8 with replacement: bad bytes then fail the pattern below
        m = _CLIENT_FIRST.fullmatch(response.decode("utf-8", errors="replace"))
        if m is None:
            raise OAuthBearerMalformed("Invalid OAUTHBEARER client first message")
        pairs: dict[str, str] = {}
        for item in m["kvpairs"].split(_SEP):
            if item:
                key, value = item.split("=", 1)
                pairs[key] = value
        auth = pairs.pop("auth", None)
        if auth is None:
            raise OAuthBearerMalformed("Invalid OAUTHBEARER client first message: 'auth' not specified")
        am = _AUTH.fullmatch(auth)
        if am is None:
            raise OAuthBearerMalformed("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if am["scheme"].lower() != "bearer":
            # Kafka 4.4 fails while formatting its own message here and drops the connection
            raise OAuthBearerClose(f"OAUTHBEARER scheme {am['scheme'][:40]!r} is not Bearer")
        return await self._process(am["token"], m["authzid"] or "", pairs)

    async def _process(self, token_value: str, authzid: str, extensions: dict[str, str]) -> bytes:
        try:
            result = self._validator(token_value, extensions)
            token = await result if inspect.isawaitable(result) else result
        except InvalidToken as e:
            # Kafka's text as it formats it (not a JSON encoder: no escaping, ", " between members)
            error = f'{{"status":"{e.status}"'
            if e.scope is not None:
                error += f', "scope":"{e.scope}"'
            if e.openid_configuration is not None:
                error += f', "openid-configuration":"{e.openid_configuration}"'
            self._error, self.rejection = error + "}", str(e)
            return self._error.encode()
        except InvalidExtensions as e:
            listed = "; ".join(f"{k}: {v}" for k, v in e.invalid.items())
            raise OAuthBearerAuthFailed(f"Authentication failed: {len(e.invalid)} extensions are invalid! "
                                        f"They are: {listed}") from None
        if authzid and authzid != token.principal:
            raise OAuthBearerAuthFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different "
                f"from the token's principal name ({token.principal})")
        self.user, self.credential_expiry_ms, self.complete = token.principal, token.lifetime_ms, True
        return b""


# -- Kafka's unsecured JWS validator ---------------------------------------------------------------
def _text(value: JsonValue) -> str:
    """A JSON value as Jackson's asText() gives it (Kafka reads the claims that way)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return ""
    return str(value)


def _part(split: str) -> dict[str, Claim]:
    """One base64url JSON part of a compact serialization, as Kafka's OAuthBearerUnsecuredJws.toMap:
    numbers stay numbers, arrays become lists of strings, anything else a string; a JSON value that
    is not an object is an empty map."""
    if len(split) % 4 == 1:
        raise InvalidToken("malformed Base64 URL encoded value")
    try:
        raw = base64.urlsafe_b64decode(split + "=" * (-len(split) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(data, dict):
        return {}
    out: dict[str, Claim] = {}
    for k, v in data.items():
        if isinstance(v, list):
            out[k] = [_text(e) for e in v]
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
        else:
            out[k] = _text(v)
    return out


def _number(claims: Mapping[str, Claim], name: str) -> int | float | None:
    v = claims.get(name)
    if v is not None and not isinstance(v, (int, float)):
        raise InvalidToken(f"The '{name}' claim was not of type Number: {type(v).__name__}")
    return v


def _ms(seconds: float) -> int:
    return math.floor(seconds * 1000 + 0.5)  # Java's Math.round


class UnsecuredJwsValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, configured with the JAAS options."""

    def __init__(self, options: Mapping[str, str], clock: Callable[[], float] = time.time):
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
        self.required_scope = [s for s in (options.get("unsecuredValidatorRequiredScope") or "").split(" ") if s]
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "").strip() or "0"
        try:
            self.clock_skew_ms = int(skew)
        except ValueError:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs={skew!r} is not an integer") from None
        if self.clock_skew_ms < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew}")
        self._clock = clock

    def __call__(self, token: str, extensions: Mapping[str, str]) -> OAuthBearerToken:
        # every extension is accepted, as Kafka's unsecured handler does
        if ".." in token:
            raise InvalidToken("Malformed compact serialization contains '..'")
        splits = token.split(".")
        while splits and splits[-1] == "":
            splits.pop()  # as Java's String.split, then Kafka adds back one empty signature
        if token.endswith("."):
            splits.append("")
        if len(splits) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                               "values")
        header, claims = _part(splits[0]), _part(splits[1])
        if "alg" not in header:
            raise OAuthBearerClose("JWS header must have an Algorithm value")
        if _text(header["alg"]) != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if splits[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        scope = self._scope(claims)
        exp = _number(claims, "exp")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if principal is not None and not isinstance(principal, str):
            raise InvalidToken(f"The '{self.principal_claim}' claim was not of type String: {type(principal).__name__}")
        if principal is None or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        iat = _number(claims, "iat")
        now_ms = int(self._clock() * 1000)
        if iat is not None and 1000 * iat > now_ms + self.clock_skew_ms:
            raise InvalidToken(f"The Issued At value ({iat} seconds) was after the indicated time ({now_ms} ms) "
                               f"plus allowable clock skew ({self.clock_skew_ms} ms)")
        if now_ms - self.clock_skew_ms >= 1000 * exp:
            raise InvalidToken(f"The indicated time ({now_ms} ms) minus allowable clock skew ({self.clock_skew_ms} "
                               f"ms) was on or after the Expiration Time value ({exp} seconds)")
        if iat is not None and exp <= iat:
            raise InvalidToken(f"The Expiration Time time ({exp} seconds) was not after the Issued At time "
                               f"({iat} seconds)")
        for required in self.required_scope:
            if required not in scope:
                # Kafka names the whole required list, as Java prints a List
                raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({required})",
                                   status="insufficient_scope", scope="[" + ", ".join(self.required_scope) + "]")
        return OAuthBearerToken(token, principal, _ms(exp), frozenset(scope),
                                _ms(iat) if iat is not None else None, claims)

    def _scope(self, claims: Mapping[str, Claim]) -> set[str]:
        value = claims.get(self.scope_claim)
        if value is None:
            return set()
        if isinstance(value, str):
            return {value.strip()} if value.strip() else set()
        if isinstance(value, list):
            return {s.strip() for s in value if s.strip()}
        raise InvalidToken(f"The '{self.scope_claim}' claim was not of type List: {type(value).__name__}")


def load_validator(name: str, options: Mapping[str, str]) -> Validator:
    """The callable `package.module:attribute` names; a class is instantiated with the JAAS options."""
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{name!r} is not 'package.module:callable'")
    try:
        obj: Any = importlib.import_module(module_name)  # whatever the configured name resolves to
    except ImportError as e:
        raise ValueError(f"cannot import {module_name}: {e}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{module_name} has no {attr}") from None
    if isinstance(obj, type):
        obj = obj(dict(options))
    if not callable(obj):
        raise ValueError(f"{name} is not callable")
    validator: Validator = obj
    return validator


def unsecured_jwt(principal: str, lifetime_s: float = 3600, scope: list[str] | str | None = None,
                  now: float | None = None, **claims: JsonValue) -> str:
    """An unsecured JWT (`alg: none`) as Kafka's unsecured login module makes them: for tests and
    for clients that take a token (kafka-python, aiokafka, kafkajs)."""
    now = time.time() if now is None else now
    body: dict[str, JsonValue] = {"sub": principal, "iat": int(now), "exp": int(now + lifetime_s), **claims}
    if scope is not None:
        body["scope"] = scope

    def enc(obj: Mapping[str, JsonValue]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()

    return f"{enc({'alg': 'none'})}.{enc(body)}."
