"""One generic encoder/decoder, driven by the schemas.

Theory of operation: for each (schema, version) we compile, once, a reader and a writer: a tree
of small closures chosen by field type, nullability and flexibility (compact encodings and
tagged fields from KIP-482 in flexible versions). Decoding walks the bytes with a position and
builds the schema's struct objects; encoding appends to an `Output`. Fields absent from a version
decode to their defaults and are not written, as Kafka's generated code does for ignorable fields.

`records` fields are the one place where bytes are not copied: they decode to a memoryview of the
frame, and on encode they may be a *file region* (any object with `size`, such as the segment
slice the storage layer hands out). The writer then leaves a hole in the output and notes where, so the connection
can send the bytes around it and `sendfile` the region itself (the zero-copy fetch path).
"""

from __future__ import annotations

import keyword
import threading
from collections.abc import Callable
from typing import Any, TypeAlias

from minibroker_protocol import types as t
from minibroker_protocol.schema import BaseRecords, F, M, Message, RecordsRegion, Schema
from minibroker_protocol.types import DecodeError

Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

_BYTES_LIKE = (bytes, bytearray, memoryview)
# Kafka 4.4's generated readers refuse a collection (array) of more than 1,000,000 elements and a
# tagged-field section of more than 10,000 fields, or claiming more fields than bytes remain
# ("Tried to read a collection of size N, which exceeds the maximum allowed size of 1000000.").
MAX_COLLECTION_SIZE = 1_000_000
MAX_TAGGED_FIELDS = 10_000


class _Budget(threading.local):
    """Array elements a `decode_from(..., max_elements=)` in progress on this thread may still
    read (None: no budget). Per thread: a large request is decoded on a worker thread while the
    event loop decodes others."""

    left: int | None = None


_budget = _Budget()
# One piece of an encoded message in wire order: bytes, or a file region the connection sendfiles.
Chunk: TypeAlias = BaseRecords


class Output(bytearray):
    """Encoded bytes, plus (offset, region) pairs for record data to be sent from files."""

    regions: list[tuple[int, RecordsRegion]]

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.regions = []

    @property
    def total_size(self) -> int:
        return len(self) + sum(r.size for _, r in self.regions)

    def chunks(self) -> list[Chunk]:
        """The bytes and regions in wire order."""
        if not self.regions:
            return [self]
        view = memoryview(self)
        out: list[Chunk] = []
        start = 0
        for at, region in self.regions:
            if at > start:
                out.append(view[start:at])
            out.append(region)
            start = at
        if start < len(self):
            out.append(view[start:])
        return out

    def to_bytes(self) -> bytes:
        """Flatten, reading regions (for tests and traces; the broker sends chunks)."""
        return b"".join(bytes(c) if isinstance(c, _BYTES_LIKE) else c.read_all() for c in self.chunks())


# ---------------------------------------------------------------------------------- readers


def _primitive_reader(base: str, nullable: bool, flexible: bool) -> Reader:
    if base == "int8":
        return t.read_int8
    if base == "int16":
        return t.read_int16
    if base == "uint16":
        return t.read_uint16
    if base == "int32":
        return t.read_int32
    if base == "int64":
        return t.read_int64
    if base == "float64":
        return t.read_float64
    if base == "bool":
        return t.read_bool
    if base == "uuid":
        return t.read_uuid
    if base == "string":
        if flexible:
            return t.read_compact_nullable_string if nullable else t.read_compact_string
        return t.read_nullable_string if nullable else t.read_string
    if base == "bytes":
        rb = t.read_compact_bytes if flexible else t.read_bytes
        return lambda buf, pos: rb(buf, pos, nullable)
    if base == "records":
        return lambda buf, pos: t.read_records(buf, pos, flexible)
    raise ValueError(f"unknown type {base}")


