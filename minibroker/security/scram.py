"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's broker runs them.

The exchange, server side: client-first `n,[a=authzid],n=user,r=cnonce[,ext=value...]` ->
server-first `r=cnonce+snonce,s=salt,i=iterations` -> client-final `c=biws,r=nonce[,ext...],p=proof`
-> server-final `v=signature`. Kafka's extensions ride in the first message: `tokenauth=true` says
the user name is a delegation token's id (KIP-48), looked up among the tokens, not the users. The broker keeps only the salt, the iteration count,
StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"),
never the password (Kafka: ScramCredential).

Failures raise `ScramError`; the authenticator answers them with Kafka's generic message, which
tells an unknown user from a wrong password no more than Kafka's does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

# Kafka's ScramMechanism: name -> (hash, its ApiKey-style type id in Describe/AlterUserScramCredentials)
MECHANISMS: dict[str, tuple[str, int]] = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
MECHANISM_BY_TYPE = {type_id: name for name, (_, type_id) in MECHANISMS.items()}
MIN_ITERATIONS = 4096  # both mechanisms (ScramMechanism.minIterations)
MAX_ITERATIONS = 16384  # AlterUserScramCredentials refuses more (ScramMechanism.maxIterations)


class ScramError(Exception):
    """The exchange failed; the message is for the broker's log, not for the client."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """Hi() of RFC 5802: PBKDF2 with HMAC over the mechanism's hash."""
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)


def credential_from_salted(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    hash_name = MECHANISMS[mechanism][0]
    client_key = _hmac(hash_name, salted, b"Client Key")
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = _hmac(hash_name, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = 4096,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = salted_password(MECHANISMS[mechanism][0], password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salt, salted, iterations)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# RFC 5802 section 7: a value is any printable char but ','; names escape ',' and '=' as =2C, =3D.
_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<saslname>(?:[\x21-\x2b\x2d-\x3c\x3e-\x7e]|=2C|=3D)+)"
    r",r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<extensions>(?:,[A-Za-z]+=[^,]*)*)")
_CLIENT_FINAL = re.compile(
    r"c=(?P<channel>[A-Za-z0-9+/=]+),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?:,[A-Za-z]+=[^,]*)*"
    r",p=(?P<proof>[A-Za-z0-9+/=]+)")


def username(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


@dataclass(frozen=True)
class TokenCredential:
    """A delegation token's credential for one mechanism, its owner (the principal the connection
    gets) and its expiry (KIP-368's session end; Kafka: DelegationTokenCredentialCallback)."""
    credential: ScramCredential
    owner: str  # "User:name"
    expiry_timestamp_ms: int


class ScramServer:
    """One SCRAM exchange, server side. `lookup(user)` returns the user's credential for this
    mechanism or None; `token_lookup(token_id)` a delegation token's (None: tokens not served)."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 token_lookup: Callable[[str], TokenCredential | None] | None = None):
        self.mechanism = mechanism
        self.hash_name = MECHANISMS[mechanism][0]
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._state = "first"
        self.user: str | None = None
        self.token_owner: str | None = None  # set when the client authenticated with a token
        self.credential_expiry_ms: int | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            self._state = "failed"
            raise ScramError("SCRAM message is not UTF-8") from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        self._state = "failed"
        raise ScramError(f"unexpected SCRAM message in state {self._state}")

    def _first(self, text: str) -> bytes:
        self._state = "failed"
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM client first message")
        extensions = dict(e.split("=", 1) for e in m["extensions"].split(",")[1:])
        user = username(m["saslname"])
        if extensions.get("tokenauth", "").lower() == "true":
            token = self._token_lookup(user) if self._token_lookup is not None else None
            if token is None:
                raise ScramError(f"Token Authentication failed: Invalid tokenId : {user}")
            credential: ScramCredential | None = token.credential
            self.token_owner, self.credential_expiry_ms = token.owner, token.expiry_timestamp_ms
        else:
            credential = self._lookup(user)
        if credential is None:
            raise ScramError(f"no {self.mechanism} credential for user {user!r}")
        if m["authzid"] and m["authzid"] != user:
            raise ScramError("authorization id differs from the user name")
        if credential.iterations < MIN_ITERATIONS:
            raise ScramError(f"iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS}")
        self.user, self._credential = user, credential
        # base-36 letters and digits, as Kafka's ScramFormatter.secureRandomString
        self._nonce = m["nonce"] + "".join(secrets.choice("0123456789abcdefghijklmnopqrstuvwxyz") for _ in range(25))
        self._client_first_bare = text.split(",", 2)[2]  # without the GS2 header "n,[a=...],"
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        self._state = "failed"
        m = _CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM client final message")
        if m["nonce"] != self._nonce:
            raise ScramError("invalid client nonce in the final client message")
        credential = self._credential
        assert credential is not None
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(m["proof"], validate=True)
        except ValueError:
            raise ScramError("invalid SCRAM proof encoding") from None
        signature = _hmac(self.hash_name, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash_name, client_key).digest(), credential.stored_key):
            raise ScramError("invalid client credentials")
        self._credential = None
        self._state = "complete"
        return ("v=" + _b64(_hmac(self.hash_name, credential.server_key, auth_message))).encode()
