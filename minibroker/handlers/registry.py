"""The handler registry: which APIs the broker serves, at which versions.

A handler states its API and versions once, on its own line: `@handles(api, "lo-hi")` marks the
function (kfake's `regKey` beside each handler), and registers nothing. tools/gen_api_table.py
reads the marks of every handler module into minibroker/handlers/api_table.py (api key ->
versions, module, function, share-group API or not), checked in because the broker answers its
first ApiVersions from it without importing every handler and what they import (issue 22); a
handler module is imported by the first request for one of its keys (`ServedHandlers`), its
function taken by name. The table cannot drift from the handlers: tests/broker/test_handler_table.py
regenerates it and compares, and loading a handler whose mark differs from its row fails. So the
broker never advertises an API or version it does not serve (franz-go's kfake does the same). A
request for an API we have no handler for closes the connection (what Kafka does for an unknown
api key); a version outside the range gets UNSUPPORTED_VERSION from the dispatcher.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from minibroker.handlers.api_table import API_TABLE
from minibroker.network.channel import Channel
from minibroker.security.authorizer import AclOperation, ResourceType
from minibroker.services import BrokerServices
from minibroker_protocol.headers import RequestHeader
from minibroker_protocol.schema import Api, Message, Versions


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    services: BrokerServices
    connection: Channel | None
    faults: tuple[str, ...] = ()  # the faults that fired on this request (minibroker.faults), for the trace

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


# The request is whatever api.request decoded for this handler's API: the pairing is the table's, not
# the type checker's, so the request stays Any here (each handler states its own message type).
HandlerFn = Callable[[RequestContext, Any], Awaitable[Message | None]]
F = TypeVar("F", bound=HandlerFn)
# the attribute `handles` marks a handler function with: (its API, the versions it serves)
MARK = "__kafka_api__"


@dataclass(frozen=True, slots=True)
class Handler:
    api: Api
    versions: Versions
    fn: HandlerFn


def handles(api: Api, versions: str) -> Callable[[F], F]:
    """Marks a handler of `api` at `versions` ("lo-hi"): the one statement of what it serves.
    Nothing is registered on import; tools/gen_api_table.py reads the marks into API_TABLE."""
    served = Versions(versions)
    if served.lo < api.versions.lo or served.hi > api.versions.hi:
        raise ValueError(f"{api.name}: cannot serve v{versions}, the schema has v{api.versions}")

    def mark(fn: F) -> F:
        setattr(fn, MARK, (api, served))
        return fn

    return mark


def marked(fn: object) -> tuple[Api, Versions] | None:
    """(api, versions) of a function marked with `handles`, else None."""
    mark: tuple[Api, Versions] | None = getattr(fn, MARK, None)
    return mark


def served_versions(share_groups: bool) -> dict[int, Versions]:
    """The versions served by api key, from API_TABLE; without the share-group APIs (KIP-932) when
    share groups are off (group.share.enable=false), so they are not advertised either."""
    return {key: Versions(api.versions) for key, api in API_TABLE.items() if share_groups or not api.share_group}


def load_handler(key: int) -> Handler:
    """The handler of a key in API_TABLE: its module imported (if this is the first use) and the
    function taken by name. Its mark must state the table's versions (else the table is stale:
    run tools/gen_api_table.py)."""
    entry = API_TABLE[key]
    fn = getattr(importlib.import_module(f"minibroker.handlers.{entry.module}"), entry.function)
    mark = marked(fn)
    if mark is None or mark[0].key != key or repr(mark[1]) != repr(Versions(entry.versions)):
        stated = f"v{mark[1]}" if mark is not None else "nothing"
        raise RuntimeError(f"{entry.module}.{entry.function} states {stated}, API_TABLE says "
                           f"api {key} v{entry.versions}: run tools/gen_api_table.py")
    return Handler(mark[0], mark[1], fn)


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
    """Every handler in API_TABLE, each module imported."""
    return {key: load_handler(key) for key in API_TABLE}
