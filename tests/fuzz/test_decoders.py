"""Hypothesis fuzzing of every decoder (tests/fuzz/targets.py): random bytes and mutated valid
inputs must be decoded or rejected with the protocol's own errors, never crash otherwise.

Bounded: FUZZ_EXAMPLES examples per test (default 500; bench/fuzz.py runs by time instead).
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker_protocol.codec import decode, encode
from tests.fuzz.targets import SCHEMAS, TARGETS, mutate, run, seeds_for
from tests.protocol.strategies import message_strategy

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "500"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(TARGETS))
@FUZZ
@given(data=st.binary(max_size=512))
def test_random_bytes(name: str, data: bytes):
    run(TARGETS[name], data)


@pytest.mark.parametrize("name", sorted(TARGETS))
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, 100))
def test_mutated_valid_input(name: str, seed: int, which: int):
    seeds = seeds_for(name)
    rng = random.Random(seed)
    data = seeds[which % len(seeds)]
    for _ in range(rng.randint(1, 3)):
        data = mutate(rng, data)
    run(TARGETS[name], data)


@FUZZ
@given(data=st.data(), index=st.integers(0, len(SCHEMAS) - 1), seed=st.integers(0, 2**32 - 1))
def test_every_schema_decodes_mutations_of_its_own_encodings(data, index: int, seed: int):
    """A valid message of a random API, side and version, encoded, mutated, decoded."""
    _, _, schema, version = SCHEMAS[index]
    obj = data.draw(message_strategy(schema.cls, schema.fields, version, version in schema.flexible))
    raw = bytes(encode(schema, version, obj))
    run(lambda b: decode(schema, version, b), mutate(random.Random(seed), raw))


def test_the_harness_reports_a_crash():
    """`run` lets anything but the protocol's errors through, so a crashing decoder fails."""
    with pytest.raises(IndexError):
        run(lambda b: b[10], b"")
