"""Hypothesis strategies drawn from the schema tree: a random message of any schema at any version
(tagged fields, unknown tags and nulls included). Used by test_codec_schemas.py and the fuzzers."""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from minibroker_protocol.schema import F, Message

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def primitive_strategy(base: str, nullable: bool) -> st.SearchStrategy:
    if base in _INT_RANGES:
        lo, hi = _INT_RANGES[base]
        s = st.integers(lo, hi)
    elif base == "bool":
        s = st.booleans()
    elif base == "float64":
        s = st.floats(allow_nan=False)
    elif base == "uuid":
        s = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    elif base == "string":
        s = st.text(max_size=12)
    elif base == "bytes":
        s = st.binary(max_size=24)
    elif base == "records":
        s = st.binary(max_size=64)
    else:
        raise AssertionError(base)
    return st.none() | s if nullable else s


def present(f: F, version: int, flexible: bool) -> bool:
    if f.tag is not None:
        return flexible and version in f.tagged
    return version in f.versions


def message_strategy(cls: type[Message], fields: tuple[F, ...], version: int, flexible: bool) -> st.SearchStrategy:
    draws = {f.name: field_strategy(f, version, flexible) for f in fields if present(f, version, flexible)}
    known_tags = {f.tag for f in fields if f.tag is not None}
    unknown = (st.dictionaries(st.integers(0, 40).filter(lambda t: t not in known_tags), st.binary(max_size=6),
                               max_size=2) if flexible else st.just({}))

    def make(values: dict, extra: dict) -> Message:
        obj = cls(**values)
        obj.unknown_tags = extra or None
        return obj

    return st.builds(make, st.fixed_dictionaries(draws), unknown)


def field_strategy(f: F, version: int, flexible: bool) -> st.SearchStrategy:
    nullable = version in f.nullable
    if f.is_struct:
        elem = message_strategy(f.struct, f.fields, version, flexible)
    else:
        elem = primitive_strategy(f.base, nullable and not f.is_array)
    if f.is_array:
        arr = st.lists(elem, max_size=3)
        return st.none() | arr if nullable else arr
    if f.is_struct and nullable:
        return st.none() | elem
    return elem
