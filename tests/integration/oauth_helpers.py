"""A real OAUTHBEARER validator for tests/integration/test_security_oauthbearer.py, plugged in the
way a user plugs theirs (`sasl.server.callback.handler.python=tests.integration.oauth_helpers:HS256Validator`):
JWTs signed with HMAC-SHA256 under a shared secret from the listener's JAAS options, the principal
from `sub`, and a `tenant` extension (KIP-342) that must be one of the JAAS option `tenants`; and a coroutine validator
(`oauth_helpers:slow_unsecured`), as one that fetches keys would be."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from minibroker.security.oauthbearer import (
    InvalidExtensions,
    InvalidToken,
    OAuthBearerToken,
    UnsecuredJwsValidator,
)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hs256_jwt(secret: str, sub: str, lifetime_s: float = 3600) -> str:
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"sub": sub, "iat": int(time.time()), "exp": int(time.time() + lifetime_s)}).encode())
    sig = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


class HS256Validator:
    def __init__(self, options: Mapping[str, str]):
        self.secret = options["secret"].encode()
        self.tenants = set(options.get("tenants", "").split(","))

    def __call__(self, token: str, extensions: Mapping[str, str]) -> OAuthBearerToken:
        try:
            head, body, sig = token.split(".")
            claims: dict[str, Any] = json.loads(_unb64(body))
            good = hmac.compare_digest(_unb64(sig), hmac.new(self.secret, f"{head}.{body}".encode(),
                                                             hashlib.sha256).digest())
        except ValueError:
            raise InvalidToken("not a signed JWT") from None
        if not good:
            raise InvalidToken("bad signature")
        if claims.get("exp", 0) <= time.time():
            raise InvalidToken("expired")
        if "tenant" in extensions and extensions["tenant"] not in self.tenants:
            raise InvalidExtensions({"tenant": "unknown tenant"})
        return OAuthBearerToken(token, str(claims["sub"]), int(claims["exp"] * 1000))


async def slow_unsecured(token: str, extensions: Mapping[str, str]) -> OAuthBearerToken:
    await asyncio.sleep(0.05)  # a key fetch, say: the broker's loop goes on meanwhile
    return UnsecuredJwsValidator({})(token, extensions)
