"""An API's error response in its own shape, built from the request (Kafka: each request class's
`getErrorResponse`, e.g. ProduceRequest.getErrorResponse setting the error on every partition).

Theory of operation: Kafka writes one `getErrorResponse` per request class; the schemas here are
data, so one walk builds them all. A response struct mirrors the request struct it answers: a
response array of structs is filled from the request array whose elements share its key fields
(the topic `name`/`topic`, `topic_id`, the partition `partition_index`/`index`/`partition`,
`group_id`, the coordinator `key`, `transactional_id`), or from a request array of plain values
(`partition_indexes`, `coordinator_keys`, DescribeGroups' `groups`) that fill the element's first
field of their type. Key fields are copied; everything else keeps its schema default, offsets and
node ids -1 (Kafka's INVALID_OFFSET and "no node").

Where the error goes: on the deepest entries the request names (each partition, or each topic of
a Metadata or CreateTopics, each group of a DescribeGroups, each key of a FindCoordinator v4+);
at the top only when there are none, or when the error is one about the whole request (a
coordinator's, a fetch session's, an authorization of the cluster, a group or a transactional id:
Kafka's FetchRequest.getErrorResponse puts those on the top and on every partition).

`select(path)` limits the error to the entries a fault matches (a topic, a partition): `prune`
takes those out of a request so the rest is handled normally, and `merge` puts the error entries
into the real response, replacing an entry with the same keys or adding it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.schema import F, Message

# a request field name -> the key it is, shared by request and response
_KEYS = {"name": "topic", "topic": "topic", "topic_id": "topic_id", "partition_index": "partition",
         "index": "partition", "partition": "partition", "group_id": "group", "key": "key",
         "transactional_id": "transactional_id"}
# errors about the whole request: on the top (and every entry), as Kafka answers them
REQUEST_LEVEL = frozenset({
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.INVALID_REQUEST,
})
# request arrays of plain values that name entries: the key each value is
_VALUE_ARRAYS = {"partition_indexes": "partition", "partitions": "partition", "groups": "group",
                 "groups_names": "group", "coordinator_keys": "key", "transactional_ids": "transactional_id",
                 "topic_names": "topic"}
_INVALID = ("offset", "high_watermark", "timestamp", "node_id")  # -1 in an error entry (int fields)
_INTS = ("int8", "int16", "int32", "int64")

KeyValue = str | int | uuid.UUID | None  # a topic, a partition, a group id...
Path = tuple[tuple[str, KeyValue], ...]  # (key, value) pairs from the top to an entry
Select = Callable[[Path], bool]  # whether a fault's filter picks an entry
_ZERO_UUID = uuid.UUID(int=0)


def _fields(msg: Message | type[Message], version: int) -> list[F]:
    return [f for f in msg._fields if version in f.versions]


def _is_error(f: F) -> bool:
    return f.base == "int16" and (f.name == "error_code" or f.name.endswith("_error_code"))


def _key_of(f: F) -> str | None:
    return _KEYS.get(f.name) if not f.is_array else None


def _source(rf: F, req_fields: list[F]) -> F | None:
    """The request array the response array `rf` answers (see the module docstring)."""
    assert rf.struct is not None
    wanted = {k for f in rf.fields if (k := _key_of(f)) is not None}
    best: F | None = None
    best_n = 0
    for f in req_fields:
        if not f.is_array:
            continue
        if f.is_struct:
            n = len(wanted & {k for g in f.fields if (k := _key_of(g)) is not None})
            if n > best_n:
                best, best_n = f, n
        elif best is None and _value_key(f) is not None and _first_of(rf, f.base) is not None:
            best = f
    return best


def _first_of(rf: F, base: str) -> F | None:
    """The response element's field a plain request value fills: its first key field of that type."""
    for g in rf.fields:
        if g.base == base and not g.is_array:
            return g if _key_of(g) is not None else None
    return None


