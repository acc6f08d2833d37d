"""Message schemas as data.

Theory of operation: every API is an `Api` holding two `Schema`s (request, response). A schema is
a tree of `F` (field) objects, each knowing the versions it exists in, the versions it may be
null in, and, for tagged fields (KIP-482), its tag. This mirrors the grammar of Kafka's message
JSON (clients/src/main/resources/common/message/README.md) in a compact form of our own; the
data in protocol/apis/ is generated from Kafka's files by tools/gen_schemas.py.

Messages do not know their version. A schema builds one plain class per struct (with __slots__),
and minibroker_protocol.codec compiles, per (schema, version), a reader and a writer for it. Code that builds
a response writes `produce.RESPONSE(...)`, and nested structs are reached by their Kafka name:
`produce.RESPONSE.PartitionProduceResponse(index=0)`. The message class is also the module's
attribute by its Kafka name (`produce.ProduceResponse`), and each struct class an attribute of it
(`produce.ProduceResponse.PartitionProduceResponse`), which is how code annotates them.

Types: the classes are made at run time, so a type checker reads them from the stub generated
beside each schema module (`protocol/apis/produce.pyi`, by `tools/gen_schemas.py --stubs`): one
class per message with its fields typed and a keyword `__init__`, and the struct classes nested in
it. tests/protocol/test_stubs.py regenerates the stubs and compares, so they cannot drift. Code
that is generic over schemas (the codec, traces, the console) reads fields with `getattr`.
"""

from __future__ import annotations

import builtins
import keyword
import operator
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar

ZERO_UUID = uuid.UUID(int=0)
_IMMUTABLE = (int, float, str, bytes, bool, type(None), uuid.UUID)
_MISSING = object()
_BUILD_LOCK = threading.Lock()


class RecordsRegion(Protocol):
    """Record data still in a file (minibroker_storage.file_region.FileRegion): the writer leaves a hole of
    `size` bytes that the connection fills with sendfile (Kafka: FileRecords)."""

    @property
    def fd(self) -> int: ...  # the open file sendfile reads from

    @property
    def position(self) -> int: ...  # where the region starts in it

    @property
    def size(self) -> int: ...

    def __len__(self) -> int: ...

    def read_all(self) -> bytes: ...


# A `records` field: in a request the frame's bytes (Kafka: MemoryRecords); in a response bytes or
# a file region (Kafka: BaseRecords, which FileRecords implements).
MemoryRecords: TypeAlias = bytes | bytearray | memoryview
BaseRecords: TypeAlias = MemoryRecords | RecordsRegion

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "int64", "float64", "string", "bytes", "records", "uuid"}
)


class Versions:
    """A version range as Kafka writes it: "3+", "0-7", "5" or "none"."""

    __slots__ = ("lo", "hi")

    def __init__(self, spec: str):
        if spec == "none" or spec == "":
            self.lo, self.hi = 0, -1
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), 1 << 15
        elif "-" in spec:
            lo, hi = spec.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.lo, self.hi + 1))

    def __repr__(self) -> str:
        if self.hi < self.lo:
            return "none"
        if self.hi == 1 << 15:
            return f"{self.lo}+"
        return f"{self.lo}-{self.hi}" if self.lo != self.hi else str(self.lo)


NO_VERSIONS = Versions("none")


