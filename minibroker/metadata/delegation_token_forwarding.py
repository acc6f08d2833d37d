"""A KRaft broker's CreateDelegationToken, RenewDelegationToken and ExpireDelegationToken, sent to
the controller in an Envelope (Kafka: ForwardingManager, KIP-590; the controller's side is
minibroker.controller.delegation_token_control).

Their answers depend on who asks (the owner and requester of a new token, who may renew or expire
one), so unlike the other forwarded requests (minibroker.metadata.forwarding_manager) they go as
Kafka's brokers send every forwarded request: the client's request bytes at the client's version,
wrapped with the client's principal (DefaultPrincipalData, minibroker.security.principal_serde) and
address. The broker's own checks come first (minibroker.handlers.delegation_tokens: a connection
that may ask for tokens, CREATE_TOKENS for another owner, User renewers, tokens enabled); the
controller's answer comes back once this broker's image holds the record it wrote, so the token
works on this broker (and, as soon as they caught up, every other) when the client gets it.
DescribeDelegationToken is not forwarded: it reads this broker's image, as Kafka's does.
"""

from __future__ import annotations

import asyncio
import ipaddress

from minibroker.handlers import delegation_tokens as token_handlers
from minibroker.handlers.registry import Handler, RequestContext, ServedHandlers
from minibroker.metadata.forwarding_manager import ForwardingManager
from minibroker.security.principal_serde import EnvelopePrincipal, serialize
from minibroker.security.sasl import SaslAuthenticator
from minibroker_protocol.apis import (
    create_delegation_token,
    envelope,
    expire_delegation_token,
    renew_delegation_token,
)
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from minibroker_protocol.schema import Api, Message
from minibroker_protocol.types import read_uvarint


def _client_address(ctx: RequestContext) -> bytes:
    """The client's IP address as bytes (Kafka: InetAddress.getAddress)."""
    try:
        return ipaddress.ip_address(ctx.principal[1]).packed
    except ValueError:
        return ipaddress.ip_address("127.0.0.1").packed


def envelope_of(ctx: RequestContext, api: Api, request: Message) -> envelope.EnvelopeRequest:
    """The client's request wrapped as Kafka's broker wraps a forwarded one."""
    conn = ctx.connection
    token_auth = conn is not None and isinstance(conn.authenticator, SaslAuthenticator) and \
        conn.authenticator.token_authenticated
    data = bytearray()
    encode_request_header(data, RequestHeader(api.key, ctx.version, 0, ctx.client_id))
    data += encode(api.request, ctx.version, request).to_bytes()
    return envelope.REQUEST(request_data=bytes(data),
                            request_principal=serialize(EnvelopePrincipal(ctx.principal[0], token_auth)),
                            client_host_address=_client_address(ctx))


def unwrap(api: Api, version: int, answer: Message) -> Message:
    """The inner response of the controller's EnvelopeResponse."""
    assert isinstance(answer, envelope.EnvelopeResponse)
    if answer.error_code != ErrorCode.NONE or answer.response_data is None:
        raise KafkaError(answer.error_code or ErrorCode.UNKNOWN_SERVER_ERROR,
                         f"the controller refused the Envelope of {api.name}")
    data = bytes(answer.response_data)
    pos = 4  # the correlation id
    if response_header_version(api.key, version) >= 1:
        tags, pos = read_uvarint(data, pos)
        for _ in range(tags):
            _, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
            pos += size
    return decode(api.response, version, data, pos)


def install_token_forwarding(handlers: ServedHandlers, forwarding: ForwardingManager) -> None:
    """Replace the single broker's Create/Renew/Expire handlers with forwarding ones."""
    async def forward(ctx: RequestContext, api: Api, request: Message) -> Message:
        # a task of its own, as ForwardingManager.handler: a client going away does not cut the
        # controller's exchange in half
        answer = await asyncio.ensure_future(forwarding.forward(envelope.API, envelope_of(ctx, api, request)))
        return unwrap(api, ctx.version, answer)

    async def create(ctx: RequestContext, req: create_delegation_token.CreateDelegationTokenRequest) -> Message:
        refused = token_handlers.create_refused(ctx, req)
        return refused if refused is not None else await forward(ctx, create_delegation_token.API, req)

    async def renew(ctx: RequestContext, req: renew_delegation_token.RenewDelegationTokenRequest) -> Message:
        refused = token_handlers.renew_refused(ctx)
        return refused if refused is not None else await forward(ctx, renew_delegation_token.API, req)

    async def expire(ctx: RequestContext, req: expire_delegation_token.ExpireDelegationTokenRequest) -> Message:
        refused = token_handlers.expire_refused(ctx)
        return refused if refused is not None else await forward(ctx, expire_delegation_token.API, req)

    for api, fn in ((create_delegation_token.API, create), (renew_delegation_token.API, renew),
                    (expire_delegation_token.API, expire)):
        if api.key in handlers:
            handlers.loaded[api.key] = Handler(api, handlers.versions[api.key], fn)
