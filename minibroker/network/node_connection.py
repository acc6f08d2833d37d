"""One client connection from this broker to another node (Kafka: the NetworkClient a
ReplicaFetcherThread's BrokerBlockingSender holds).

Theory of operation: `connect` opens a TCP connection and asks ApiVersions (v3, falling back to
v0 as Kafka's clients do when the peer answers UNSUPPORTED_VERSION); `send` picks for an API the
highest version both sides have and our own ceiling allows, writes one request frame and reads
its answer. Requests go one at a time (a fetcher has one request in flight per leader, as
Kafka's), so an answer is matched by waiting for it; the correlation id is still checked. Record
bytes in a Fetch answer stay a view into the frame they came in (no copy until the log's
`pwrite`). PLAINTEXT only: an inter-broker listener with TLS or SASL is not supported yet.
"""

from __future__ import annotations

import asyncio
import struct

from minibroker_protocol import types as t
from minibroker_protocol.apis import api_versions
from minibroker_protocol.codec import Output, decode, encode
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version
from minibroker_protocol.schema import Api, Message

_SIZE = struct.Struct(">i")


class NodeConnection:
    """A connection to one node; `send` negotiates the version of each API from ApiVersions."""

    def __init__(self, host: str, port: int, client_id: str, *, max_frame_size: int = 128 << 20) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.max_frame_size = max_frame_size
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}  # api key -> the peer's (min, max)

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self, timeout_s: float = 10.0) -> None:
        # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancellation that arrives as
        # the connect fails, and a fetcher being shut down would go on reconnecting
        async with asyncio.timeout(timeout_s):
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        for version in (3, 0):
            resp = await self.request(api_versions.API, version, api_versions.REQUEST(
                client_software_name="minibroker", client_software_version="1"))
            assert isinstance(resp, api_versions.ApiVersionsResponse)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION and version:
                continue
            if resp.error_code:
                raise KafkaError(resp.error_code, f"ApiVersions to {self.host}:{self.port} failed")
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            return

    def version_for(self, api: Api, highest: int) -> int:
        """The highest version of `api` both sides speak, at most `highest`."""
        lo, hi = self.versions.get(api.key, (0, -1))
        v = min(hi, highest, max(api.versions))
        if v < lo or v < 0:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"{self.host}:{self.port} does not serve {api.name} "
                             f"at a version we speak (it has {lo}-{hi})")
        return v

    async def request(self, api: Api, version: int, body: Message) -> Message:
        """Send one request and return its decoded answer."""
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:
            raise ConnectionError(f"not connected to {self.host}:{self.port}")
        self._correlation = cid = (self._correlation + 1) & 0x7FFFFFFF
        out = Output(b"\0\0\0\0")
        encode_request_header(out, RequestHeader(api.key, version, cid, self.client_id))
        encode(api.request, version, body, out)
        out[0:4] = _SIZE.pack(len(out) - 4)
        writer.write(out)
        await writer.drain()
        size = _SIZE.unpack(await reader.readexactly(4))[0]
        if size < 0 or size > self.max_frame_size:
            raise ConnectionError(f"answer of {size} bytes from {self.host}:{self.port}")
        frame = memoryview(await reader.readexactly(size))
        got, pos = t.read_int32(frame, 0)
        if got != cid:
            raise ConnectionError(f"correlation id {got} from {self.host}:{self.port}, expected {cid}")
        if response_header_version(api.key, version) >= 1:
            count, pos = t.read_uvarint(frame, pos)
            for _ in range(count):
                _, pos = t.read_uvarint(frame, pos)
                n, pos = t.read_uvarint(frame, pos)
                pos += n
        return decode(api.response, version, frame[pos:])

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except (OSError, ConnectionError):
                pass