def _value_key(f: F) -> str | None:
    """The key the values of a request array of plain values are (None: not such an array)."""
    if f.is_struct:
        return None
    k = _VALUE_ARRAYS.get(f.name)
    if k is None or (k == "partition") != (f.base == "int32"):
        return None
    return k


def entries(request: Message, version: int, resolve: Callable[[uuid.UUID], str | None]) -> list[Path]:
    """The keys of every deepest entry a request names (what a topic/partition filter looks at)."""
    out: list[Path] = []
    _walk(request, version, (), resolve, out)
    return out


def _own_keys(msg: Message, version: int, path: Path, resolve: Callable[[uuid.UUID], str | None]) -> Path:
    for f in _fields(msg, version):
        k = _key_of(f)
        if k is None:
            continue
        v = getattr(msg, f.name)
        if k == "topic_id":
            if v is None or v == _ZERO_UUID:
                continue
            k, v = "topic", resolve(v)
        elif k == "topic" and not v:
            continue
        path += ((k, v),)
    return path


def _walk(msg: Message, version: int, path: Path, resolve: Callable[[uuid.UUID], str | None],
          out: list[Path]) -> None:
    path = _own_keys(msg, version, path, resolve)
    before = len(out)
    for f in _fields(msg, version):
        if not f.is_array or f.name.startswith("forgotten"):  # Fetch's forgotten topics are not asked for
            continue
        items = getattr(msg, f.name) or []
        if f.is_struct:
            if any(_key_of(g) is not None for g in f.fields):
                for item in items:
                    _walk(item, version, path, resolve, out)
        elif (k := _value_key(f)) is not None:
            out.extend(path + ((k, v),) for v in items)
    if len(out) == before and path:  # nothing named below (none, or an empty list): the entry itself
        out.append(path)


def error_response(response_cls: type[Message], request: Message, version: int, code: int,
                   resolve: Callable[[uuid.UUID], str | None], select: Select | None = None) -> Message:
    """The response of `request` with `code` (see the module docstring)."""
    everywhere = code in REQUEST_LEVEL
    resp, leaves = _mirror(response_cls, request, version, code, (), resolve, select, everywhere)
    top = [f for f in _fields(resp, version) if _is_error(f)]
    if top and (everywhere or not leaves):
        for f in top:
            setattr(resp, f.name, code)
    return resp


def _mirror(cls: type[Message], req: Message | None, version: int, code: int, path: Path,
            resolve: Callable[[uuid.UUID], str | None], select: Select | None, everywhere: bool,
            ) -> tuple[Message, int]:
    """(the response struct, how many error entries it holds)."""
    resp = cls()
    fields = _fields(cls, version)
    req_fields = _fields(req, version) if req is not None else []
    if req is not None:
        path = _own_keys(req, version, path, resolve)
        by_key = {k: f for f in req_fields if (k := _key_of(f)) is not None}
        for f in fields:
            k = _key_of(f)
            src = by_key.get(k) if k is not None else None
            if src is not None and src.base == f.base:
                setattr(resp, f.name, getattr(req, src.name))
    leaves = 0
    mirrored = False
    for f in fields:
        if not (f.is_array and f.is_struct) or req is None:
            continue
        src = _source(f, req_fields)
        if src is None:
            continue
        mirrored = True
        assert f.struct is not None
        out = []
        for item in getattr(req, src.name) or []:
            if src.is_struct:
                child, n = _mirror(f.struct, item, version, code, path, resolve, select, everywhere)
            else:
                key_field = _first_of(f, src.base)
                assert key_field is not None
                child_path = path + ((_KEYS[key_field.name], item),)
                if select is not None and not select(child_path):
                    continue
                child = f.struct()
                setattr(child, key_field.name, item)
                n = _leaf(child, version, code)
            if n:
                out.append(child)
                leaves += n
        setattr(resp, f.name, out)
    if not mirrored and req is not None:
        if select is None or select(path):
            return resp, _leaf(resp, version, code)
        return resp, 0
    if everywhere and leaves:
        for f in fields:
            if _is_error(f):
                setattr(resp, f.name, code)
    return resp, leaves


