"""A broker's connection to the controller (Kafka: NodeToControllerChannelManager).

One TCP connection to the controller listener, opened on first use and again after a failure.
The first request on it is ApiVersions; each later request goes at the highest version both
sides serve (the broker's schemas, the controller's ApiVersions). Requests go one at a time and
each waits for its answer, bounded by `timeout`. Raft fetches and heartbeats use separate
channels, as Kafka's broker does, so a long-polling fetch never delays a heartbeat.

In a quorum of several controllers the channel connects to the one its ControllerNodeProvider
names (minibroker.metadata.controller_nodes), moves when the provider learns another, and sends a
request again to the next one when it was answered NOT_CONTROLLER (Kafka's
NodeToControllerRequestThread re-queues such a request the same way), until `timeout`.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Protocol, TypeVar

from minibroker.metadata.controller_nodes import ControllerNodeProvider
from minibroker_protocol.apis import api_versions
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from minibroker_protocol.schema import Api, Message
from minibroker_protocol.types import read_int32, read_uvarint

R = TypeVar("R", bound=Message)


class ControllerUnavailable(ConnectionError):
    """The controller could not be reached or did not answer in time."""


class LinkFault(Protocol):
    """A fault that cuts this broker off from the controller (minibroker.faults.network_kinds):
    it raises ControllerUnavailable after what an unanswered or refused request costs, or
    returns once the link is whole again."""

    async def through(self, channel: ControllerChannel, api: Api, timeout: float) -> None: ...


# a NOT_CONTROLLER answer is sent again to the next controller after this long (Kafka's
# NodeToControllerRequestThread waits for the metadata to name the new controller)
NOT_CONTROLLER_BACKOFF_S = 0.05


def answers_not_controller(message: Message) -> bool:
    """NOT_CONTROLLER anywhere in an answer (a forwarded CreateTopics carries it per topic): the
    whole request went to a controller that is not the active one (Kafka:
    NodeToControllerRequestThread checks the response's errorCounts() for it)."""
    for name in message._names:
        value = getattr(message, name)
        if name == "error_code" and value == ErrorCode.NOT_CONTROLLER:
            return True
        if isinstance(value, Message) and answers_not_controller(value):
            return True
        if isinstance(value, list) and value and isinstance(value[0], Message) \
                and any(answers_not_controller(v) for v in value):
            return True
    return False


class ControllerChannel:
    def __init__(self, host: str, port: int, *, client_id: str, nodes: ControllerNodeProvider | None = None):
        self.nodes = nodes if nodes is not None else ControllerNodeProvider.single(host, port)
        self.host, self.port = self.nodes.target()
        self.client_id = client_id
        self._generation = self.nodes.generation
        self.fault: LinkFault | None = None  # set while a controller.cut is
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._correlation = itertools.count(1)
        self.versions: dict[int, tuple[int, int]] = {}

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        req = api_versions.REQUEST(client_software_name="minibroker", client_software_version="1")
        resp = await self._exchange(api_versions.API, 3, req)
        assert isinstance(resp, api_versions.ApiVersionsResponse)
        if resp.error_code != ErrorCode.NONE:
            raise ControllerUnavailable(f"ApiVersions failed with error {resp.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def version_for(self, api: Api) -> int:
        theirs = self.versions.get(api.key)
        if theirs is None:
            raise ControllerUnavailable(f"the controller does not serve {api.name}")
        version = min(theirs[1], api.request.valid.hi)
        if version < max(theirs[0], api.request.valid.lo):
            raise ControllerUnavailable(f"no version of {api.name} both sides serve")
        return version

    async def send(self, api: Api, request: Message, *, timeout: float = 30.0, version: int | None = None,
                   near_version: int | None = None) -> Message:
        """The controller's answer to `request`; ControllerUnavailable if there is none.
        `near_version`: the version closest to it both sides serve (a forwarded request keeps the
        client's version where it can: its fields are that version's)."""
        if self.fault is not None:
            await self.fault.through(self, api, timeout)
        async with self._lock:
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
                # races with the answer, and a stopping loader would then never stop
                async with asyncio.timeout(timeout):
                    while True:
                        response = await self._send(api, request, version, near_version)
                        if not self.nodes.several or not answers_not_controller(response):
                            return response
                        # a controller that is not the active one: the next, until one accepts
                        self.nodes.on_failure((self.host, self.port))
                        await self._close()
                        await asyncio.sleep(NOT_CONTROLLER_BACKOFF_S)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as e:
                await self._close()
                self.nodes.on_failure((self.host, self.port))
                raise ControllerUnavailable(f"{api.name} to the controller at {self.host}:{self.port}: {e!r}") from e

    async def _send(self, api: Api, request: Message, version: int | None, near_version: int | None) -> Message:
        if self._writer is not None and (self._generation != self.nodes.generation
                                         or (self.host, self.port) != self.nodes.target()):
            await self._close()  # the provider names another controller now
        if self._writer is None:
            self.host, self.port = self.nodes.target()
            self._generation = self.nodes.generation
            await self._connect()
        if version is None:
            version = self.version_for(api)
            if near_version is not None:
                version = max(min(version, near_version), self.versions[api.key][0], api.request.valid.lo)
        return await self._exchange(api, version, request)

    async def _exchange(self, api: Api, version: int, request: Message) -> Message:
        assert self._reader is not None and self._writer is not None
        correlation_id = next(self._correlation)
        out = bytearray(4)
        encode_request_header(out, RequestHeader(api.key, version, correlation_id, self.client_id))
        body = encode(api.request, version, request).to_bytes()
        out += body
        struct.pack_into(">i", out, 0, len(out) - 4)
        self._writer.write(bytes(out))
        await self._writer.drain()
        size = struct.unpack(">i", await self._reader.readexactly(4))[0]
        frame = await self._reader.readexactly(size)
        got, pos = read_int32(frame, 0)
        if got != correlation_id:
            raise ConnectionError(f"correlation id {got} answers no request (expected {correlation_id})")
        if response_header_version(api.key, version) >= 1:
            tags, pos = read_uvarint(frame, pos)
            for _ in range(tags):
                _, pos = read_uvarint(frame, pos)
                size, pos = read_uvarint(frame, pos)
                pos += size
        return decode(api.response, version, frame, pos)

    async def _close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()

    async def close(self) -> None:
        async with self._lock:
            await self._close()