def _field_reader(f: F, version: int, flexible: bool, *, tagged: bool = False) -> Reader:
    nullable = version in f.nullable
    if f.is_struct:
        elem = _struct_reader(f.struct, f.fields, version, flexible)  # type: ignore[arg-type]
    else:
        elem = _primitive_reader(f.base, nullable and not f.is_array, flexible)
    if f.is_array:
        return _array_reader(elem, nullable, flexible, f.name)
    if f.is_struct and nullable and tagged:
        # Kafka's generated code marks a tagged nullable struct with an unsigned varint, 0 for
        # null (e.g. ConsumerGroupMemberMetadataValue.ClassicMemberMetadata); a regular one with
        # a byte, -1 for null
        def tagged_nullable_struct(buf, pos):
            marker, pos = t.read_uvarint(buf, pos)
            if marker == 0:
                return None, pos
            return elem(buf, pos)
        return tagged_nullable_struct
    if f.is_struct and nullable:
        def nullable_struct(buf, pos):
            marker, pos = t.read_int8(buf, pos)
            if marker < 0:
                return None, pos
            return elem(buf, pos)
        return nullable_struct
    return elem


def _array_reader(elem: Reader, nullable: bool, flexible: bool, name: str) -> Reader:
    def read(buf, pos):
        if flexible:
            n, pos = t.read_uvarint(buf, pos)
            n -= 1
        else:
            n, pos = t.read_int32(buf, pos)
        if n < 0:
            if nullable:
                return None, pos
            raise DecodeError(f"null where array {name} is required")
        if n > len(buf) - pos:
            raise DecodeError(f"array {name} claims {n} elements in {len(buf) - pos} bytes")
        if n > MAX_COLLECTION_SIZE:
            raise DecodeError(f"array {name} of {n} elements, more than the {MAX_COLLECTION_SIZE} Kafka reads")
        left = _budget.left
        if left is not None:
            if n > left:
                raise DecodeError(f"array {name} of {n} elements goes over the request's element budget")
            _budget.left = left - n
        items = []
        append = items.append
        for _ in range(n):
            v, pos = elem(buf, pos)
            append(v)
        return items, pos

    return read


def _struct_reader(cls: type[Message], fields: tuple[F, ...], version: int, flexible: bool) -> Reader:
    regular: list[tuple[str, Reader]] = []
    tagged: dict[int, tuple[str, Reader]] = {}
    absent: list[F] = []
    for f in fields:
        if f.tag is not None:
            absent.append(f)
            if flexible and version in f.tagged:
                tagged[f.tag] = (f.name, _field_reader(f, version, flexible, tagged=True))
        elif version in f.versions:
            regular.append((f.name, _field_reader(f, version, flexible)))
        else:
            absent.append(f)
    defaults = [(f.name, *f.plan()) for f in absent]
    return _compile_reader(cls, defaults, regular, tagged, flexible)


def _require_plain_names(cls: type[Message], names: list[str]) -> None:
    """Field names become attribute names in generated source; Kafka's are all identifiers."""
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n) or n.startswith("_")]
    if bad:
        raise ValueError(f"{cls.__name__}: field names that cannot be attributes: {bad}")


def _compile_reader(cls: type[Message], defaults: list[tuple[str, Any, Any]], regular: list[tuple[str, Reader]],
                    tagged: dict[int, tuple[str, Reader]], flexible: bool) -> Reader:
    """The reader of one struct at one version as straight-line code: one attribute store per
    field instead of a loop of setattr calls (a produce request decodes three structs)."""
    _require_plain_names(cls, [n for n, _, _ in defaults] + [n for n, _ in regular])
    ns: dict[str, Any] = {"_new": cls.__new__, "_cls": cls, "_read_tags": _read_tags, "_tagged": tagged}
    lines = ["def read(buf, pos):", "    obj = _new(_cls)"]
    for i, (name, const, factory) in enumerate(defaults):
        if factory is None:
            ns[f"_d{i}"] = const
            lines.append(f"    obj.{name} = _d{i}")
        else:
            ns[f"_df{i}"] = factory
            lines.append(f"    obj.{name} = _df{i}()")
    for i, (name, r) in enumerate(regular):
        ns[f"_r{i}"] = r
        lines.append(f"    obj.{name}, pos = _r{i}(buf, pos)")
    lines.append("    obj.unknown_tags = None")
    if flexible:
        lines.append("    pos = _read_tags(buf, pos, obj, _tagged)")
    lines.append("    return obj, pos")
    exec("\n".join(lines) + "\n", ns)  # noqa: S102 - source built above from validated identifiers only
    return ns["read"]