class F:
    """One field of a message or struct."""

    __slots__ = (
        "name", "type", "versions", "nullable", "tag", "tagged", "ignorable", "flexible",
        "fields", "is_array", "base", "struct", "_default", "_plan", "_flat",
    )

    def __init__(
        self,
        name: str,
        type: str,
        versions: str,
        *,
        nullable: str = "none",
        tag: int | None = None,
        tagged: str = "none",
        default: Any = ...,
        ignorable: bool = False,
        flexible: str | None = None,
        fields: Iterable[F] | None = None,
    ):
        self.name = name
        self.type = type
        self.versions = Versions(versions)
        self.nullable = Versions(nullable)
        self.tag = tag
        self.tagged = Versions(tagged)
        self.ignorable = ignorable
        self.flexible = Versions(flexible) if flexible is not None else None
        self.is_array = type.startswith("[]")
        self.base = type[2:] if self.is_array else type
        self.fields: tuple[F, ...] = tuple(fields or ())
        self.struct: builtins.type | None = None  # set by Schema for struct-typed fields
        self._default = default
        self._plan: tuple[Any, Any] | None = None
        # for a struct whose fields all default to shared constants: (getter of those fields,
        # their defaults), else False; None until first asked (is_default)
        self._flat: tuple[Callable[[object], object], object] | Literal[False] | None = None

    @property
    def is_struct(self) -> bool:
        return self.base not in PRIMITIVES

    def default(self) -> Any:
        """A fresh default value (arrays get a new list each time)."""
        d = self._default
        if d is not ...:
            return d
        if self.is_array:
            return []
        b = self.base
        if b in ("int8", "int16", "uint16", "int32", "int64"):
            return 0
        if b == "bool":
            return False
        if b == "float64":
            return 0.0
        if b == "string":
            return ""
        if b in ("bytes", "records"):
            return b""
        if b == "uuid":
            return ZERO_UUID
        assert self.struct is not None
        return self.struct()

    def plan(self) -> tuple[Any, Any]:
        """(constant, None) when the default is immutable and can be shared, else (None, factory):
        building a message then costs no call per defaulted field (the produce path builds one
        response struct per partition)."""
        p = self._plan
        if p is None:
            d = self.default()
            if isinstance(d, _IMMUTABLE):
                p = (d, None)
            elif self._default is ... and self.is_array:
                p = (None, list)
            elif self._default is ... and self.struct is not None:
                p = (None, self.struct)
            else:
                p = (None, self.default)
            self._plan = p
        return p

    def is_default(self, value: Any) -> bool:
        # From the plan, so that a tagged field left at its default (skipped on the wire) is
        # recognised without building a default value per encode.
        const, factory = self.plan()
        if factory is None:
            return value == const
        if factory is list:
            return value == []
        if factory is self.struct and self.struct is not None and issubclass(self.struct, Message):
            flat = self._flat
            if flat is None:
                flat = self._flat = _flat_defaults(self.struct._fields)
            if flat:
                # one attrgetter and a tuple compare instead of a call per field: a Fetch
                # response's partition has three such tagged structs, left at their defaults (issue 33)
                getter, consts = flat
                return value is not None and getter(value) == consts
            return value is not None and all(f.is_default(getattr(value, f.name)) for f in self.struct._fields)
        d = self.default()
        if isinstance(d, Message):
            return value is not None and all(f.is_default(getattr(value, f.name)) for f in d._fields)
        return value == d


def _flat_defaults(fields: tuple[F, ...]) -> tuple[Callable[[object], object], object] | Literal[False]:
    """(getter, defaults) when every field's default is a shared constant (F.is_default)."""
    plans = [f.plan() for f in fields]
    if not fields or any(factory is not None for _, factory in plans):
        return False
    consts = tuple(const for const, _ in plans)
    return operator.attrgetter(*(f.name for f in fields)), consts if len(consts) > 1 else consts[0]


