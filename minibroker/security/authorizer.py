"""ACLs and the authorizer: Kafka's StandardAuthorizer semantics (KIP-11, KIP-290, KIP-500).

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED; the LITERAL name `*` matches
every resource of the type) to an entry (principal, host, operation, ALLOW or DENY). A request for
(principal, host, operation, resource) is decided like Kafka's StandardAuthorizerData:

- a super user (`super.users`, `;`-separated principals) may do anything;
- a matching DENY wins over any ALLOW; DENY matches its own operation or ALL;
- an ALLOW matches its own operation, ALL, or an operation it implies: READ, WRITE, DELETE and
  ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS;
- principal `User:*` and host `*` match everyone;
- with no ACL at all on the resource (for anyone), `allow.everyone.if.no.acl.found` decides;
  otherwise (ACLs exist but none allows) the answer is no.

The ACLs persist in `acls.json` in the data directory (Kafka keeps them as AccessControlEntryRecords
in its metadata log), rewritten whole on each change (temporary file, fsync, rename).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

log = logging.getLogger("minibroker.security")

FILE_NAME = "acls.json"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name (Kafka: Resource.CLUSTER_NAME)
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
# Kafka's two authorizer class names; either turns ACL checks on.
AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "kafka.security.authorizer.AclAuthorizer")


class ResourceType(IntEnum):  # org.apache.kafka.common.resource.ResourceType codes
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):  # org.apache.kafka.common.resource.PatternType codes
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):  # org.apache.kafka.common.acl.AclOperation codes
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):  # org.apache.kafka.common.acl.AclPermissionType codes
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# An ALLOW of the key operation also allows these (Kafka: the implied operations of
# StandardAuthorizerData / AclEntry).
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}

# The operations that exist on each resource type (KIP-430's authorized-operations sets are drawn
# from these; Kafka: AclEntry.supportedOperations).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT),
}


def authorized_operations_bits(ops: Iterable[AclOperation]) -> int:
    """KIP-430's int32 bit field: bit `code` set for each operation."""
    bits = 0
    for op in ops:
        bits |= 1 << int(op)
    return bits


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def matches_resource(self, rtype: ResourceType, name: str) -> bool:
        """Whether this ACL's pattern covers the resource (rtype, name)."""
        if self.resource_type != rtype:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name == name or self.resource_name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.resource_name)

    def to_json(self) -> dict[str, object]:
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal, "host": self.host,
                "operation": self.operation.name, "permission": self.permission.name}

    @classmethod
    def from_json(cls, d: dict[str, str]) -> AclBinding:
        return cls(ResourceType[d["resource_type"]], d["resource_name"], PatternType[d["pattern_type"]],
                   d["principal"], d["host"], AclOperation[d["operation"]], AclPermissionType[d["permission"]])


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Describe/DeleteAcls' filter (Kafka: AclBindingFilter). None or ANY matches anything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def invalid_reason(self) -> str | None:
        """Why Kafka would refuse this filter (an UNKNOWN value anywhere), or None."""
        for v in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if int(v) == 0:
                return f"Filter contain UNKNOWN elements: {type(v).__name__}"
        return None

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == acl.permission

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            # MATCH: every ACL that would apply to the named resource (ResourcePatternFilter.matches)
            if self.resource_name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name == self.resource_name or acl.resource_name == WILDCARD
            return acl.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name


def validate_new_acl(acl: AclBinding) -> str | None:
    """Why Kafka's controller would refuse to create `acl` (INVALID_REQUEST), or None
    (Kafka: AclControlManager.validateNewAcl)."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
        return f"Invalid permissionType {acl.permission.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    if ":" not in acl.principal:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the " \
               "principal type from the principal name)"
    return None


def parse_super_users(value: str | None) -> frozenset[str]:
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


class Authorizer:
    """The ACL store and the decision. `enabled` is False without `authorizer.class.name`: then
    every request is allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka."""

    def __init__(self, data_dir: Path | None, *, enabled: bool, super_users: frozenset[str] = frozenset(),
                 allow_if_no_acl: bool = False):
        self.path = Path(data_dir) / FILE_NAME if data_dir is not None else None
        self.enabled = enabled
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: set[AclBinding] = set()

    # ---- the store

    def load(self) -> None:
        if self.path is None:
            return
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        self._acls = {AclBinding.from_json(d) for d in raw.get("acls", [])}
        log.info("loaded %d ACLs from %s", len(self._acls), self.path)

    FILE_NAME = FILE_NAME

    def use_metadata_log(self) -> bool:
        """KRaft mode: the ACLs come from the metadata log (`set_acls`) and no file is written;
        whether the file held ACLs that are now ignored."""
        had = bool(self._acls) and self.path is not None
        self.path = None
        self._acls = set()
        return had

    def set_acls(self, acls: Iterable[AclBinding]) -> None:
        """The whole set, as the metadata image holds it (Kafka: StandardAuthorizer.loadSnapshot)."""
        self._acls = set(acls)

    def acls(self) -> list[AclBinding]:
        return sorted(self._acls)

    def create(self, acls: Iterable[AclBinding]) -> None:
        self._commit(self._acls | set(acls))

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        return [a for a in sorted(self._acls) if f.matches(a)]

    def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; returns the removed ACLs, per filter."""
        removed = [[a for a in sorted(self._acls) if f.matches(a)] for f in filters]
        gone = {a for r in removed for a in r}
        if gone:
            self._commit(self._acls - gone)
        return removed

    def _commit(self, acls: set[AclBinding]) -> None:
        if self.path is not None and acls != self._acls:
            doc = {"version": 1, "acls": [a.to_json() for a in sorted(acls)]}
            tmp = self.path.with_suffix(".json.tmp")
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        self._acls = acls

    # ---- the decision

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        found = allowed = False
        for acl in self._acls:
            if not acl.matches_resource(rtype, name):
                continue
            found = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != host and acl.host != WILDCARD:
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.operation == op or acl.operation == AclOperation.ALL:
                    return False
            elif acl.operation == op or acl.operation == AclOperation.ALL or acl.operation in _IMPLIED_BY.get(
                    op, ()):
                allowed = True
        return allowed or (not found and self.allow_if_no_acl)

    def authorize_any(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """Whether some resource of `rtype` may get `op` (Kafka: Authorizer.authorizeByResourceType,
        used for idempotent producers without a transactional id): an ALLOW on any pattern that no
        DENY of the same or a wider pattern cancels."""
        if not self.enabled or principal in self.super_users:
            return True
        mine = [a for a in self._acls if a.resource_type == rtype
                and a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
                and a.operation in (op, AclOperation.ALL)]
        denies = [a for a in mine if a.permission == AclPermissionType.DENY]
        if any(a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD for a in denies):
            return False
        for a in mine:
            if a.permission != AclPermissionType.ALLOW:
                continue
            if not any(d.matches_resource(rtype, a.resource_name) and
                       (d.pattern_type == PatternType.PREFIXED or a.pattern_type == PatternType.LITERAL)
                       for d in denies):
                return True
        if self.allow_if_no_acl and not any(a.resource_type == rtype for a in self._acls):
            return True
        return False

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """KIP-430's bit field of the operations `principal` may do on the resource."""
        return authorized_operations_bits(
            op for op in SUPPORTED_OPERATIONS[rtype] if self.authorize(principal, host, op, rtype, name))
