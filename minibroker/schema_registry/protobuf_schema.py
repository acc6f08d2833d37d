"""Protobuf schemas: .proto text compiled by protoc itself (grpcio-tools ships it as a Python
extension), or a base64 FileDescriptorProto (what confluent-kafka's ProtobufSerializer registers)
read by the `protobuf` package; compatibility by the rules of Confluent's protobuf
SchemaDiff.

Theory of operation. Either form becomes a FileDescriptorProto, the one model the checks read:
protoc resolves every type name to its full name (".pkg.Msg"), so two schemas compare by name
and field number. References are imports: each referenced schema is handed to protoc under its
reference name (text as a file, a base64 descriptor in a --descriptor_set_in set), and protoc's
bundled google/protobuf/*.proto serve the well-known types. `format=serialized` answers the
base64 FileDescriptorProto, which is what confluent-kafka's deserializers ask for.

Compatibility (Confluent's Difference types; the incompatible ones are reported): a message
removed (MESSAGE_REMOVED), the package changed (PACKAGE_CHANGED), a field's kind (scalar,
message, enum: FIELD_KIND_CHANGED), its scalar type outside its wire-compatible group
(FIELD_SCALAR_KIND_CHANGED: int32/uint32/int64/uint64/bool, sint32/sint64, fixed32/sfixed32,
fixed64/sfixed64, string/bytes), its message or enum type (FIELD_NAMED_TYPE_CHANGED), a
required field added or removed, a field removed from a oneof (ONEOF_FIELD_REMOVED), several
fields moved into one new oneof (MULTIPLE_FIELDS_MOVED_TO_ONEOF). Adding or removing optional
fields, messages, enums and enum values is compatible, as in Confluent.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import google.type
import grpc_tools
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError
from grpc_tools import _protoc_compiler

from minibroker.schema_registry import errors
from minibroker.schema_registry.schemas import PROTOBUF, Incompatibility, ParsedSchema, ResolvedReference

FDP = descriptor_pb2.FileDescriptorProto
FD = descriptor_pb2.FieldDescriptorProto
WELL_KNOWN = str(Path(grpc_tools.__file__).with_name("_proto"))  # google/protobuf/*.proto
# google/type/*.proto and the other common Google types (googleapis-common-protos ships the .proto
# files beside its modules; Confluent's registry bundles the same ones)
COMMON = str(Path(next(iter(google.type.__path__))).parent.parent)  # google.type is a namespace package
MAIN = "schema.proto"
_GROUPS = [{FD.TYPE_INT32, FD.TYPE_UINT32, FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_BOOL},
           {FD.TYPE_SINT32, FD.TYPE_SINT64}, {FD.TYPE_FIXED32, FD.TYPE_SFIXED32},
           {FD.TYPE_FIXED64, FD.TYPE_SFIXED64}, {FD.TYPE_STRING, FD.TYPE_BYTES}]


def _decode_descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto a base64 schema holds, or None if `text` is not one."""
    stripped = text.strip()
    if not stripped or any(c.isspace() for c in stripped) or "{" in stripped or ";" in stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
        fdp = FDP.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fdp if fdp.message_type or fdp.enum_type or fdp.package or fdp.syntax else None