class Message:
    """Base of the generated struct classes: keyword construction, defaults, equality, repr."""

    __slots__ = ("unknown_tags",)
    _fields: tuple[F, ...] = ()
    _names: tuple[str, ...] = ()
    unknown_tags: dict[int, bytes] | None  # tagged fields this version does not know, kept as read

    def __init__(self, **kwargs: Any):
        # first construction of a class: compile its keyword __init__, then use it from now on
        cls = type(self)
        _compile_init(cls)
        cls.__init__(self, **kwargs)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._names)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A plain-data view (for traces and tests)."""

        def conv(v: Any) -> Any:
            if isinstance(v, Message):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v

        return {n: conv(getattr(self, n)) for n in self._names}


def _compile_init(cls: type[Message]) -> None:
    """Give `cls` an `__init__` with one keyword parameter per field, as dataclasses do: a response
    struct is built per partition on the produce path, where the generic keyword loop cost more
    than the append. Compiled on first use, so importing the schemas stays cheap."""
    names = [f.name for f in cls._fields]
    bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n) or n.startswith("_")]
    if bad:
        raise ValueError(f"{cls.__name__}: field names that cannot be parameters: {bad}")
    ns: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for i, f in enumerate(cls._fields):
        const, factory = f.plan()
        if factory is None:
            ns[f"_c{i}"] = const
            params.append(f"{f.name}=_c{i}")
            body.append(f"    self.{f.name} = {f.name}")
        else:
            ns[f"_f{i}"] = factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    self.{f.name} = _f{i}() if {f.name} is _MISSING else {f.name}")
    star = "*, " if params else ""
    src = f"def __init__(self, {star}{', '.join(params)}):\n" + "\n".join(body) + "\n    self.unknown_tags = None\n"
    exec(src, ns)  # noqa: S102 - source built above from validated identifiers only
    ns["__init__"].__qualname__ = f"{cls.__name__}.__init__"
    cls.__init__ = ns["__init__"]  # type: ignore[method-assign]


def _make_class(name: str, fields: tuple[F, ...]) -> type[Message]:
    names = tuple(f.name for f in fields)
    return type(name, (Message,), {"__slots__": names, "_fields": fields, "_names": names})


M = TypeVar("M", bound="Message")  # a message class, in the codec's signatures
# covariant: a Schema[ShareSnapshotKey] is a Schema[ShareSnapshotKey | ShareUpdateKey], for code
# that picks one of two schemas and decodes with it
M_co = TypeVar("M_co", bound="Message", covariant=True)


class Schema(Generic[M_co]):
    """A message (a request, a response, or a coordinator record) and all its versions.

    Its classes (one per struct) are made when first used (`cls`, `classes`, a struct's name as an
    attribute, a call, the codec): a broker imports every API's schema at start and uses a few of
    them before its first answer, and making the classes of all of them cost about 5 ms of the
    start (issue 22). Its type parameter is its message class, known to the type checker from the
    stubs (a bare `Schema` is any schema: the codec decodes a `Schema[M]` to an `M`)."""

    def __init__(self, name: str, valid: str, *, flexible: str = "none", fields: Iterable[F] = ()):
        self.name = name
        self.valid = Versions(valid)
        self.flexible = Versions(flexible)
        self.fields = tuple(fields)
        self._cls: type[Message] | None = None
        self._classes: dict[str, type[Message]] = {}
        self._codecs: dict[int, Any] = {}  # version -> (reader, writer), filled by minibroker_protocol.codec

    @property
    def cls(self) -> type[M_co]:
        cls = self._cls
        # the class is made at run time; the stub says which it is
        return cls if cls is not None else self._build_classes()  # type: ignore[return-value]

    @property
    def classes(self) -> dict[str, type[Message]]:
        if self._cls is None:
            self._build_classes()
        return self._classes

    def _build_classes(self) -> type[Message]:
        # under a lock: a test's client thread and the broker's loop may reach one schema first
        # at the same moment, and two sets of classes would make equal messages unequal
        with _BUILD_LOCK:
            if self._cls is None:
                classes: dict[str, type[Message]] = {}
                cls = self._build(self.name, self.fields, classes)
                for name, struct in classes.items():
                    if struct is not cls:  # produce.ProduceResponse.PartitionProduceResponse, as typed
                        setattr(cls, name, struct)
                self._classes = classes
                self._cls = cls
            return self._cls

    def _build(self, name: str, fields: tuple[F, ...], classes: dict[str, type[Message]]) -> type[Message]:
        # Recurse even when the struct's class exists: a struct named twice in one message
        # (AddPartitionsToTxnTopicResult) has a second copy of its fields, whose nested
        # struct fields need their classes linked too.
        for f in fields:
            if f.is_struct:
                f.struct = self._build(f.base, f.fields, classes)
        cls = classes.get(name)
        if cls is None:
            cls = classes[name] = _make_class(name, fields)
        return cls

    def __call__(self, **kwargs: Any) -> M_co:
        return self.cls(**kwargs)

    if not TYPE_CHECKING:
        # Hidden from type checkers: a schema's struct names are typed by its module's stub, and a
        # name it does not declare must be an error there, not a `type[Message]`.
        def __getattr__(self, name: str) -> type[Message]:
            if name.startswith("_"):  # not a struct name (and not one of ours before __init__ set it)
                raise AttributeError(name)
            try:
                return self.classes[name]
            except KeyError:
                raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"Schema({self.name} v{self.valid}, flexible {self.flexible})"


def message_classes(*schemas: Schema) -> Callable[[str], type[Message]]:
    """A module `__getattr__` (PEP 562) naming each schema's message class by its Kafka name
    (`produce.ProduceRequest` is `produce.REQUEST.cls`), made on first use like the schema's."""
    by_name = {s.name: s for s in schemas}

    def __getattr__(name: str) -> type[Message]:
        schema = by_name.get(name)
        if schema is None:
            raise AttributeError(name)
        return schema.cls

    return __getattr__


class Api:
    """An API key with its request and response schemas."""

    def __init__(self, key: int, name: str, request: Schema, response: Schema):
        self.key = key
        self.name = name
        self.request = request
        self.response = response

    @property
    def versions(self) -> Versions:
        return self.request.valid

    def is_flexible(self, version: int) -> bool:
        return version in self.request.flexible

    def __repr__(self) -> str:
        return f"Api({self.key}, {self.name}, v{self.versions})"
