"""The ApiVersions table: per api key, the range Apache Kafka's broker listener advertises beside
minibroker's, both asked in one run (issue 35).

`api_versions_table(kafka, mini)` sends the same ApiVersions v3 request to each bootstrap and
returns one `Row` per key either side advertises; `render(rows)` prints them as the markdown table
docs/differences.md#api-versions and the session reports carry. Run alone:

    python -m tests.reference.api_versions_table   # starts a Kafka 4.4 reference and a minibroker
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import NamedTuple

from minibroker_protocol.apis import KEYS, api_versions
from tests.integration.helpers import RawClient

# the names of the keys minibroker has no schema for (so minibroker_protocol.apis cannot name them)
_OTHER_NAMES = {
    34: "AlterReplicaLogDirs", 71: "GetTelemetrySubscriptions",
    72: "PushTelemetry", 74: "ListConfigResources", 80: "AddRaftVoter", 81: "RemoveRaftVoter",
    83: "InitializeShareGroupState", 84: "ReadShareGroupState", 85: "WriteShareGroupState",
    86: "DeleteShareGroupState", 87: "ReadShareGroupStateSummary", 88: "StreamsGroupHeartbeat",
    89: "StreamsGroupDescribe", 93: "StreamsGroupTopologyDescriptionUpdate", 94: "UnregisterController",
}


class Row(NamedTuple):
    key: int
    name: str
    kafka: tuple[int, int] | None
    mini: tuple[int, int] | None

    @property
    def same(self) -> bool:
        return self.kafka == self.mini


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) as the broker at `bootstrap` answers ApiVersions v3."""
    body = api_versions.REQUEST(client_software_name="api-versions-table", client_software_version="1")
    with RawClient(bootstrap, client_id="api-versions-table") as c:
        resp = c.call(api_versions.API, 3, body).to_dict()
    assert resp["error_code"] == 0, resp
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}


def api_name(key: int) -> str:
    if key in _OTHER_NAMES:
        return _OTHER_NAMES[key]
    module = KEYS.get(key)
    return "".join(p.title() for p in module.split("_")) if module else "?"


def api_versions_table(kafka: str, mini: str) -> list[Row]:
    kv, mv = advertised(kafka), advertised(mini)
    return [Row(k, api_name(k), kv.get(k), mv.get(k)) for k in sorted(set(kv) | set(mv))]


def _shown(r: tuple[int, int] | None) -> str:
    return "-" if r is None else f"{r[0]}-{r[1]}"


def render(rows: list[Row]) -> str:
    same = sum(1 for r in rows if r.same)
    kafka_only = [r for r in rows if r.mini is None]
    out = ["| key | API | Kafka | minibroker | |", "|---|---|---|---|---|"]
    for r in rows:
        mark = "=" if r.same else ("not served" if r.mini is None else "differs")
        out.append(f"| {r.key} | {r.name} | {_shown(r.kafka)} | {_shown(r.mini)} | {mark} |")
    out.append(f"\nKafka advertises {sum(1 for r in rows if r.kafka)} APIs, minibroker "
               f"{sum(1 for r in rows if r.mini)}; {same} at the same versions, {len(kafka_only)} not served.")
    return "\n".join(out)


def main() -> None:
    from minibroker.testing import BrokerThread  # lazy: only the stand-alone run starts brokers
    from reference import kafka_reference as kr  # lazy: idem

    k = kr.KafkaReference()
    k.start()
    try:
        with tempfile.TemporaryDirectory() as tmp, BrokerThread(Path(tmp) / "data") as b:
            print(render(api_versions_table(k.bootstrap, b.bootstrap)))
    finally:
        k.stop()


if __name__ == "__main__":
    main()
