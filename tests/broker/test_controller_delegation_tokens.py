"""Delegation tokens at our controller (minibroker/controller/delegation_token_control.py; Kafka's
DelegationTokenControlManager): a Create forwarded in an Envelope with the client's principal
(DefaultPrincipalData, golden bytes) writes a DelegationTokenRecord without the HMAC and answers
the HMAC; Renew and Expire find the token by its HMAC and check the principal; the periodic sweep
removes expired tokens; the image replayed from the log holds what every broker's cache is built
from. Requests go through the wire codec."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.controller_apis import ControllerApis
from minibroker.controller.delegation_token_control import DelegationTokenSettings, token_information
from minibroker.controller.quorum_controller import QuorumController
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.security.principal_serde import EnvelopePrincipal, deserialize, serialize
from minibroker_protocol import codec
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import (
    create_delegation_token,
    envelope,
    expire_delegation_token,
    renew_delegation_token,
)
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import RequestHeader, encode_request_header
from tests.broker.controller_helpers import Clock, config, replayed, wire

SECRET = "controller-secret"
ALICE, BOB = EnvelopePrincipal("User:alice"), EnvelopePrincipal("User:bob")
HOUR = 3600 * 1000


def test_principal_serde_is_kafkas_default_principal_data() -> None:
    # version 0 (int16), compact strings "User" and "alice", tokenAuthenticated, no tagged fields
    assert serialize(ALICE) == b"\x00\x00\x05User\x06alice\x00\x00"
    assert serialize(EnvelopePrincipal("User:a:b", True)) == b"\x00\x00\x05User\x04a:b\x01\x00"
    assert deserialize(b"\x00\x00\x05User\x04a:b\x01\x00") == EnvelopePrincipal("User:a:b", True)
    with pytest.raises(ValueError):
        deserialize(b"\x00\x01\x05User\x06alice\x00\x00")
    with pytest.raises(ValueError):
        deserialize(b"\x00\x00\x05Us")


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[QuorumController]:
    settings = DelegationTokenSettings(secret_key=SECRET, max_lifetime_ms=48 * HOUR, expiry_time_ms=24 * HOUR,
                                       expiry_check_interval_ms=HOUR)
    c = QuorumController(tmp_path, config(delegation_tokens=settings), clock=Clock())
    await c.start()
    yield c
    await c.shutdown()


async def _in_envelope(apis: ControllerApis, version: int, req: create_delegation_token.CreateDelegationTokenRequest,
                       who: EnvelopePrincipal) -> create_delegation_token.CreateDelegationTokenResponse:
    data = bytearray()
    encode_request_header(data, RequestHeader(create_delegation_token.API.key, version, 7, "broker-1"))
    data += codec.encode(create_delegation_token.REQUEST, version, req).to_bytes()
    env = await apis.envelope(wire(envelope.REQUEST, 0, envelope.REQUEST(
        request_data=bytes(data), request_principal=serialize(who), client_host_address=b"\x7f\0\0\1")))
    assert env.error_code == 0 and env.response_data is not None
    raw = bytes(env.response_data)
    assert raw[:4] == (7).to_bytes(4, "big")  # the inner correlation id, then a flexible header's tags
    return codec.decode(create_delegation_token.RESPONSE, version, raw, 5)


async def test_create_renew_expire_and_sweep(controller: QuorumController) -> None:
    c, clock = controller, controller.clock
    assert isinstance(clock, Clock)
    apis = ControllerApis(c)
    R = create_delegation_token.REQUEST
    made = await _in_envelope(apis, 3, R(owner_principal_type=None, owner_principal_name=None, max_lifetime_ms=-1,
                                         renewers=[R.CreatableRenewers(principal_type="User", principal_name="bob")]),
                              ALICE)
    assert (made.error_code, made.principal_name, made.token_requester_principal_name) == (0, "alice", "alice")
    assert made.hmac == hmac.new(SECRET.encode(), made.token_id.encode(), hashlib.sha512).digest()
    assert (made.expiry_timestamp_ms - clock.now, made.max_timestamp_ms - clock.now) == (24 * HOUR, 48 * HOUR)
    (record,) = replayed(c).delegation_tokens.values()  # what every broker's cache is built from
    assert token_information(record).owner == "User:alice" and record.renewers == ["User:bob"]
    assert made.hmac not in codec.encode(mr.DELEGATION_TOKEN_RECORD, 0, record).to_bytes()  # derived, never kept
    # a request that came alone (no Envelope, so no principal) is refused
    alone = await c.delegation_token_request(wire(R, 3, R(owner_principal_type=None, owner_principal_name=None,
                                                          max_lifetime_ms=-1, renewers=[])), None)
    assert alone.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

    renew = renew_delegation_token.REQUEST
    clock.now += HOUR
    stranger = await c.delegation_token_request(wire(renew, 2, renew(hmac=made.hmac, renew_period_ms=-1)),
                                                EnvelopePrincipal("User:erin"))
    assert stranger.error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    unknown = await c.delegation_token_request(wire(renew, 2, renew(hmac=b"x" * 64, renew_period_ms=-1)), ALICE)
    assert unknown.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    renewed = await c.delegation_token_request(wire(renew, 2, renew(hmac=made.hmac, renew_period_ms=2 * HOUR)), BOB)
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (0, clock.now + 2 * HOUR)
    assert replayed(c).delegation_tokens[made.token_id].expiration_timestamp == clock.now + 2 * HOUR
    # a snapshot holds the tokens (a broker restarted after the log was trimmed has them again)
    delta = MetadataDelta(MetadataImage())
    for r in c.image.records():
        delta.replay(r)
    assert delta.apply(0, 0).delegation_tokens == c.image.delegation_tokens

    # the sweep: nothing before the check interval, the expired token once it is due
    clock.now += 3 * HOUR
    assert c.delegation_tokens.sweep_due(c.image, clock.now - 3 * HOUR) == []
    (gone,) = c.delegation_tokens.sweep_due(c.image, clock.now)
    assert gone.message.token_id == made.token_id

    # expire at once: a RemoveDelegationTokenRecord, the token gone from the image
    expire = expire_delegation_token.REQUEST
    again = await _in_envelope(apis, 3, R(owner_principal_type=None, owner_principal_name=None, max_lifetime_ms=-1,
                                          renewers=[]), ALICE)
    out = await c.delegation_token_request(wire(expire, 2, expire(hmac=again.hmac, expiry_time_period_ms=-1)), ALICE)
    assert (out.error_code, out.expiry_timestamp_ms) == (0, clock.now)
    assert again.token_id not in replayed(c).delegation_tokens


async def test_tokens_off_without_the_secret(tmp_path: Path) -> None:
    c = QuorumController(tmp_path, config(), clock=Clock())
    await c.start()
    try:
        R = create_delegation_token.REQUEST
        out = await c.delegation_token_request(wire(R, 3, R(owner_principal_type=None, owner_principal_name=None,
                                                            max_lifetime_ms=-1, renewers=[])), ALICE)
        assert out.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert c.delegation_tokens.sweep_due(c.image, 1 << 62) == []
    finally:
        await c.shutdown()
