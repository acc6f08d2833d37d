"""A fault: what it matches, what it does, when it fires (issue 32).

Theory of operation: a `Fault` is data. Its match is a conjunction of optional filters on a
request (Kafka's API name, a version range, the client id, a topic, a partition, a group id, a
transactional id, the broker's node id) or, for a component fault, a `kind` naming the component
(minibroker.faults.components). Its action is one of: answer a Kafka error (`error`), delay the
answer (`delay_ms`; the connection's later requests wait behind it, as Kafka's in-order
processing makes them), `close` the connection before handling, `close_after` handling (the
request took effect, the answer is lost), or `drop` the answer (the request is held: nothing more
is answered on that connection until the client gives up and closes it, which is what a broker
that lost a response looks like to a client). Its trigger: skip the first `after` matches, then
fire `count` times (None: every time until removed), each time with `probability` drawn from a
`random.Random(seed)` of its own, so a run is repeatable.

The trigger is the fault injection proxy's vocabulary proposed for Apache Kafka (`once()`,
`onCall(n)`, `times(n)`, `everyTime()`, `withProbability(p)`): once is count=1, on the n-th call
is after=n-1 with count=1, times(n) is count=n, every time is count=None.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TypeAlias, TypedDict

from minibroker_protocol import apis
from minibroker_protocol.errors import ErrorCode

ACTIONS = ("close", "close_after", "drop")
# a fault as JSON (GET /api/faults, the fixtures' `all()`)
JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"


class FaultSpec(TypedDict, total=False):
    """make_fault's keyword arguments (what `inject` takes besides the API)."""

    kind: str | None
    versions: tuple[int, int] | int | None
    client_id: str | None
    topic: str | None
    partition: int | None
    group_id: str | None
    transactional_id: str | None
    node: int | None
    error: str | int | None
    delay_ms: int | None
    action: str | None
    after: int
    nth: int | None
    count: int | None
    probability: float
    seed: int | None


class FaultError(ValueError):
    """A fault that cannot be: an unknown API or error name, no action, two actions."""


def error_code(error: str | int) -> int:
    """Kafka's error code for a name ("NOT_LEADER_OR_FOLLOWER") or a number."""
    if isinstance(error, int) and not isinstance(error, bool):
        try:
            return int(ErrorCode(error))
        except ValueError:
            raise FaultError(f"no Kafka error code {error}") from None
    try:
        return int(ErrorCode[str(error).upper()])
    except KeyError:
        raise FaultError(f"no Kafka error named {error!r}") from None


def api_key(name: str | int) -> int:
    """The api key of Kafka's API name ("Produce", "FindCoordinator"), or of a key."""
    if isinstance(name, int) and not isinstance(name, bool):
        if name not in apis.KEYS:
            raise FaultError(f"no API with key {name}")
        return name
    by_name = apis.BY_NAME  # every schema imported, once, when the first fault is made
    api = by_name.get(str(name))
    if api is None:
        lowered = {n.lower(): a for n, a in by_name.items()}
        api = lowered.get(str(name).lower())
    if api is None:
        raise FaultError(f"no API named {name!r} (Kafka's names: Produce, Fetch, FindCoordinator, ...)")
    return api.key


@dataclass(eq=False)
class Fault:
    """One fault, live in a `FaultRegistry` (which gives it its `id`). Build it with
    `FaultRegistry.inject(...)`; its fields are read on every matching request."""

    id: int
    # -- match (None: any) ------------------------------------------------------------------------
    api: str | None = None  # Kafka's API name; None for a component fault
    api_key: int | None = None
    versions: tuple[int, int] | None = None  # inclusive
    client_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None
    transactional_id: str | None = None
    node: int | None = None  # the broker's node id (one registry may serve several brokers)
    kind: str | None = None  # a component fault's kind (minibroker.faults.components.KINDS)
    # -- action (exactly one of error / delay_ms / action, except a component's own) ------------
    error: str | None = None  # Kafka's error name
    code: int = 0
    delay_ms: int = 0
    action: str | None = None  # "close", "close_after", "drop"
    # -- trigger ----------------------------------------------------------------------------------
    after: int = 0  # matches let through before the first firing
    count: int | None = 1  # firings, None: every match until removed
    probability: float = 1.0
    seed: int | None = None
    # -- state --------------------------------------------------------------------------------
    matched: int = 0
    fired: int = 0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def trigger(self) -> bool:
        """A match happened: whether the fault fires on it (and counts it if it does)."""
        if self.exhausted:
            return False
        self.matched += 1
        if self.matched <= self.after:
            return False
        if self.probability < 1.0 and self.rng.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def describe(self) -> str:
        """What it does, for the trace and the console: "error NOT_LEADER_OR_FOLLOWER"."""
        if self.kind is not None:
            what = self.kind + (f" {self.delay_ms} ms" if self.delay_ms else "")
        elif self.error is not None:
            what = f"error {self.error}"
        elif self.action is not None:
            what = self.action
        else:
            what = f"delay {self.delay_ms} ms"
        return f"fault {self.id}: {what}"

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"id": self.id}
        for name in ("api", "kind", "versions", "client_id", "topic", "partition", "group_id",
                     "transactional_id", "node", "error", "action"):
            v = getattr(self, name)
            if v is not None:
                out[name] = list(v) if isinstance(v, tuple) else v
        if self.delay_ms:
            out["delay_ms"] = self.delay_ms
        out.update({"after": self.after, "count": self.count, "probability": self.probability, "seed": self.seed,
                    "matched": self.matched, "fired": self.fired, "description": self.describe()})
        return out


