"""The handler registry: which APIs the broker serves, at which versions.

Each handler module registers its functions with `@handles(api, "lo-hi")`. ApiVersions is built
from this registry, so the broker never advertises an API or version it does not serve
(franz-go's kfake does the same). A request for an API we have no handler for closes the
connection (what Kafka does for an unknown api key); a version outside the range gets
UNSUPPORTED_VERSION from the dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from minibroker.security.authorizer import AclOperation, ResourceType
from minibroker.services import BrokerServices
from protocol.headers import RequestHeader
from protocol.schema import Api, Versions


class Channel(Protocol):
    """What a handler may do with the connection a request came in on (minibroker.connection)."""

    peer: str
    listener: str | None  # the name of the listener it was accepted on
    principal: str  # "User:<name>"; User:ANONYMOUS until SASL authenticates
    ip: str  # the client's address, for ACL host matching

    def close(self, reason: str | None) -> None: ...

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` once when the connection closes (at once if it is closed already); what
        lives as long as a connection does hangs off it (Kafka: ConnectionDisconnectListener)."""
        ...


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    services: BrokerServices
    connection: Channel | None

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def advertised(self) -> tuple[str, int]:
        """(host, port) of this broker on the listener the request came in on."""
        return self.services.endpoint(self.connection.listener if self.connection is not None else None)

    @property
    def client_host(self) -> str:
        if self.connection is None:
            return "/127.0.0.1"
        return "/" + self.connection.peer.rsplit(":", 1)[0]

    @property
    def principal(self) -> tuple[str, str]:
        """(principal, host) of the client, as the authorizer matches them."""
        conn = self.connection
        return (conn.principal, conn.ip) if conn is not None else ("User:ANONYMOUS", "127.0.0.1")

    def authorized(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """Whether the client may do `op` on the resource (always, without an authorizer)."""
        principal, host = self.principal
        return self.services.authorizer.authorize(principal, host, op, rtype, name)


HandlerFn = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Handler:
    api: Api
    versions: Versions
    fn: HandlerFn


HANDLERS: dict[int, Handler] = {}


def handles(api: Api, versions: str) -> Callable[[HandlerFn], HandlerFn]:
    served = Versions(versions)
    if served.lo < api.versions.lo or served.hi > api.versions.hi:
        raise ValueError(f"{api.name}: cannot serve v{versions}, the schema has v{api.versions}")

    def register(fn: HandlerFn) -> HandlerFn:
        if api.key in HANDLERS:
            raise ValueError(f"{api.name} already has a handler")
        HANDLERS[api.key] = Handler(api, served, fn)
        return fn

    return register


def load_all() -> dict[int, Handler]:
    """Import every handler module (each registers itself)."""
    import importlib
    import pkgutil

    import minibroker.handlers as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name != "registry":
            importlib.import_module(f"minibroker.handlers.{mod.name}")
    return HANDLERS