def _compile_writer(cls: type[Message], regular: list[tuple[str, Writer]], tagged: list[tuple[int, F, Writer]],
                    flexible: bool) -> Writer:
    """The writer's counterpart of _compile_reader; a struct with no tagged fields known at this
    version and none kept from decoding writes its empty tag section as one zero byte."""
    _require_plain_names(cls, [n for n, _ in regular])
    ns: dict[str, Any] = {"_cls": cls, "_write_tags": _write_tags, "_tagged": tagged}
    lines = ["def write(out, obj):", "    if isinstance(obj, dict):", "        obj = _cls(**obj)"]
    for i, (name, w) in enumerate(regular):
        ns[f"_w{i}"] = w
        lines.append(f"    _w{i}(out, obj.{name})")
    if flexible:
        if tagged:
            lines.append("    _write_tags(out, obj, _tagged)")
        else:
            lines += ["    if obj.unknown_tags:", "        _write_tags(out, obj, _tagged)", "    else:",
                      "        out.append(0)"]
    exec("\n".join(lines) + "\n", ns)  # noqa: S102 - source built above from validated identifiers only
    return ns["write"]


def _read_tags(buf, pos: int, obj: Message, tagged: dict[int, tuple[str, Reader]]) -> int:
    count, pos = t.read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise DecodeError(f"{count} tagged fields claimed in {len(buf) - pos} bytes")
    if count > MAX_TAGGED_FIELDS:
        raise DecodeError(f"{count} tagged fields, more than the {MAX_TAGGED_FIELDS} Kafka reads")
    for _ in range(count):
        tag, pos = t.read_uvarint(buf, pos)
        size, pos = t.read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise DecodeError(f"tagged field {tag} runs past the end")
        known = tagged.get(tag)
        if known is not None:
            v, used = known[1](memoryview(buf)[:end], pos)
            if used != end:
                raise DecodeError(f"tagged field {tag} has {end - used} stray bytes")
            setattr(obj, known[0], v)
        else:
            if obj.unknown_tags is None:
                obj.unknown_tags = {}
            obj.unknown_tags[tag] = bytes(buf[pos:end])
        pos = end
    return pos


# ---------------------------------------------------------------------------------- writers


def _write_records(flexible: bool) -> Writer:
    def write(out, v):
        if v is None:
            if flexible:
                out.append(0)
            else:
                out += b"\xff\xff\xff\xff"
            return
        if isinstance(v, _BYTES_LIKE):
            n = len(v)
        else:
            n = v.size
        if flexible:
            t.write_uvarint(out, n + 1)
        else:
            t.write_int32(out, n)
        if isinstance(v, _BYTES_LIKE):
            out += v
        elif n:
            out.regions.append((len(out), v))

    return write


def _primitive_writer(base: str, flexible: bool) -> Writer:
    simple = {
        "int8": t.write_int8, "int16": t.write_int16, "uint16": t.write_uint16,
        "int32": t.write_int32, "int64": t.write_int64, "float64": t.write_float64,
        "bool": t.write_bool, "uuid": t.write_uuid,
    }
    if base in simple:
        return simple[base]
    if base == "string":
        return t.write_compact_string if flexible else t.write_string
    if base == "bytes":
        return t.write_compact_bytes if flexible else t.write_bytes
    if base == "records":
        return _write_records(flexible)
    raise ValueError(f"unknown type {base}")


