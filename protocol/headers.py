"""Request and response headers, and which header version each API version uses.

Request header v0: api_key, api_version, correlation_id. v1 adds client_id (a nullable string
that stays int16-prefixed even in flexible versions). v2 (flexible API versions) adds tagged
fields. Response header v0 is the correlation id; v1 (flexible) adds tagged fields. Kafka's one
exception, kept here as data: ApiVersions responses always use header v0, because a client that
sent an unsupported version must still be able to read the answer (KIP-511).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from minibroker_protocol import types as t
from minibroker_protocol.apis import LOADED
from minibroker_protocol.apis import api as load_api
from minibroker_protocol.codec import Chunk, Output, encode
from minibroker_protocol.schema import Api, Message
from minibroker_protocol.types import DecodeError

API_VERSIONS_KEY = 18
# Response header version forced regardless of flexibility: {api_key: header version}.
RESPONSE_HEADER_EXCEPTIONS = {API_VERSIONS_KEY: 0}
_FIXED_PART = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id's length
# Header versions by (api_key, api_version), filled on first use: every request asked the schema
# twice (its flexibility) per request (issue 33). Only pairs a schema defines are kept, so a
# client sending made-up keys or versions cannot grow them.
_REQUEST_HEADER_VERSIONS: dict[tuple[int, int], int] = {}
_RESPONSE_HEADER_VERSIONS: dict[tuple[int, int], int] = {}


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    unknown_tags: dict[int, bytes] | None = field(default=None)


def request_header_version(api_key: int, api_version: int) -> int:
    known = _REQUEST_HEADER_VERSIONS.get((api_key, api_version))
    if known is not None:
        return known
    # only this key's schema is imported (minibroker_protocol.apis.api), not every API's (issue 22)
    schema = LOADED.get(api_key) or load_api(api_key)
    if schema is None or api_version not in schema.versions:
        return 1
    version = _REQUEST_HEADER_VERSIONS[api_key, api_version] = 2 if schema.is_flexible(api_version) else 1
    return version


def response_header_version(api_key: int, api_version: int) -> int:
    known = _RESPONSE_HEADER_VERSIONS.get((api_key, api_version))
    if known is not None:
        return known
    if api_key in RESPONSE_HEADER_EXCEPTIONS:
        return RESPONSE_HEADER_EXCEPTIONS[api_key]
    schema = LOADED.get(api_key) or load_api(api_key)
    if schema is None or api_version not in schema.versions:
        return 0
    version = _RESPONSE_HEADER_VERSIONS[api_key, api_version] = 1 if schema.is_flexible(api_version) else 0
    return version


def decode_request_header(buf, pos: int = 0) -> tuple[RequestHeader, int]:
    """Read a request header; the version comes from the api key and version it starts with."""
    try:  # the fixed part in one unpack (issue 33: the header is read on every request)
        api_key, api_version, correlation_id, n = _FIXED_PART.unpack_from(buf, pos)
    except struct.error:
        n = -2  # too short: the field-by-field reads below name what is missing
    start = pos + 10
    end = start + n
    client_id: str | None
    if n >= 0 and end <= len(buf):
        # Kafka reads strings with `new String(bytes, UTF_8)` (minibroker_protocol.types.read_nullable_string)
        client_id = str(buf[start:end], "utf-8", "replace")
        pos = end
    else:
        api_key, pos = t.read_int16(buf, pos)
        api_version, pos = t.read_int16(buf, pos)
        correlation_id, pos = t.read_int32(buf, pos)
        client_id, pos = t.read_nullable_string(buf, pos)
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    if request_header_version(api_key, api_version) >= 2:
        count, pos = t.read_uvarint(buf, pos)
        for _ in range(count):
            tag, pos = t.read_uvarint(buf, pos)
            size, pos = t.read_uvarint(buf, pos)
            if pos + size > len(buf):
                raise DecodeError("request header tagged field runs past the end")
            if header.unknown_tags is None:
                header.unknown_tags = {}
            header.unknown_tags[tag] = bytes(buf[pos:pos + size])
            pos += size
    return header, pos


def encode_request_header(out: bytearray, header: RequestHeader) -> None:
    t.write_int16(out, header.api_key)
    t.write_int16(out, header.api_version)
    t.write_int32(out, header.correlation_id)
    t.write_string(out, header.client_id)
    if request_header_version(header.api_key, header.api_version) >= 2:
        out.append(0)


def encode_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    t.write_int32(out, correlation_id)
    if header_version >= 1:
        out.append(0)


def encode_response_frame(api: Api, version: int, correlation_id: int, response: Message) -> list[Chunk]:
    """A whole response frame: size, header and body. Record fields stay the file regions the
    body holds, as separate chunks after the bytes before them (the zero-copy path)."""
    out = Output(b"\0\0\0\0")
    encode_response_header(out, correlation_id, response_header_version(api.key, version))
    encode(api.response, version, response, out)
    out[0:4] = (out.total_size - 4).to_bytes(4, "big", signed=True)
    return out.chunks()
