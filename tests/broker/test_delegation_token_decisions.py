"""The delegation-token decisions (minibroker.security.delegation_tokens) in Kafka's order of checks
(DelegationTokenControlManager): lifetimes, renewal caps, who may renew, expired tokens, the sweep,
and the cache's HMAC lookups. tests/integration/test_delegation_tokens.py drives them over the wire."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

from minibroker.security.delegation_tokens import (
    DelegationTokenCache,
    TokenInformation,
    new_token_id,
    plan_create,
    plan_expire,
    plan_renew,
    visible,
)
from minibroker_protocol.errors import ErrorCode

DAY, WEEK = 86_400_000, 604_800_000
NOW = 1_700_000_000_000


def token(expiry: int = NOW + DAY, max_ts: int = NOW + WEEK) -> TokenInformation:
    return TokenInformation("tid", "User:alice", "User:req", ("User:erin",), NOW, max_ts, expiry)


def test_create_caps_the_lifetime_and_the_first_expiry() -> None:
    code, t = plan_create("User:alice", "User:alice", [], -1, NOW, WEEK, DAY)
    assert code == 0 and t is not None
    assert (t.max_timestamp, t.expiry_timestamp) == (NOW + WEEK, NOW + DAY)
    _, t = plan_create("User:alice", "User:alice", [], 2 * WEEK, NOW, WEEK, DAY)
    assert t is not None and t.max_timestamp == NOW + WEEK  # capped at delegation.token.max.lifetime.ms
    _, t = plan_create("User:alice", "User:alice", [], 1000, NOW, WEEK, DAY)
    assert t is not None and t.expiry_timestamp == t.max_timestamp == NOW + 1000
    assert plan_create("User:a", "User:a", ["Group:g"], -1, NOW, WEEK, DAY) == (ErrorCode.INVALID_PRINCIPAL_TYPE, None)


def test_token_ids_look_like_kafka_uuids() -> None:
    for _ in range(200):
        tid = new_token_id()
        assert len(tid) == 22 and not tid.startswith("-")
        raw = base64.urlsafe_b64decode(tid + "==")
        assert raw[6] >> 4 == 4 and raw[8] >> 6 == 2  # a version-4, IETF-variant UUID


def test_renew_checks_expiry_before_the_owner() -> None:
    assert plan_renew(None, "User:alice", -1, NOW, DAY) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, None)
    expired = token(expiry=NOW - 1)
    assert plan_renew(expired, "User:bob", -1, NOW, DAY)[0] == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert plan_renew(token(), "User:bob", -1, NOW, DAY)[0] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    # the requester may describe the token but not renew it (KIP-373)
    assert plan_renew(token(), "User:req", -1, NOW, DAY)[0] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    code, t = plan_renew(token(), "User:erin", 3 * DAY, NOW + 10, DAY)
    assert code == 0 and t is not None and t.expiry_timestamp == NOW + 10 + DAY  # at most the default period
    _, t = plan_renew(token(), "User:alice", 60_000, NOW, DAY)
    assert t is not None and t.expiry_timestamp == NOW + 60_000
    _, t = plan_renew(token(max_ts=NOW + 5), "User:alice", -1, NOW, DAY)
    assert t is not None and t.expiry_timestamp == NOW + 5  # never past the max timestamp


def test_expire_checks_the_owner_before_expiry_and_minus_one_removes() -> None:
    expired = token(expiry=NOW - 1)
    assert plan_expire(expired, "User:bob", -1, NOW)[0] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    assert plan_expire(expired, "User:alice", -1, NOW) == (0, None, NOW)  # removed, even when expired
    assert plan_expire(expired, "User:alice", 1000, NOW)[0] == ErrorCode.DELEGATION_TOKEN_EXPIRED
    code, t, expiry = plan_expire(token(), "User:erin", 1000, NOW)
    assert code == 0 and t is not None and expiry == t.expiry_timestamp == NOW + 1000


def test_describe_filter() -> None:
    t = token()
    no, yes = (lambda _: False), (lambda _: True)
    assert visible(t, "User:req", None, no, no) and visible(t, "User:erin", None, no, no)
    assert not visible(t, "User:bob", None, no, no)
    assert visible(t, "User:bob", None, yes, no) and visible(t, "User:bob", None, no, yes)
    assert not visible(t, "User:alice", ["User:bob"], yes, yes)  # not among the owners asked for
    assert visible(t, "User:alice", ["User:erin"], no, no)  # a renewer counts as asked for


def test_cache_finds_by_hmac_sweeps_and_keeps_no_secret(tmp_path: Path) -> None:
    cache = DelegationTokenCache(tmp_path, "k")
    live, old = token(), TokenInformation("old", "User:a", "User:a", (), NOW, NOW + 10, NOW + 5)
    cache.put(live)
    cache.put(old)
    mac = hmac.new(b"k", b"tid", hashlib.sha512).digest()
    assert cache.hmac_of("tid") == mac and cache.token_for_hmac(mac) == live
    assert cache.token_for_hmac(b"other") is None
    assert [t.token_id for t in cache.sweep(NOW + 6)] == ["old"]
    assert [t.token_id for t in cache.tokens()] == ["tid"]
    text = (tmp_path / "delegation-tokens.json").read_text()
    assert "tid" in text and "old" not in text and base64.b64encode(mac).decode() not in text
    again = DelegationTokenCache(tmp_path, "k")
    again.load()
    assert again.tokens() == [live]