def make_fault(fault_id: int, *, api: str | int | None = None, kind: str | None = None,
               versions: tuple[int, int] | int | None = None, client_id: str | None = None,
               topic: str | None = None, partition: int | None = None, group_id: str | None = None,
               transactional_id: str | None = None, node: int | None = None,
               error: str | int | None = None, delay_ms: int | None = None, action: str | None = None,
               after: int = 0, nth: int | None = None, count: int | None = 1,
               probability: float = 1.0, seed: int | None = None) -> Fault:
    """A checked `Fault` (FaultError says what is wrong). `nth=n` fires on the n-th match only
    (after=n-1, count=1)."""
    if (api is None) == (kind is None):
        raise FaultError("a fault names either an API (a request fault) or a component kind")
    if nth is not None:
        if nth < 1:
            raise FaultError("nth counts matches from 1")
        after, count = nth - 1, 1
    if count is not None and count < 1:
        raise FaultError("count is at least 1 (None: every time)")
    if after < 0:
        raise FaultError("after is at least 0")
    if not 0.0 < probability <= 1.0:
        raise FaultError("probability is in (0, 1]")
    if delay_ms is not None and delay_ms < 0:
        raise FaultError("delay_ms is at least 0")
    if action is not None and action not in ACTIONS:
        raise FaultError(f"action is one of {', '.join(ACTIONS)}")
    if partition is not None and topic is None:
        raise FaultError("a partition is matched with its topic")
    if isinstance(versions, int):
        versions = (versions, versions)
    f = Fault(fault_id, client_id=client_id, topic=topic, partition=partition, group_id=group_id,
              transactional_id=transactional_id, node=node, after=after, count=count, probability=probability,
              seed=seed, versions=versions, delay_ms=delay_ms or 0, action=action)
    if kind is not None:
        f.kind = kind
        if error is not None:
            f.error, f.code = ErrorCode(error_code(error)).name, error_code(error)
        return f
    assert api is not None
    f.api_key = api_key(api)
    schema = apis.api(f.api_key)
    assert schema is not None
    f.api = schema.name
    actions = sum(x is not None for x in (error, action)) + (1 if delay_ms else 0)
    if actions != 1:
        raise FaultError("a request fault does one thing: error, delay_ms or action (close, close_after, drop)")
    if error is not None:
        f.code = error_code(error)
        f.error = ErrorCode(f.code).name
    return f


_JSON_FIELDS: dict[str, tuple[type, ...]] = {
    "api": (str, int), "kind": (str,), "client_id": (str,), "topic": (str,), "partition": (int,), "group_id": (str,),
    "transactional_id": (str,), "node": (int,), "error": (str, int), "delay_ms": (int,), "action": (str,),
    "nth": (int,), "after": (int,), "probability": (int, float), "seed": (int,)}


def fault_kwargs(body: object) -> FaultSpec:
    """make_fault's arguments from a fault as JSON (POST /api/faults, the pytest marker): the same
    names, "count" 0 or null for every time, "versions" [lo, hi] or "version" n."""
    if not isinstance(body, dict):
        raise FaultError('a fault is a JSON object: {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}')
    out: dict[str, object] = {}
    for key, value in body.items():
        if key in ("count", "version", "versions"):
            continue
        types = _JSON_FIELDS.get(key)
        if types is None:
            known = ", ".join(sorted([*_JSON_FIELDS, "count", "versions"]))
            raise FaultError(f"unknown field {key!r} (known: {known})")
        if value is None:
            continue
        if not isinstance(value, types) or isinstance(value, bool):
            raise FaultError(f"{key}: wrong type {type(value).__name__}")
        out[key] = value
    if "count" in body:
        count = body["count"]
        if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
            raise FaultError("count: an integer (0 or null: every time until removed)")
        out["count"] = count or None
    versions = body.get("versions", body.get("version"))
    if versions is not None:
        if isinstance(versions, int) and not isinstance(versions, bool):
            out["versions"] = (versions, versions)
        elif isinstance(versions, list) and len(versions) == 2 and all(isinstance(v, int) for v in versions):
            out["versions"] = (versions[0], versions[1])
        else:
            raise FaultError("versions: [lo, hi] (or version: n)")
    if "kind" in out and "count" not in out:
        out["count"] = None  # a component fault lasts until removed
    return out  # type: ignore[return-value]  # checked field by field above
