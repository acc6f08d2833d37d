"""The handler registry: which APIs the broker serves, at which versions.

Each handler module registers its functions with `@handles(api, "lo-hi")`. `SERVED` says the same
as a table (api key -> versions, handler module): ApiVersions is answered from the table, and a
handler module is imported by the first request for one of its keys (`ServedHandlers`), so the
broker answers its first ApiVersions without importing every handler and what they import (issue
22). The two cannot drift apart: loading a handler whose registered versions differ from the
table's fails, and tests/broker/test_handler_table.py imports every handler module and compares
the whole registry with the table. So the broker never advertises an API or version it does not
serve (franz-go's kfake does the same). A request for an API we have no handler for closes the
connection (what Kafka does for an unknown api key); a version outside the range gets
UNSUPPORTED_VERSION from the dispatcher.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from minibroker.network.channel import Channel
from minibroker.security.authorizer import AclOperation, ResourceType
from minibroker.services import BrokerServices
from protocol.headers import RequestHeader
from protocol.schema import Api, Versions


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


# api key -> (versions served, the module under minibroker.handlers that registers its handler)
SERVED: dict[int, tuple[str, str]] = {
    0: ("0-13", "produce"), 1: ("0-18", "fetch"), 2: ("0-11", "list_offsets"), 3: ("0-13", "metadata"),
    8: ("0-10", "groups"), 9: ("0-10", "groups"), 10: ("0-6", "groups"), 11: ("0-9", "groups"),
    12: ("0-4", "groups"), 13: ("0-5", "groups"), 14: ("0-5", "groups"), 15: ("0-6", "groups"),
    16: ("0-5", "groups"), 17: ("0-1", "security"), 18: ("0-4", "api_versions"), 19: ("0-7", "topics"),
    20: ("0-6", "topics"), 21: ("0-2", "admin"), 22: ("0-5", "producer_ids"), 23: ("0-4", "admin"),
    24: ("0-5", "transactions"), 25: ("0-4", "transactions"), 26: ("0-5", "transactions"),
    28: ("0-5", "transactions"), 29: ("1-3", "acls"), 30: ("1-3", "acls"), 31: ("1-3", "acls"),
    32: ("0-4", "configs"), 33: ("0-2", "configs"), 35: ("0-4", "admin"), 36: ("0-2", "security"),
    37: ("0-3", "topics"), 42: ("0-2", "groups"), 44: ("0-1", "configs"), 47: ("0", "groups"),
    48: ("0-1", "client_quotas"), 49: ("0-1", "client_quotas"), 50: ("0", "security"), 51: ("0", "security"),
    60: ("0-2", "admin"), 61: ("0", "transactions"), 65: ("0", "transactions"), 66: ("0-2", "transactions"),
    68: ("0-1", "consumer_groups"), 69: ("0-1", "consumer_groups"), 75: ("0", "admin"),
    # KIP-932 share groups (not served with group.share.enable=false: minibroker.server)
    76: ("1", "share_groups"), 77: ("1", "share_groups"), 78: ("1-2", "share_groups"),
    79: ("1-2", "share_groups"), 90: ("0-1", "share_groups"), 91: ("0", "share_groups"),
    92: ("0", "share_groups"),
}
SERVED_VERSIONS: dict[int, Versions] = {key: Versions(versions) for key, (versions, _) in SERVED.items()}
# Handler modules that must be imported with another: the consumer- and share-group modules
# register their GROUP config keys with handlers/configs.py (GROUP_CONFIG_PROVIDERS) when imported,
# so a DescribeConfigs or AlterConfigs of a GROUP resource must not come before them.
LOADED_WITH: dict[str, tuple[str, ...]] = {"configs": ("consumer_groups", "share_groups")}


def load_handler(key: int) -> Handler:
    """The handler of a key in SERVED, its module imported if this is the first use."""
    module = SERVED[key][1]
    # the companions even when the module itself is in (another handler module imported it)
    for name in (module, *LOADED_WITH.get(module, ())):
        importlib.import_module(f"minibroker.handlers.{name}")
    handler = HANDLERS[key]
    served = SERVED_VERSIONS[key]
    if (handler.versions.lo, handler.versions.hi) != (served.lo, served.hi):
        raise RuntimeError(f"{handler.api.name}: registered v{handler.versions}, SERVED says v{served}")
    return handler


class ServedHandlers(Mapping[int, Handler]):
    """The handlers one broker serves, by api key: the keys and versions come from the table (what
    ApiVersions advertises), a handler is loaded when first looked up. Iterating over the values
    loads every handler (the console, tests)."""

    def __init__(self, versions: Mapping[int, Versions]):
        self.versions = dict(versions)
        self.loaded: dict[int, Handler] = {}

    def __getitem__(self, key: int) -> Handler:
        handler = self.loaded.get(key)
        if handler is None:
            if key not in self.versions:
                raise KeyError(key)
            handler = self.loaded[key] = load_handler(key)
        return handler

    def __contains__(self, key: object) -> bool:
        return key in self.versions

    def __iter__(self) -> Iterator[int]:
        return iter(self.versions)

    def __len__(self) -> int:
        return len(self.versions)


def load_all() -> dict[int, Handler]:
    """Import every handler module (each registers itself)."""
    import pkgutil

    import minibroker.handlers as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name != "registry":
            importlib.import_module(f"minibroker.handlers.{mod.name}")
    return HANDLERS