def _leaf(entry: Message, version: int, code: int) -> int:
    """Put the error on an entry (and the invalid values on its offsets); 1 if it has an error field."""
    has = 0
    for f in _fields(entry, version):
        if _is_error(f):
            setattr(entry, f.name, code)
            has = 1
        elif f.base in _INTS and not f.is_array and _key_of(f) is None and any(w in f.name for w in _INVALID) \
                and getattr(entry, f.name) == 0:
            setattr(entry, f.name, -1)
    return has


# -- a request split, a response merged ----------------------------------------------------------------
def prune(request: Message, version: int, resolve: Callable[[uuid.UUID], str | None], select: Select) -> bool:
    """Take the entries `select` picks out of `request` (in place; a parent left with no entries
    goes too); whether anything is left to handle."""
    return _prune(request, version, (), resolve, select)


def _prune(msg: Message, version: int, path: Path, resolve: Callable[[uuid.UUID], str | None],
           select: Select) -> bool:
    path = _own_keys(msg, version, path, resolve)
    had_children = False
    kept_any = False
    for f in _fields(msg, version):
        if not f.is_array or f.name.startswith("forgotten"):
            continue
        items = getattr(msg, f.name)
        if not items:
            continue
        if f.is_struct and any(_key_of(g) is not None for g in f.fields):
            had_children = True
            kept = [item for item in items if _prune(item, version, path, resolve, select)]
        elif (k := _value_key(f)) is not None:
            had_children = True
            kept = [v for v in items if not select(path + ((k, v),))]
        else:
            continue
        setattr(msg, f.name, kept)
        kept_any = kept_any or bool(kept)
    if had_children:
        return kept_any
    return not select(path)


def copy_message(msg: Message) -> Message:
    """A copy deep enough to prune: structs and lists are new, values are shared."""
    out = type(msg)()
    for f in msg._fields:
        v = getattr(msg, f.name)
        if isinstance(v, list):
            v = [copy_message(x) if isinstance(x, Message) else x for x in v]
        elif isinstance(v, Message):
            v = copy_message(v)
        setattr(out, f.name, v)
    return out


def merge(real: Message, errors: Message, version: int) -> None:
    """Put the error entries of `errors` into `real` (same API and version): an entry with the same
    keys is replaced, a new one added; a top-level error is copied."""
    for f in _fields(real, version):
        if _is_error(f) and getattr(errors, f.name):
            setattr(real, f.name, getattr(errors, f.name))
        if not (f.is_array and f.is_struct):
            continue
        new = getattr(errors, f.name) or []
        if not new:
            continue
        have = getattr(real, f.name)
        if have is None:
            have = []
            setattr(real, f.name, have)
        for item in new:
            k = _keys(item, version)
            at = next((i for i, x in enumerate(have) if _same(k, _keys(x, version))), None) if k else None
            if at is None:
                have.append(item)
            elif any(g.is_array and g.is_struct and getattr(item, g.name) for g in _fields(item, version)):
                merge(have[at], item, version)
            else:
                have[at] = item


def _keys(entry: Message, version: int) -> dict[str, object]:
    """The keys an entry states (a Metadata request names a topic by name or by id, not both)."""
    out: dict[str, object] = {}
    for f in _fields(entry, version):
        if _key_of(f) is not None:
            v = getattr(entry, f.name)
            if v is not None and v != "" and v != _ZERO_UUID:
                out[f.name] = v
    return out


def _same(wanted: dict[str, object], have: dict[str, object]) -> bool:
    return all(have.get(k) == v for k, v in wanted.items())


def iter_codes(msg: Message, version: int) -> Iterator[int]:
    """Every error code in a response (tests)."""
    for f in _fields(msg, version):
        v = getattr(msg, f.name)
        if _is_error(f):
            yield v
        elif f.is_array and f.is_struct:
            for x in v or []:
                yield from iter_codes(x, version)
        elif f.is_struct and isinstance(v, Message):
            yield from iter_codes(v, version)
