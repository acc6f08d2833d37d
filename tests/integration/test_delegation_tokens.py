"""Delegation tokens (KIP-48, KIP-373) on one broker, with raw requests (our codec over a SASL PLAIN
login) and kafka-python logging in with a token (SCRAM with the `tokenauth=true` extension Kafka's
Java client sends): Kafka's checks and error codes (DelegationTokenControlManager, KafkaApis), the
HMAC as Kafka derives it, the token kept without secrets and surviving a restart, tokens off without
delegation.token.secret.key. tests/reference/test_security_reference.py compares the Java tools'
output with Kafka 4.4's."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.testing import SCRAM_JAAS, BrokerThread
from minibroker_protocol.apis import (
    create_acls,
    create_delegation_token,
    describe_delegation_token,
    expire_delegation_token,
    renew_delegation_token,
    sasl_authenticate,
    sasl_handshake,
)
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient
from tests.reference.helpers import sasl_plain_client
from tests.reference.token_helpers import token_login, token_scram

SECRET = "the-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-pw" user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw" user_erin="erin-pw";')


def props(secret: str | None = SECRET) -> dict[str, Any]:
    p: dict[str, Any] = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true", "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": 0,
    }
    if secret is not None:
        p["delegation.token.secret.key"] = secret
    return p


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path_factory.mktemp("dtokens") / "data", overrides=props()) as b:
        yield b


def _as(b: BrokerThread, user: str) -> RawClient:
    return sasl_plain_client(b.bootstrap_for("SASL_PLAINTEXT"), user, f"{user}-pw", client_id="dt")


def _create(c: RawClient, *renewers: str, version: int = 3, owner: str | None = None,
            max_lifetime_ms: int = -1) -> Any:
    R = create_delegation_token.REQUEST
    otype, _, oname = owner.partition(":") if owner else (None, "", None)
    return c.call(create_delegation_token.API, version, R(
        owner_principal_type=otype, owner_principal_name=oname or None, max_lifetime_ms=max_lifetime_ms,
        renewers=[R.CreatableRenewers(principal_type="User", principal_name=r) for r in renewers]))


def _renew(c: RawClient, mac: bytes, period: int = -1) -> Any:
    return c.call(renew_delegation_token.API, 2, renew_delegation_token.REQUEST(hmac=mac, renew_period_ms=period))


def _expire(c: RawClient, mac: bytes, period: int) -> Any:
    return c.call(expire_delegation_token.API, 2,
                  expire_delegation_token.REQUEST(hmac=mac, expiry_time_period_ms=period))


def _describe(c: RawClient, owners: list[str] | None = None) -> Any:
    R = describe_delegation_token.REQUEST
    return c.call(describe_delegation_token.API, 3, R(owners=None if owners is None else [
        R.DescribeDelegationTokenOwner(principal_type="User", principal_name=o.split(":", 1)[1]) for o in owners]))


def _scram_first(user: str, nonce: bytes) -> bytes:
    return b"n,,n=" + user.encode() + b",r=" + nonce + b",tokenauth=true"


def _token_login(b: BrokerThread, token_id: str, mac: bytes) -> RawClient:
    return token_login(b.bootstrap_for("SASL_PLAINTEXT"), token_id, mac)


def test_create_describe_renew_expire_with_kafkas_codes(broker: BrokerThread) -> None:
    with RawClient(broker.bootstrap_for("PLAINTEXT")) as plain:
        r = _create(plain)
        assert (r.error_code, r.issue_timestamp_ms, r.token_id) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1, "")
        assert _describe(plain).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert _renew(plain, b"x").error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    with _as(broker, "alice") as alice, _as(broker, "bob") as bob, _as(broker, "erin") as erin:
        r = _create(alice, "erin", max_lifetime_ms=3_600_000)
        assert r.error_code == 0 and (r.principal_type, r.principal_name) == ("User", "alice")
        assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
        assert r.max_timestamp_ms - r.issue_timestamp_ms == 3_600_000  # under the 7-day maximum
        assert r.expiry_timestamp_ms == r.max_timestamp_ms  # the 1-day renew period is longer
        assert r.hmac == hmac.new(SECRET.encode(), r.token_id.encode(), hashlib.sha512).digest()
        token_id, mac = r.token_id, r.hmac
        R = create_delegation_token.REQUEST
        bad = alice.call(create_delegation_token.API, 3, R(owner_principal_type=None, owner_principal_name=None,
                                                           max_lifetime_ms=-1, renewers=[R.CreatableRenewers(
                                                               principal_type="Group", principal_name="g")]))
        assert bad.error_code == ErrorCode.INVALID_PRINCIPAL_TYPE

        seen = {t.token_id for t in _describe(alice).tokens}
        assert token_id in seen
        assert token_id in {t.token_id for t in _describe(erin).tokens}  # a renewer sees it
        assert _describe(alice, []).tokens == []  # an empty owner list: nothing (ownersListEmpty)
        assert token_id not in {t.token_id for t in _describe(alice, ["User:bob"]).tokens}

        assert _renew(bob, mac).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        assert _renew(erin, b"nope").error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        renewed = _renew(erin, mac, 60_000)
        assert renewed.error_code == 0 and renewed.expiry_timestamp_ms <= r.max_timestamp_ms
        assert _expire(bob, mac, -1).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        e = _expire(alice, mac, 120_000)
        assert e.error_code == 0 and e.expiry_timestamp_ms > renewed.expiry_timestamp_ms - 60_000
        assert _expire(alice, mac, -1).error_code == 0  # gone at once
        assert _renew(alice, mac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        assert token_id not in {t.token_id for t in _describe(alice).tokens}


def test_describe_needs_describe_tokens_or_an_acl_on_the_token(broker: BrokerThread) -> None:
    A = create_acls.REQUEST
    with _as(broker, "alice") as alice, _as(broker, "bob") as bob, _as(broker, "admin") as admin:
        token_id = _create(alice).token_id
        # an ACL on USER resources makes them protected: bob sees alice's token only when allowed
        r = admin.call(create_acls.API, 3, A(creations=[A.AclCreation(
            resource_type=7, resource_name="User:alice", resource_pattern_type=3, principal="User:bob",
            host="*", operation=14, permission_type=3)]))  # DESCRIBE_TOKENS, ALLOW
        assert r.results[0].error_code == 0
        assert token_id in {t.token_id for t in _describe(bob).tokens}
        r = admin.call(create_acls.API, 3, A(creations=[A.AclCreation(
            resource_type=6, resource_name=token_id, resource_pattern_type=3, principal="User:bob",
            host="*", operation=8, permission_type=2)]))  # DESCRIBE on the token: DENY
        assert r.results[0].error_code == 0
        assert token_id in {t.token_id for t in _describe(bob).tokens}  # DESCRIBE_TOKENS still lets bob
        with _as(broker, "erin") as erin:
            assert token_id not in {t.token_id for t in _describe(erin).tokens}
            # CREATE_TOKENS on User:alice is protected now (an ACL exists on it): erin may not
            assert _create(erin, owner="User:alice").error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED


def test_a_client_logs_in_with_the_token_as_its_owner(broker: BrokerThread) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    with _as(broker, "alice") as alice:
        r = _create(alice)
    token_id, mac = r.token_id, r.hmac
    with _token_login(broker, token_id, mac) as c:
        # the principal is token-authenticated: it may not ask for tokens (KafkaApis.allowTokenRequests)
        assert _create(c).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert _renew(c, mac).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    conf = {"bootstrap_servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": token_id,
            "sasl_plain_password": base64.b64encode(mac).decode()}
    with token_scram():
        p = KafkaProducer(**conf)
        for i in range(3):
            p.send("dt-topic", f"v{i}".encode())
        p.flush(30)
        p.close()
        c = KafkaConsumer("dt-topic", **conf, auto_offset_reset="earliest", consumer_timeout_ms=15000)
        got = []
        for m in c:
            got.append(m.value)
            if len(got) == 3:
                break
        c.close()
    assert got == [b"v0", b"v1", b"v2"]
    # a wrong HMAC fails as a wrong password does
    with RawClient(broker.bootstrap_for("SASL_PLAINTEXT")) as c:
        assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="SCRAM-SHA-256")).error_code == 0
        r = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=_scram_first("nosuchtoken", b"abc")))
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_tokens_survive_a_restart_without_secrets_on_disk(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerThread(data, overrides=props()) as b, _as(b, "alice") as alice:
        r = _create(alice, "erin")
    stored = (data / "delegation-tokens.json").read_text()
    assert r.token_id in stored and base64.b64encode(r.hmac).decode() not in stored and SECRET not in stored
    assert set(json.loads(stored)["tokens"][0]) == {"token_id", "owner", "token_requester", "renewers",
                                                    "issue_timestamp", "max_timestamp", "expiry_timestamp"}
    with BrokerThread(data, overrides=props()) as b:
        with _as(b, "alice") as alice:
            (t,) = _describe(alice).tokens
            assert (t.token_id, t.hmac, [x.principal_name for x in t.renewers]) == (r.token_id, r.hmac, ["erin"])
        _token_login(b, r.token_id, r.hmac).close()
    # another secret key: the stored token's HMAC is another, the client's no longer works
    with BrokerThread(data, overrides=props("another-secret")) as b, _as(b, "alice") as alice:
        (t,) = _describe(alice).tokens
        assert t.hmac != r.hmac
        assert _renew(alice, r.hmac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_without_a_secret_key_tokens_are_off(tmp_path: Path) -> None:
    with BrokerThread(tmp_path / "data", overrides=props(None)) as b, _as(b, "alice") as alice:
        assert _create(alice).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert _renew(alice, b"x").error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert _expire(alice, b"x", -1).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert _describe(alice).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def test_expired_tokens_are_swept(tmp_path: Path) -> None:
    """A token past its max lifetime answers DELEGATION_TOKEN_EXPIRED until the periodic check
    (delegation.token.expiry.check.interval.ms) removes it; then it is not found."""
    overrides = {**props(), "delegation.token.expiry.check.interval.ms": 300}
    with BrokerThread(tmp_path / "data", overrides=overrides) as b, _as(b, "alice") as alice:
        r = _create(alice, max_lifetime_ms=1)
        assert r.error_code == 0 and r.max_timestamp_ms == r.issue_timestamp_ms + 1
        time.sleep(0.01)  # past its 1 ms lifetime (a renew in the same millisecond still succeeds)
        codes = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code = _renew(alice, r.hmac)
            codes.add(code.error_code)
            if code.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND:
                break
            time.sleep(0.05)
        assert codes <= {ErrorCode.DELEGATION_TOKEN_EXPIRED, ErrorCode.DELEGATION_TOKEN_NOT_FOUND}
        assert ErrorCode.DELEGATION_TOKEN_NOT_FOUND in codes
        assert _describe(alice).tokens == []
