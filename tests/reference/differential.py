"""The differential harness: one raw request, encoded by our `protocol/` codec at an explicit
version, sent to Apache Kafka and to minibroker; both responses decoded and compared field by
field.

What legitimately differs between two brokers is normalised away before the comparison (cluster
id, host and port, topic ids, producer ids, wall-clock timestamps, throttle times): each such field
is replaced by a placeholder that still says whether it was set (a zero topic id stays zero, a -1
timestamp stays -1), so "Kafka returned an id and we did not" is still a difference.

Lists of structs are compared as sets keyed by their identifying field (name, partition index,
api key...): Kafka answers topics in hash-map order.

`Differential.compare(...)` returns the differences as lines `path: kafka=... minibroker=...`;
`assert_same` fails with all of them. A test that expects a known difference asserts exactly
that difference (so it fails the day the difference goes away or changes).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minibroker_protocol.schema import Api
from tests.integration.helpers import RawClient

# fields whose value is a broker's own (address, identity, clock): compared as "set or not"
_PLACEHOLDER_FIELDS = frozenset({
    "cluster_id", "host", "port", "topic_id", "producer_id", "throttle_time_ms",
    "timestamp", "log_append_time_ms", "max_timestamp", "transaction_start_time_ms",
    "last_timestamp", "session_id", "member_id", "leader", "producer_epoch_start",
})
# identifying fields of a struct in a list, in order of preference
_IDENTITY = ("name", "topic", "resource_name", "partition_index", "partition", "index", "api_key",
             "group_id", "transactional_id", "config_name", "key", "member_id", "node_id")


def _placeholder(v: Any) -> Any:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, uuid.UUID):
        return "<uuid>" if v.int else "<zero-uuid>"
    if isinstance(v, int):
        return v if v < 0 else "<set>"
    if isinstance(v, str):
        return "<set>" if v else ""
    return "<set>"


def normalise(value: Any, extra: Iterable[str] = ()) -> Any:
    """A plain-data copy of a decoded message with broker-specific values replaced."""
    names = _PLACEHOLDER_FIELDS | frozenset(extra)

    def walk(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: (_placeholder(x) if k in names and not isinstance(x, (list, dict)) else walk(x))
                    for k, x in v.items() if k != "unknown_tags"}
        if isinstance(v, list):
            items = [walk(x) for x in v]
            if items and all(isinstance(x, dict) for x in items):
                key = next((k for k in _IDENTITY if k in items[0]), None)
                if key is not None:
                    items.sort(key=lambda x: repr(x.get(key)))
            return items
        if isinstance(v, memoryview):
            return bytes(v)
        return v

    return walk(value)


def differences(kafka: Any, mini: Any, path: str = "") -> list[str]:
    """Every path where the two normalised values differ."""
    if isinstance(kafka, dict) and isinstance(mini, dict):
        out: list[str] = []
        for k in sorted(set(kafka) | set(mini)):
            out += differences(kafka.get(k, "<absent>"), mini.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(kafka, list) and isinstance(mini, list) and all(isinstance(x, dict) for x in kafka + mini):
        key = next((k for k in _IDENTITY if any(k in x for x in kafka + mini)), None)
        if key is not None:
            ka = {repr(x.get(key)): x for x in kafka}
            mb = {repr(x.get(key)): x for x in mini}
            out = []
            for k in sorted(set(ka) | set(mb)):
                out += differences(ka.get(k, "<absent>"), mb.get(k, "<absent>"), f"{path}[{key}={k}]")
            return out
        if len(kafka) == len(mini):
            return [d for i, (a, b) in enumerate(zip(kafka, mini, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    if kafka != mini:
        return [f"{path or '.'}: kafka={kafka!r} minibroker={mini!r}"]
    return []


def drop(value: Any, paths: Iterable[str]) -> Any:
    """`value` without the fields named (dotted names, matched at any depth by their last part
    when given as a bare name): for fields a test has checked on its own."""
    bare = {p for p in paths}

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items() if k not in bare}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


@dataclass
class Differential:
    """Both brokers' bootstrap addresses; each call opens a fresh connection to each."""

    kafka: str
    mini: str
    client_id: str = "differential"
    log: list[str] = field(default_factory=list)

    def call_one(self, bootstrap: str, api: Api, version: int, body: Any) -> dict[str, Any]:
        with RawClient(bootstrap, client_id=self.client_id) as c:
            resp = c.call(api, version, body)
        return resp.to_dict()  # type: ignore[no-any-return]

    def call(self, api: Api, version: int, body: Any | Callable[[], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The raw decoded responses (Kafka's, minibroker's). `body` may be a factory, called once
        per broker, when the request must not be shared (records are consumed on encode)."""
        make = body if callable(body) else (lambda: body)
        return (self.call_one(self.kafka, api, version, make()),
                self.call_one(self.mini, api, version, make()))

    def compare(self, api: Api, version: int, body: Any, *, ignore: Iterable[str] = (),
                extra: Iterable[str] = ()) -> list[str]:
        """The differences between the normalised responses, `ignore`d fields left out."""
        a, b = self.call(api, version, body)
        ign = list(ignore)
        return differences(drop(normalise(a, extra), ign), drop(normalise(b, extra), ign))

    def assert_same(self, api: Api, version: int, body: Any, *, ignore: Iterable[str] = (),
                    extra: Iterable[str] = ()) -> None:
        diff = self.compare(api, version, body, ignore=ignore, extra=extra)
        assert not diff, f"{api.name} v{version}: minibroker differs from Kafka:\n  " + "\n  ".join(diff)
