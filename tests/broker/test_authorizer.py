"""The authorizer's rules (StandardAuthorizer's): a reference model written from the rules, and
hypothesis-generated ACL sets checked against it; plus persistence and the Describe/Delete filters."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
    validate_new_acl,
)

OPS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["127.0.0.1", "10.0.0.1", "*"]

acls = st.builds(
    AclBinding, st.sampled_from([ResourceType.TOPIC, ResourceType.GROUP]), st.sampled_from(NAMES),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]), st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS), st.sampled_from(OPS), st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]))


def model(acl_set: set[AclBinding], principal: str, host: str, op: AclOperation, name: str,
          allow_if_none: bool) -> bool:
    """The rules, spelled out independently of the implementation."""
    def covers(a: AclBinding) -> bool:
        if a.resource_type != ResourceType.TOPIC:
            return False
        if a.pattern_type == PatternType.LITERAL:
            return a.resource_name in (name, "*")
        return name[:len(a.resource_name)] == a.resource_name

    on_resource = [a for a in acl_set if covers(a)]
    mine = [a for a in on_resource if a.principal in (principal, "User:*") and a.host in (host, "*")]
    if any(a.permission == AclPermissionType.DENY and a.operation in (op, AclOperation.ALL) for a in mine):
        return False
    implied = {AclOperation.DESCRIBE: {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER},
               AclOperation.DESCRIBE_CONFIGS: {AclOperation.ALTER_CONFIGS}}.get(op, set())
    if any(a.permission == AclPermissionType.ALLOW and (a.operation in (op, AclOperation.ALL) or a.operation in implied)
           for a in mine):
        return True
    return allow_if_none and not on_resource


@settings(max_examples=300, deadline=None)
@given(st.sets(acls, max_size=8), st.sampled_from(["User:alice", "User:bob"]), st.sampled_from(["127.0.0.1", "10.0.0.1"]),
       st.sampled_from(OPS), st.sampled_from(["a", "ab", "abc", "b", "x"]), st.booleans())
def test_decision_follows_the_rules(acl_set: set[AclBinding], principal: str, host: str, op: AclOperation,
                                    name: str, allow_if_none: bool) -> None:
    auth = Authorizer(None, enabled=True, allow_if_no_acl=allow_if_none)
    auth.create(acl_set)
    assert auth.authorize(principal, host, op, ResourceType.TOPIC, name) == model(
        acl_set, principal, host, op, name, allow_if_none)


@settings(max_examples=100, deadline=None)
@given(st.sets(acls, max_size=8), st.sampled_from(OPS), st.sampled_from(NAMES))
def test_super_users_and_disabled_authorizer_allow_everything(acl_set: set[AclBinding], op: AclOperation,
                                                               name: str) -> None:
    auth = Authorizer(None, enabled=True, super_users=frozenset({"User:admin"}))
    auth.create(acl_set)
    assert auth.authorize("User:admin", "10.0.0.1", op, ResourceType.TOPIC, name)
    off = Authorizer(None, enabled=False)
    off.create(acl_set)
    assert off.authorize("User:alice", "10.0.0.1", op, ResourceType.TOPIC, name)


def test_deny_wins_and_implied_describe() -> None:
    auth = Authorizer(None, enabled=True)
    allow_read = AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                            AclPermissionType.ALLOW)
    auth.create([allow_read])
    assert auth.authorize("User:alice", "1.2.3.4", AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    assert not auth.authorize("User:alice", "1.2.3.4", AclOperation.WRITE, ResourceType.TOPIC, "t")
    assert not auth.authorize("User:bob", "1.2.3.4", AclOperation.READ, ResourceType.TOPIC, "t")
    # a DENY of READ does not deny DESCRIBE (DENY matches its own operation or ALL only)
    auth.create([AclBinding(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:*", "*", AclOperation.READ,
                            AclPermissionType.DENY)])
    assert not auth.authorize("User:alice", "1.2.3.4", AclOperation.READ, ResourceType.TOPIC, "t")
    assert auth.authorize("User:alice", "1.2.3.4", AclOperation.DESCRIBE, ResourceType.TOPIC, "t")
    # KIP-430 bits: DESCRIBE (8) only
    assert auth.authorized_operations("User:alice", "1.2.3.4", ResourceType.TOPIC, "t") == 1 << 8


def test_acls_persist_and_filters(tmp_path: Path) -> None:
    a = AclBinding(ResourceType.TOPIC, "pay", PatternType.PREFIXED, "User:alice", "*", AclOperation.WRITE,
                   AclPermissionType.ALLOW)
    b = AclBinding(ResourceType.GROUP, "g", PatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                   AclPermissionType.ALLOW)
    auth = Authorizer(tmp_path, enabled=True)
    auth.create([a, b])
    again = Authorizer(tmp_path, enabled=True)
    again.load()
    assert again.acls() == sorted([a, b])
    match = AclBindingFilter(ResourceType.TOPIC, "payments", PatternType.MATCH, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    assert again.describe(match) == [a]
    literal = AclBindingFilter(ResourceType.TOPIC, "payments", PatternType.LITERAL, None, None, AclOperation.ANY,
                               AclPermissionType.ANY)
    assert again.describe(literal) == []
    anything = AclBindingFilter(ResourceType.ANY, None, PatternType.ANY, "User:bob", None, AclOperation.ANY,
                                AclPermissionType.ANY)
    assert again.delete([anything]) == [[b]]
    third = Authorizer(tmp_path, enabled=True)
    third.load()
    assert third.acls() == [a]


def test_invalid_acls() -> None:
    ok = AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:a", "*", AclOperation.ALTER,
                    AclPermissionType.ALLOW)
    assert validate_new_acl(ok) is None
    assert validate_new_acl(AclBinding(ResourceType.CLUSTER, "other", PatternType.LITERAL, "User:a", "*",
                                       AclOperation.ALTER, AclPermissionType.ALLOW)) is not None
    assert validate_new_acl(AclBinding(ResourceType.TOPIC, "t", PatternType.MATCH, "User:a", "*",
                                       AclOperation.ALTER, AclPermissionType.ALLOW)) is not None
    assert validate_new_acl(AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "alice", "*",
                                       AclOperation.ALTER, AclPermissionType.ALLOW)) is not None
