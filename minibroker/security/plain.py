"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: one message `authzid NUL user NUL password`,
checked against the users of the listener's JAAS config (`user_<name>="<password>"`).

Kafka tells the client why a PLAIN login failed (these messages reach the client as they are):
no user name, no password, an authorization id other than the user, or a wrong user or password.
A malformed message gets the authenticator's generic message instead.
"""

from __future__ import annotations

import hmac


class PlainAuthFailed(Exception):
    """A failure whose message Kafka sends to the client (its SaslAuthenticationException)."""


class PlainMalformed(Exception):
    """A message that is not PLAIN (Kafka: SaslException, answered with the generic message)."""


class PlainServer:
    def __init__(self, users: dict[str, str]):
        self._users = users
        self.user: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        try:
            parts = token.decode("utf-8").split("\0")
        except UnicodeDecodeError:
            raise PlainMalformed("SASL/PLAIN message is not UTF-8") from None
        if len(parts) != 3:
            raise PlainMalformed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, user, password = parts
        if not user:
            raise PlainAuthFailed("Authentication failed: username not specified")
        if not password:
            raise PlainAuthFailed("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compare_digest: the time taken does not tell how much of the password was right
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise PlainAuthFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise PlainAuthFailed("Authentication failed: Client requested an authorization id that is "
                                  "different from username")
        self.user = user
        self.complete = True
        return b""