def _compile(text: str, references: Sequence[ResolvedReference]) -> descriptor_pb2.FileDescriptorProto:
    """protoc over the schema and its references in a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="minibroker-proto-") as tmp:
        root = Path(tmp)
        deps = descriptor_pb2.FileDescriptorSet()
        for ref in references:
            fdp = _decode_descriptor(ref.schema)
            if fdp is not None:
                fdp.name = ref.name
                deps.file.append(fdp)
            else:
                (root / ref.name).parent.mkdir(parents=True, exist_ok=True)
                (root / ref.name).write_text(ref.schema)
        (root / MAIN).write_text(text)
        out = root / "out.pb"
        args = [b"protoc", f"-I{root}".encode(), f"-I{WELL_KNOWN}".encode(), f"-I{COMMON}".encode(),
                f"--descriptor_set_out={out}".encode()]
        if deps.file:
            (root / "deps.pb").write_bytes(deps.SerializeToString())
            args.append(f"--descriptor_set_in={root / 'deps.pb'}".encode())
        args.append(MAIN.encode())
        reason = _first_error(root, text) if _run_protoc(args) != 0 or not out.exists() else None
        if reason is not None:
            raise errors.invalid_schema(f"Invalid schema {text[:200]} with refs {[r.name for r in references]} of "
                                        f"type PROTOBUF, details: {reason}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
        return files[-1]


_PROTOC = threading.Lock()  # schemas are parsed on worker threads; fd 2 is the process's, one protoc at a time


def _run_protoc(args: list[bytes]) -> int:
    # protoc reports errors on fd 2; they are read back through get_protos below instead
    with _PROTOC:
        return _run_protoc_quietly(args)


def _run_protoc_quietly(args: list[bytes]) -> int:
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            return int(_protoc_compiler.run_main(args))
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _first_error(root: Path, text: str) -> str:
    try:
        _protoc_compiler.get_protos(MAIN.encode(), [str(root).encode(), WELL_KNOWN.encode(), COMMON.encode()])
    except _protoc_compiler.ProtocErrors as e:
        return "; ".join(f"{err.line}:{err.column}: {err.message.decode(errors='replace')}" for err in e.errors())
    except Exception as e:  # noqa: BLE001 - protoc's Python binding raises its own types
        return str(e)
    return "protoc could not compile the schema"


@dataclass(frozen=True)
class _Message:
    fields: dict[int, descriptor_pb2.FieldDescriptorProto]
    oneofs: list[str]


def _messages(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, _Message]:
    out: dict[str, _Message] = {}

    def walk(prefix: str, msgs: Sequence[descriptor_pb2.DescriptorProto]) -> None:
        for m in msgs:
            name = f"{prefix}.{m.name}"
            out[name] = _Message({f.number: f for f in m.field}, [o.name for o in m.oneof_decl])
            walk(name, m.nested_type)

    walk(f".{fdp.package}" if fdp.package else "", fdp.message_type)
    return out


def _kind(f: descriptor_pb2.FieldDescriptorProto) -> str:
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return "MESSAGE"
    return "ENUM" if f.type == FD.TYPE_ENUM else "SCALAR"


def _in_oneof(f: descriptor_pb2.FieldDescriptorProto) -> bool:
    return f.HasField("oneof_index") and not f.proto3_optional


class ProtobufSchema:
    schema_type = PROTOBUF

    def __init__(self, text: str, descriptor: descriptor_pb2.FileDescriptorProto) -> None:
        self.text = text
        self.descriptor = descriptor

    @classmethod
    def parse(cls, text: str, references: Sequence[ResolvedReference] = ()) -> ProtobufSchema:
        fdp = _decode_descriptor(text)
        if fdp is not None:
            return cls(text.strip(), fdp)
        return cls(text, _compile(text, references))

    def canonical(self) -> str:
        return self.text

    def normalized(self) -> str:
        # the descriptor without the file's name: the same definitions in another layout compare equal
        fdp = FDP()
        fdp.CopyFrom(self.descriptor)
        fdp.ClearField("name")
        fdp.ClearField("source_code_info")
        return base64.b64encode(fdp.SerializeToString(deterministic=True)).decode("ascii")

    def serialized(self) -> str:
        """The base64 FileDescriptorProto (Confluent's `format=serialized`)."""
        return base64.b64encode(self.descriptor.SerializeToString(deterministic=True)).decode("ascii")

    def incompatibilities(self, writer: ParsedSchema, *, reader_is_new: bool) -> list[Incompatibility]:
        if not isinstance(writer, ProtobufSchema):
            return [Incompatibility("TYPE_MISMATCH", f"Incompatible because of different schema type: "
                                                     f"{writer.schema_type} and {PROTOBUF}")]
        # Confluent checks a protobuf reader as the update of its writer (FORWARD swaps the two), so
        # removing a message breaks BACKWARD but not FORWARD
        return _diff(writer.descriptor, self.descriptor)


def _diff(old: descriptor_pb2.FileDescriptorProto, new: descriptor_pb2.FileDescriptorProto) -> list[Incompatibility]:
    """Confluent's protobuf differences from `old` (the writer) to `new` (the reader) that break compatibility."""
    found: list[Incompatibility] = []
    if old.package != new.package:
        found.append(Incompatibility("PACKAGE_CHANGED", "The package at '#/' in the new schema does not match the "
                                                        "package in the old schema"))
    old_msgs, new_msgs = _messages(old), _messages(new)
    for name, om in old_msgs.items():
        path = "#/" + name[len(old.package) + 2:] if old.package else "#/" + name[1:]
        nm = new_msgs.get(name)
        if nm is None:
            found.append(Incompatibility("MESSAGE_REMOVED", f"The message at '{path}' in the old schema is missing in "
                                                            "the new schema"))
            continue
        moved: dict[int, list[int]] = {}
        for number, of in om.fields.items():
            where = f"{path}/{number}"
            nf = nm.fields.get(number)
            if nf is None:
                if of.label == FD.LABEL_REQUIRED:
                    found.append(Incompatibility("REQUIRED_FIELD_REMOVED", f"The required field at '{where}' in the "
                                                                           "old schema is missing in the new schema"))
                elif _in_oneof(of):
                    found.append(Incompatibility("ONEOF_FIELD_REMOVED", f"The field at '{where}' in a oneof of the old "
                                                                        "schema is missing in the new schema"))
                continue
            if _kind(of) != _kind(nf):
                found.append(Incompatibility("FIELD_KIND_CHANGED", f"The kind of the field at '{where}' changed from "
                                                                   f"{_kind(of)} to {_kind(nf)}"))
            elif _kind(of) == "SCALAR" and of.type != nf.type and not any(
                    of.type in g and nf.type in g for g in _GROUPS):
                found.append(Incompatibility("FIELD_SCALAR_KIND_CHANGED", f"The kind of a SCALAR field at '{where}' in "
                                                                          "the new schema does not match its kind in "
                                                                          "the old schema"))
            elif _kind(of) != "SCALAR" and of.type_name != nf.type_name:
                found.append(Incompatibility("FIELD_NAMED_TYPE_CHANGED", f"The type of a MESSAGE or ENUM field at "
                                                                         f"'{where}' changed from {of.type_name} to "
                                                                         f"{nf.type_name}"))
            if not _in_oneof(of) and _in_oneof(nf):
                moved.setdefault(nf.oneof_index, []).append(number)
        for number, nf in nm.fields.items():
            if number not in om.fields and nf.label == FD.LABEL_REQUIRED:
                found.append(Incompatibility("REQUIRED_FIELD_ADDED", f"The required field at '{path}/{number}' in the "
                                                                     "new schema is missing in the old schema"))
        for index, numbers in moved.items():
            if len(numbers) > 1:
                found.append(Incompatibility("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"Fields {numbers} of '{path}' moved "
                                                                               f"into oneof {nm.oneofs[index]}"))
    return found
