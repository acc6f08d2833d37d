"""Who a console write acts as, and the ACL check each write makes (issue 21).

Without an authorizer (`authorizer.class.name` unset) nothing here applies: a write acts as no one
and is checked by nothing but `--console-allow-writes`, as before. With one, a write needs HTTP
Basic credentials of one of the broker's SASL users — a PLAIN user of a listener's JAAS config
(`user_<name>="<password>"`) or a user with SCRAM credentials (AlterUserScramCredentials; the
password is checked against the stored salted keys as a SCRAM login would, RFC 5802) — and then
acts as `User:<name>` from the HTTP client's address, exactly as a Kafka client that logged in
with SASL as that user from that address: the same `RequestContext`, the same authorizer, the same
checks of minibroker.handlers.authz the protocol handlers make:

| console action  | the protocol API it imitates | checked (Kafka: KafkaApis)                          |
|-----------------|------------------------------|-----------------------------------------------------|
| create a topic  | CreateTopics                 | CREATE on the cluster, or CREATE on the topic        |
| delete a topic  | DeleteTopics                 | DELETE on the topic                                 |
| produce         | Produce (no transaction)     | WRITE on the topic                                  |
| reset offsets   | OffsetCommit (admin, as kafka-consumer-groups.sh --reset-offsets) | READ on the group, then READ on the topic |

A refusal is an `ActionError` with status 403 naming Kafka's error code, the principal, the
operation and the resource. Pages (reads) are not checked: the console binds loopback unless
told otherwise (docs/console.md), with one exception: the live trace (/trace and /trace/stream)
shows every client's requests, so with an authorizer it needs the same credentials as a write and
ALTER on the cluster, an operator's right (super users have it); Kafka has no protocol API that
shows other clients' requests, its request log is the operator's file (issue 30).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from minibroker.console.actions import ActionError
from minibroker.handlers import authz
from minibroker.handlers.registry import RequestContext
from minibroker.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.security.scram import MECHANISMS, credential_from_salted, salted_password
from minibroker.services import BrokerServices
from minibroker_protocol.apis import create_topics, delete_topics, describe_cluster, offset_commit, produce
from minibroker_protocol.errors import ErrorCode, error_name
from minibroker_protocol.headers import RequestHeader

CLIENT_ID = "minibroker-console"
REALM = "minibroker console"


class AuthRequired(ActionError):
    """401: no credentials, or credentials of no SASL user (the browser asks for them again)."""

    def __init__(self, message: str) -> None:
        super().__init__(401, message)


@dataclass(slots=True)
class ConsoleChannel:
    """The console's HTTP client as the handlers see a connection (minibroker.network.channel.Channel): its address
    and the principal it authenticated as. It is no socket of the broker's: close() does nothing."""

    peer: str
    principal: str
    ip: str
    listener: str | None = None
    authenticator: None = None  # authenticated by HTTP Basic credentials, not SASL

    def close(self, reason: str | None) -> None:
        pass

    def close_when_sent(self, reason: str) -> None:
        pass

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        pass  # one HTTP request, no connection whose end anything could wait for

    def mute(self, ms: int) -> None:
        pass  # the console's actions are not throttled


def check_password(services: BrokerServices, plain_users: Mapping[str, str], user: str, password: str) -> bool:
    """Whether `password` is `user`'s: PLAIN users first (the JAAS config's), then SCRAM credentials."""
    expected = plain_users.get(user)
    if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
        return True
    for mechanism, cred in services.scram_credentials.mechanisms(user).items():
        salted = salted_password(MECHANISMS[mechanism][0], password.encode(), cred.salt, cred.iterations)
        if hmac.compare_digest(credential_from_salted(mechanism, cred.salt, salted, cred.iterations).stored_key,
                               cred.stored_key):
            return True
    return False


def principal_of(services: BrokerServices, plain_users: Mapping[str, str], authorization: str | None) -> str:
    """`User:<name>` of a request's `Authorization: Basic ...` header; AuthRequired otherwise."""
    if authorization is None or not authorization.lower().startswith("basic "):
        raise AuthRequired("the broker has an authorizer: a console write needs the user name and password of "
                           "one of the broker's SASL users (PLAIN or SCRAM), sent as HTTP Basic credentials")
    try:
        user, sep, password = base64.b64decode(authorization[6:].strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise AuthRequired("the Basic credentials are not base64 of UTF-8 user:password") from None
    if not sep or not user or not check_password(services, plain_users, user, password):
        raise AuthRequired("Authentication failed: Invalid username or password")
    return f"User:{user}"


def context(services: BrokerServices, api_key: int, version: int, principal: str, ip: str, port: int) -> RequestContext:
    """The RequestContext of a protocol request from `principal` at `ip` (what authz checks read)."""
    return RequestContext(RequestHeader(api_key, version, 0, CLIENT_ID), services,
                          ConsoleChannel(f"{ip}:{port}", principal, ip))


def _refused(ctx: RequestContext, code: int, op: AclOperation, rtype: ResourceType, name: str,
             also: str = "") -> ActionError:
    principal = ctx.principal[0]
    return ActionError(403, f"{error_name(code)}: {principal} from {ctx.principal[1]} is not allowed to "
                            f"{op.name} on {_resource(rtype)} {name!r}{also}")


def _resource(rtype: ResourceType) -> str:
    return {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster"}.get(
        rtype, rtype.name)


def authorize_create(ctx: RequestContext, topic: str) -> None:
    if not authz.may_create_topic(ctx, topic):
        raise _refused(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, AclOperation.CREATE, ResourceType.TOPIC, topic,
                       f" (nor CREATE on Cluster {CLUSTER_NAME!r})")


def authorize_delete(ctx: RequestContext, topic: str) -> None:
    if authz.topic_denied(ctx, topic, AclOperation.DELETE):
        raise _refused(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, AclOperation.DELETE, ResourceType.TOPIC, topic)


def authorize_produce(ctx: RequestContext, topic: str) -> None:
    if authz.topic_denied(ctx, topic, AclOperation.WRITE):
        raise _refused(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, AclOperation.WRITE, ResourceType.TOPIC, topic)


def authorize_reset(ctx: RequestContext, group: str, topic: str) -> None:
    """OffsetCommit's order: the group first (every partition refused with it), then each topic."""
    if authz.group_denied(ctx, group):
        raise _refused(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, AclOperation.READ, ResourceType.GROUP, group)
    if authz.topic_denied(ctx, topic, AclOperation.READ):
        raise _refused(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED, AclOperation.READ, ResourceType.TOPIC, topic)


def authorize_trace(ctx: RequestContext) -> None:
    if not ctx.authorized(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        raise _refused(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, AclOperation.ALTER, ResourceType.CLUSTER,
                       CLUSTER_NAME, " (the live trace shows every client's requests)")


# The API each action imitates, for the request context (its key and the version the action's
# checks correspond to).
CREATE = (create_topics.API.key, create_topics.API.versions.hi)
DELETE = (delete_topics.API.key, delete_topics.API.versions.hi)
PRODUCE = (produce.API.key, 13)
RESET = (offset_commit.API.key, 9)
TRACE = (describe_cluster.API.key, describe_cluster.API.versions.hi)  # a cluster-wide read