def _field_writer(f: F, version: int, flexible: bool, *, tagged: bool = False) -> Writer:
    nullable = version in f.nullable
    if f.is_struct:
        elem = _struct_writer(f.struct, f.fields, version, flexible)  # type: ignore[arg-type]
    else:
        elem = _primitive_writer(f.base, flexible)
    if f.is_array:
        def write_array(out, items):
            if items is None:
                if not nullable:
                    raise ValueError(f"{f.name} may not be null in version {version}")
                if flexible:
                    out.append(0)
                else:
                    out += b"\xff\xff\xff\xff"
                return
            if flexible:
                t.write_uvarint(out, len(items) + 1)
            else:
                t.write_int32(out, len(items))
            for item in items:
                elem(out, item)
        return write_array
    if f.is_struct and nullable:
        def write_nullable_struct(out, v):
            if v is None:
                out.append(0 if tagged else 0xFF)  # the markers of _field_reader
            else:
                out.append(1)
                elem(out, v)
        return write_nullable_struct
    if not nullable and f.base in ("string", "bytes"):
        def write_not_null(out, v):
            if v is None:
                raise ValueError(f"{f.name} may not be null in version {version}")
            elem(out, v)
        return write_not_null
    return elem


def _struct_writer(cls: type[Message], fields: tuple[F, ...], version: int, flexible: bool) -> Writer:
    regular: list[tuple[str, Writer]] = []
    tagged: list[tuple[int, F, Writer]] = []
    for f in fields:
        if f.tag is not None:
            if flexible and version in f.tagged:
                tagged.append((f.tag, f, _field_writer(f, version, flexible, tagged=True)))
        elif version in f.versions:
            regular.append((f.name, _field_writer(f, version, flexible)))
    tagged.sort(key=lambda x: x[0])
    return _compile_writer(cls, regular, tagged, flexible)


def _write_tags(out: bytearray, obj: Message, tagged: list[tuple[int, F, Writer]]) -> None:
    items: list[tuple[int, bytes]] = []
    for tag, f, w in tagged:
        v = getattr(obj, f.name)
        if not f.is_default(v):
            b = bytearray()
            w(b, v)
            items.append((tag, bytes(b)))
    unknown = obj.unknown_tags
    if unknown:
        known = {tag for tag, _ in items}
        items.extend((tag, raw) for tag, raw in unknown.items() if tag not in known)
        items.sort()
    t.write_uvarint(out, len(items))
    for tag, raw in items:
        t.write_uvarint(out, tag)
        t.write_uvarint(out, len(raw))
        out += raw


# ---------------------------------------------------------------------------------- entry points


def _compiled(schema: Schema, version: int) -> tuple[Reader, Writer]:
    c = schema._codecs.get(version)
    if c is None:
        if version not in schema.valid:
            raise ValueError(f"{schema.name} has no version {version} (valid {schema.valid})")
        flexible = version in schema.flexible
        c = (
            _struct_reader(schema.cls, schema.fields, version, flexible),
            _struct_writer(schema.cls, schema.fields, version, flexible),
        )
        schema._codecs[version] = c
    return c


def decode(schema: Schema[M], version: int, buf: Any, pos: int = 0, *, exact: bool = True) -> M:
    """Decode one message at `pos`. With `exact`, trailing bytes are an error."""
    reader = _compiled(schema, version)[0]
    obj: M
    obj, end = reader(buf, pos)
    if exact and end != len(buf):
        raise DecodeError(f"{schema.name} v{version}: {len(buf) - end} unexpected trailing bytes")
    return obj


def decode_from(schema: Schema[M], version: int, buf: Any, pos: int = 0, *,
                max_elements: int | None = None) -> tuple[M, int]:
    """Decode one message at `pos` and return it with the position after it. With
    `max_elements`, a message whose arrays hold more elements in all raises DecodeError as soon
    as the budget is spent (what decoding, and handling, a request may cost is bounded)."""
    if max_elements is None:
        return _compiled(schema, version)[0](buf, pos)
    _budget.left = max_elements
    try:
        return _compiled(schema, version)[0](buf, pos)
    finally:
        _budget.left = None


def encode(schema: Schema[M], version: int, obj: M, out: Output | None = None) -> Output:
    """Encode `obj` at `version`, appending to `out` (a new Output if none)."""
    if out is None:
        out = Output()
    _compiled(schema, version)[1](out, obj)
    return out
