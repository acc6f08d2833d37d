"""The SASL exchange of a SASL_* listener's connection (Kafka: SaslServerAuthenticator).

Each such connection carries a `SaslAuthenticator` (`Channel.authenticator`); the dispatcher
(minibroker.kafka_apis) decodes each request header once and then asks it whether the request
goes to its handler or is the exchange's to answer (SaslHandshake, SaslAuthenticate, anything
refused before authentication). States, per connection:

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE (v1, framed)
                        \\--SaslHandshake-------------------------------> AUTHENTICATE_RAW (v0)
    AUTHENTICATE(_RAW) --exchange complete--> AUTHENTICATED --(session ends)--> only a re-auth
    AUTHENTICATED --SaslHandshake v1, session with an end--> REAUTH (KIP-368), same mechanism and
                    principal, then AUTHENTICATED again with a new session end

Before authentication only ApiVersions and SaslHandshake may come, then SaslAuthenticate only (or
raw tokens after a v0 handshake, which old clients use): anything else closes the connection with a
log line. A failed login is answered after `connection.failed.authentication.delay.ms` with
SASL_AUTHENTICATION_FAILED and Kafka's message, and the connection is closed once that is sent.
A session ends after `connections.max.reauth.ms` or, for OAUTHBEARER, when the token expires,
whichever is sooner (Kafka: ReauthInfo, the credential's lifetime).
An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the served list, then the close.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable

from minibroker.network.channel import Answer, Channel
from minibroker.security.credentials import ScramCredentialStore
from minibroker.security.oauthbearer import (
    OAuthBearerAuthFailed,
    OAuthBearerClose,
    OAuthBearerMalformed,
    OAuthBearerServer,
)
from minibroker.security.plain import PlainAuthFailed, PlainMalformed, PlainServer
from minibroker.security.scram import (
    MIN_ITERATIONS,
    ScramError,
    ScramServer,
    TokenCredential,
    credential_from_password,
)
from minibroker.security.settings import SaslSettings
from minibroker_protocol.apis import APIS, api_versions, metadata, sasl_authenticate, sasl_handshake
from minibroker_protocol.codec import Chunk, decode_from
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import RequestHeader, encode_response_frame
from minibroker_protocol.schema import Message
from minibroker_protocol.types import DecodeError

log = logging.getLogger("minibroker.security")

ANONYMOUS = "User:ANONYMOUS"


class SaslAuthenticator:
    """One connection's SASL exchange (Kafka: SaslServerAuthenticator, KafkaChannel.authenticator).
    The dispatcher (minibroker.kafka_apis) consults it for each frame: `before_header` for what
    comes before a request header is read, `on_request` once the header is decoded; either returns
    the exchange's own answer to await, or None to let the request through to its handler."""

    def __init__(self, settings: SaslSettings, scram: ScramCredentialStore):
        self.settings = settings
        self._scram = scram
        self.state = "HANDSHAKE_OR_VERSIONS"
        self.mechanism: str | None = None
        self._server: PlainServer | ScramServer | OAuthBearerServer | None = None
        self._session_end: float | None = None  # time.monotonic() when the session ends
        self._reauth_capable = False  # the client sent SaslAuthenticate v1+ (KIP-368)
        self._reauthenticating = False
        # authenticated with a delegation token (KafkaPrincipal.tokenAuthenticated): such a
        # connection may not create, renew or expire tokens (KafkaApis.allowTokenRequests)
        self.token_authenticated = False

    @property
    def authenticated(self) -> bool:
        return self.state == "AUTHENTICATED"

    @property
    def max_receive_size(self) -> int:
        return self.settings.max_receive_size

    def before_header(self, conn: Channel, frame: bytes | bytearray) -> Awaitable[Answer] | None:
        """Before authentication: a failed exchange drops every frame, a frame over
        sasl.server.max.receive.size closes the connection, and after a v0 handshake frames are
        raw SASL tokens, not requests. None: read the frame's request header."""
        state = self.state
        if state == "AUTHENTICATED":
            return None
        if state == "FAILED":
            return _answer(None)
        if len(frame) > self.settings.max_receive_size:
            return _answer(self._refuse(conn, f"a frame of {len(frame)} bytes before authentication, more than "
                                              f"sasl.server.max.receive.size={self.settings.max_receive_size}"))
        if state == "AUTHENTICATE_RAW":
            return self._raw_token(conn, bytes(frame))
        return None

    def unreadable_header(self, conn: Channel) -> Answer:
        """A frame whose request header does not decode, before authentication."""
        return self._refuse(conn, "not a Kafka request: a client configured with the wrong security "
                                  "protocol, or not a Kafka client")

    def on_request(self, conn: Channel, header: RequestHeader, frame: bytes | bytearray,
                   pos: int) -> Awaitable[Answer] | None:
        """The exchange's answer to this request, or None when it goes to its handler:
        ApiVersions before the handshake, and everything once authenticated (until the session
        ends, KIP-368)."""
        key = header.api_key
        if self.state == "AUTHENTICATED":
            if key == sasl_handshake.API.key and self._session_end is not None and self._reauth_capable:
                self.state = "REAUTH"
                self._reauthenticating = True
                if len(frame) > self.settings.max_receive_size:
                    return _answer(self._refuse(conn, f"a frame of {len(frame)} bytes before authentication, "
                                                      f"more than sasl.server.max.receive.size="
                                                      f"{self.settings.max_receive_size}"))
            elif self._session_end is not None and time.monotonic() > self._session_end:
                # KIP-368: a client that did not re-authenticate in time loses its connection
                log.info("closing connection from %s (%s): its SASL session ended (connections.max.reauth.ms=%d, "
                         "or the credential expired)", conn.peer, conn.principal,
                         self.settings.max_reauth_for(self.mechanism))
                conn.close("SASL session expired")
                return _answer(None)
            else:
                return None
        state = self.state
        if key == api_versions.API.key and state == "HANDSHAKE_OR_VERSIONS":
            self.state = "HANDSHAKE"
            return None
        if key == sasl_handshake.API.key and state in ("HANDSHAKE_OR_VERSIONS", "HANDSHAKE", "REAUTH"):
            return self._handshake(conn, header, frame, pos)
        if key == sasl_authenticate.API.key and state in ("AUTHENTICATE", "REAUTH_AUTHENTICATE"):
            return self._authenticate(conn, header, frame, pos)
        if state in ("AUTHENTICATE", "REAUTH_AUTHENTICATE"):
            answer = _illegal_sasl_state(header, frame, pos)
            if answer is not None:
                # Kafka answers a request it can parse with ILLEGAL_SASL_STATE, then closes (a
                # client that ignores OAUTHBEARER's error challenge, kafkajs, meets this)
                log.warning("failed authentication from %s on listener %s: unexpected request (api key %d) "
                            "during SASL authentication", conn.peer, self.settings.listener, key)
                return self._fail(conn, answer, "unexpected request during SASL authentication")
        during = "SASL authentication" if state in ("AUTHENTICATE", "REAUTH_AUTHENTICATE") else "SASL handshake"
        return _answer(self._refuse(conn, f"unexpected request (api key {key}) during {during}"))

    # -- SaslHandshake ----------------------------------------------------------------------
    async def _handshake(self, conn: Channel, header: RequestHeader, frame: bytes | bytearray,
                         pos: int) -> list[Chunk] | None:
        version = header.api_version
        if version not in (0, 1):
            return self._refuse(conn, f"SaslHandshake v{version} is not supported")
        try:
            req, _ = decode_from(sasl_handshake.REQUEST, version, frame, pos)
        except DecodeError as e:
            return self._refuse(conn, f"malformed SaslHandshake ({e})")
        mechanisms = self.settings.mechanisms
        if req.mechanism not in mechanisms or (self._reauthenticating and
                                               (req.mechanism != self.mechanism or version == 0)):
            log.warning("failed authentication from %s on listener %s: unsupported SASL mechanism %r "
                        "(enabled: %s)", conn.peer, self.settings.listener, req.mechanism, ", ".join(mechanisms))
            resp = sasl_handshake.RESPONSE(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
            return await self._fail(conn, encode_response_frame(sasl_handshake.API, version, header.correlation_id,
                                                                resp), "unsupported SASL mechanism")
        self.mechanism = req.mechanism
        self._server = self._new_server(req.mechanism)
        if self._reauthenticating:
            self.state = "REAUTH_AUTHENTICATE"
        else:
            self.state = "AUTHENTICATE" if version >= 1 else "AUTHENTICATE_RAW"
        resp = sasl_handshake.RESPONSE(error_code=ErrorCode.NONE, mechanisms=mechanisms)
        return encode_response_frame(sasl_handshake.API, version, header.correlation_id, resp)

    def _new_server(self, mechanism: str) -> PlainServer | ScramServer | OAuthBearerServer:
        if mechanism == "PLAIN":
            return PlainServer(self.settings.plain_users)
        if mechanism == "OAUTHBEARER":
            assert self.settings.oauthbearer_validator is not None
            return OAuthBearerServer(self.settings.oauthbearer_validator)
        return ScramServer(mechanism, lambda user: self._scram.get(user, mechanism),
                           lambda token_id: self._token(token_id, mechanism))

    def _token(self, token_id: str, mechanism: str) -> TokenCredential | None:
        """A delegation token's credential (Kafka: ScramServerCallbackHandler, DelegationTokenCache)."""
        cache = self._scram.token_cache
        token = cache.token(token_id) if cache is not None else None
        credential = cache.credential(token_id, mechanism, lambda password: credential_from_password(
            mechanism, password, MIN_ITERATIONS)) if cache is not None else None
        if token is None or credential is None:
            return None
        # the principal is User:<owner name> (DelegationTokenCache.owner is the owner's name)
        return TokenCredential(credential, "User:" + token.owner.split(":", 1)[-1], token.expiry_timestamp)

    # -- SaslAuthenticate (framed) -----------------------------------------------------------
    async def _authenticate(self, conn: Channel, header: RequestHeader, frame: bytes | bytearray,
                            pos: int) -> list[Chunk] | None:
        version = header.api_version
        if version not in sasl_authenticate.API.versions:
            return self._refuse(conn, f"SaslAuthenticate v{version} is not supported")
        try:
            req, _ = decode_from(sasl_authenticate.REQUEST, version, frame, pos)
        except DecodeError as e:
            return self._refuse(conn, f"malformed SaslAuthenticate ({e})")
        self._reauth_capable = self._reauth_capable or version > 0
        R = sasl_authenticate.RESPONSE
        try:
            ok, token, message = await self._evaluate(conn, bytes(req.auth_bytes))
        except OAuthBearerClose as e:
            return self._refuse(conn, f"SASL/{self.mechanism} input Kafka drops the connection on: {e}")
        if not ok:
            resp = R(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b"",
                     session_lifetime_ms=0)
            return await self._fail(conn, encode_response_frame(sasl_authenticate.API, version,
                                                                header.correlation_id, resp), message)
        lifetime = 0
        if self._server is not None and self._server.complete:
            lifetime = self._complete(conn)
            if lifetime < 0:
                return None
        # Kafka's SaslAuthenticateResponseData leaves error_message at its default "", not null
        resp = R(error_code=ErrorCode.NONE, error_message="", auth_bytes=token, session_lifetime_ms=lifetime)
        return encode_response_frame(sasl_authenticate.API, version, header.correlation_id, resp)

    # -- raw tokens after a v0 handshake ------------------------------------------------------
    async def _raw_token(self, conn: Channel, token: bytes) -> list[Chunk] | None:
        try:
            ok, response, message = await self._evaluate(conn, token)
        except OAuthBearerClose as e:
            return self._refuse(conn, f"SASL/{self.mechanism} input Kafka drops the connection on: {e}")
        if not ok:
            # no framing to carry an error: Kafka closes the connection (after the delay)
            await asyncio.sleep(self.settings.failed_auth_delay_ms / 1000)
            self.state = "FAILED"
            conn.close(message)
            return None
        if self._server is not None and self._server.complete:
            if self._complete(conn) < 0:
                return None
        return [len(response).to_bytes(4, "big"), response]

    # -- common ------------------------------------------------------------------------------
    async def _evaluate(self, conn: Channel, token: bytes) -> tuple[bool, bytes, str]:
        """(ok, response token, error message for the client). Raises OAuthBearerClose on input
        Kafka answers with a dropped connection."""
        server = self._server
        assert server is not None
        generic = (f"Authentication failed during {'re-authentication' if self._reauthenticating else 'authentication'}"
                   f" due to invalid credentials with SASL mechanism {self.mechanism}")
        try:
            if isinstance(server, OAuthBearerServer):
                # awaited: a validator hook may be a coroutine function
                response = await server.evaluate(token)
            else:
                response = server.evaluate(token)
            if isinstance(server, OAuthBearerServer) and server.rejection is not None:
                # RFC 7628: the refusal is a challenge first; the failure follows the client's ack
                log.warning("refused an OAUTHBEARER token from %s on listener %s: %s", conn.peer,
                            self.settings.listener, server.rejection)
            return True, response, ""
        except PlainAuthFailed as e:
            reason, message = str(e), str(e)
        except OAuthBearerAuthFailed as e:
            reason, message = e.reason, str(e)
        except (PlainMalformed, ScramError, OAuthBearerMalformed) as e:
            reason, message = str(e), generic
        except OAuthBearerClose:
            raise
        except Exception as e:  # a validator hook (sasl.server.callback.handler.python) that raised
            log.error("OAUTHBEARER validator failed on a token from %s", conn.peer, exc_info=True)
            # Kafka: an internal error in the callback handler is answered with the generic message
            reason, message = f"internal error in the validator: {e!r}", generic
        log.warning("failed authentication with %s on listener %s (%s, mechanism %s): %s", conn.peer,
                    self.settings.listener, self.settings.security_protocol, self.mechanism, reason)
        return False, b"", message

    def _complete(self, conn: Channel) -> int:
        """The exchange succeeded: set the principal and the session end; the lifetime to tell the
        client (0: none), or -1 when a re-authentication changed the principal (connection closed)."""
        assert self._server is not None and self._server.user is not None
        token_owner = self._server.token_owner if isinstance(self._server, ScramServer) else None
        principal = token_owner or f"User:{self._server.user}"
        if self._reauthenticating and principal != conn.principal:
            log.warning("closing connection from %s: re-authenticated as %s, was %s", conn.peer, principal,
                        conn.principal)
            self.state = "FAILED"
            conn.close("principal changed on re-authentication")
            return -1
        log.info("%s %s from %s on listener %s with %s",
                 "re-authenticated" if self._reauthenticating else "authenticated", principal, conn.peer,
                 self.settings.listener, self.mechanism)
        conn.principal = principal
        self.token_authenticated = token_owner is not None
        self.state = "AUTHENTICATED"
        self._reauthenticating = False
        max_reauth = self.settings.max_reauth_for(self.mechanism)
        expiry_ms = self._server.credential_expiry_ms if not isinstance(self._server, PlainServer) else None
        self._server = None
        if expiry_ms is None and max_reauth <= 0:
            self._session_end = None
            return 0
        # KIP-368 with a credential that expires (Kafka: ReauthInfo): the sooner of the two ends
        lifetime = max_reauth
        if expiry_ms is not None:
            left = max(0, expiry_ms - int(time.time() * 1000))
            lifetime = min(left, max_reauth) if max_reauth > 0 else left
        self._session_end = time.monotonic() + lifetime / 1000
        return lifetime if self._reauth_capable else 0

    async def _fail(self, conn: Channel, response: list[Chunk], reason: str) -> list[Chunk]:
        """Kafka's delayed failure: the response goes out after the delay, then the close."""
        self.state = "FAILED"
        await asyncio.sleep(self.settings.failed_auth_delay_ms / 1000)
        conn.close_when_sent(reason)
        return response

    def _refuse(self, conn: Channel, why: str) -> list[Chunk] | None:
        log.warning("closing connection from %s on listener %s: %s", conn.peer, self.settings.listener, why)
        self.state = "FAILED"
        conn.close(why)
        return None


def _illegal_sasl_state(header: RequestHeader, frame: bytes | bytearray, pos: int) -> list[Chunk] | None:
    """Kafka's error response for a request that came instead of SaslAuthenticate (its
    AbstractRequest.getErrorResponse with ILLEGAL_SASL_STATE), or None where we build none: an
    unknown or unreadable request, or an API without a top-level error code other than Metadata
    (the connection is then closed without an answer)."""
    api = APIS.get(header.api_key)
    if api is None or header.api_version not in api.versions:
        return None
    try:
        req, _ = decode_from(api.request, header.api_version, frame, pos)
    except DecodeError:
        return None
    code = ErrorCode.ILLEGAL_SASL_STATE
    resp: Message
    if api.key == metadata.API.key:
        # MetadataRequest.getErrorResponse: each named topic with the error, no brokers
        R = metadata.RESPONSE
        resp = R(brokers=[], topics=[R.MetadataResponseTopic(error_code=code, name=t.name or "", topic_id=t.topic_id,
                                                             is_internal=False, partitions=[])
                                     for t in (req.topics or [])])
    elif any(f.name == "error_code" for f in api.response.fields):
        resp = api.response(error_code=code)
    else:
        return None
    return encode_response_frame(api, header.api_version, header.correlation_id, resp)


async def _answer(answer: Answer) -> Answer:
    """An answer already known, as the awaitable the dispatcher expects."""
    return answer
