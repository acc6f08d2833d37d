"""A principal in an Envelope (KIP-590): Kafka's DefaultKafkaPrincipalBuilder.serialize /
deserialize, the version-prefixed DefaultPrincipalData message (version 0, flexible: type and name
as compact strings, tokenAuthenticated as a boolean, no tagged fields).

A broker that forwards a request whose answer depends on who asks (the delegation token APIs: the
owner, the requester, who may renew) wraps it in an Envelope with this principal, as Kafka's
ForwardingManager does; the controller reads it back (minibroker.controller.controller_apis).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0


@dataclass(frozen=True, slots=True)
class EnvelopePrincipal:
    principal: str  # "Type:name", as RequestContext.principal
    token_authenticated: bool = False


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def serialize(p: EnvelopePrincipal) -> bytes:
    kind, _, name = p.principal.partition(":")
    out = bytearray(struct.pack(">h", VERSION))
    for text in (kind, name):
        raw = text.encode()
        out += _uvarint(len(raw) + 1) + raw
    out += b"\x01" if p.token_authenticated else b"\x00"
    return bytes(out + _uvarint(0))


def deserialize(data: bytes) -> EnvelopePrincipal:
    """The principal; ValueError on bytes that are not DefaultPrincipalData v0."""
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        if version != VERSION:
            raise ValueError(f"DefaultPrincipalData version {version}")
        pos, texts = 2, []
        for _ in range(2):
            size, pos = _read_uvarint(data, pos)
            if size == 0:
                raise ValueError("a null principal type or name")
            texts.append(data[pos:pos + size - 1].decode())
            pos += size - 1
        token_authenticated = data[pos] != 0
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"not a serialized principal: {e}") from e
    return EnvelopePrincipal(f"{texts[0]}:{texts[1]}", token_authenticated)
