"""Issue 30's attacks (findings 1, 2, 3, 5, 9), each against this checkout's broker and a baseline's
in one run: how long a well-behaved client waited for a Metadata answer while the attack ran,
what the attacker got, how long it took, and the broker's RSS growth.

    .venv/bin/python bench/memory_attack.py --issue30 --baseline /work/before [--results FILE]

(bench/memory_attack.py hands over to `main` here.) A fresh broker per attack and side; the
sides alternate per attack. Results: bench/results/issue30-attacks.json by default.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.brokers import ROOT, Minibroker  # noqa: E402
from minibroker_protocol.apis import describe_configs, describe_producers, fetch, metadata, produce  # noqa: E402
from tests.integration.helpers import RawClient  # noqa: E402
from tests.integration.limits_helpers import rss_mb  # noqa: E402
from tests.integration.stall_helpers import MetadataProbe, constant_records_batch  # noqa: E402

Attack = Callable[[str], str]  # bootstrap -> what the attacker got


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def six_bytes(bootstrap: str) -> str:
    socks = [_connect(bootstrap) for _ in range(10)]
    for s in socks:
        s.sendall(struct.pack(">i", 100 * 1024 * 1024))
    time.sleep(0.3)
    for s in socks:
        s.sendall(b"\0\0")
    time.sleep(5)
    for s in socks:
        s.close()
    return "10 connections held open 5 s"


def non_readers(bootstrap: str) -> str:
    hogs = [RawClient(bootstrap) for _ in range(2)]
    R = describe_configs.REQUEST
    req = R(resources=[R.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None)],
            include_synonyms=True, include_documentation=True)
    for h in hogs:
        h.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        h.send_raw(b"".join(h.request_bytes(describe_configs.API, 4, req, i) for i in range(400)))
    time.sleep(15)  # the broker closes them after connections.max.idle.ms (see "non_readers_closed")
    for h in hogs:
        h.close()
    return "2 connections, 400 requests each, nothing read for 15 s"


def _call(bootstrap: str, api: object, version: int, body: object) -> object:
    with RawClient(bootstrap, timeout=300) as raw:
        return raw.call(api, version, body)


def many_elements(bootstrap: str) -> str:
    DP = describe_producers.REQUEST
    req = DP(topics=[DP.TopicRequest(name=f"t{i}", partition_indexes=[0]) for i in range(300_000)])
    try:
        resp = _call(bootstrap, describe_producers.API, 0, req)
    except (EOFError, OSError) as e:
        return f"connection closed ({type(e).__name__})"
    return f"answered, {len(resp.topics)} topics"  # type: ignore[attr-defined]


def _produce(bootstrap: str, topic: str, batch: bytes) -> object:
    _call(bootstrap, metadata.API, 4, metadata.REQUEST(topics=[metadata.REQUEST.MetadataRequestTopic(name=topic)],
                                                       allow_auto_topic_creation=True))
    time.sleep(0.5)
    P = produce.REQUEST
    req = P(transactional_id=None, acks=1, timeout_ms=60_000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])])
    return _call(bootstrap, produce.API, 8, req).responses[0].partition_responses[0]  # type: ignore[attr-defined]


def tiny_records(bootstrap: str) -> str:
    part = _produce(bootstrap, "tiny", constant_records_batch(7_500_000))
    return f"produce error {part.error_code}, base offset {part.base_offset}"  # type: ignore[attr-defined]


def down_conversion(bootstrap: str) -> str:
    part = _produce(bootstrap, "old", constant_records_batch(3_000_000, codec=1))
    assert part.error_code == 0, part  # type: ignore[attr-defined]
    F = fetch.REQUEST
    req = F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1024, topics=[
        F.FetchTopic(topic="old", partitions=[F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)])])
    data = _call(bootstrap, fetch.API, 3, req).responses[0].partitions[0]  # type: ignore[attr-defined]
    return f"fetch error {data.error_code}, {len(data.records)} bytes of records"


ATTACKS: list[tuple[str, Attack, tuple[str, ...]]] = [
    ("1: 100 MiB size prefixes + 2 bytes, 10 connections", six_bytes, ()),
    ("2: two clients pipelining DescribeConfigs, reading nothing (pool 8 MiB, idle 3 s)", non_readers,
     ("queued.max.request.bytes=8388608", "connections.max.idle.ms=3000")),
    ("9: DescribeProducers of 300,000 topics (4 MB)", many_elements, ()),
    ("3: Produce of a 5 KB zstd batch of 7.5 M records", tiny_records, ()),
    ("5: Fetch v3 max_bytes=1024 of a stored gzip batch of 3 M records", down_conversion, ()),
]


def run_one(name: str, cwd: Path, attack: Attack, overrides: tuple[str, ...]) -> dict[str, object]:
    broker = Minibroker(cwd=cwd, name=name, overrides=overrides, extra_args=("--log-level", "INFO"))
    bootstrap = broker.start()
    try:
        before = rss_mb(broker.pid)
        peak = before
        with MetadataProbe(bootstrap, timeout=120) as probe:
            time.sleep(0.3)
            started = time.monotonic()
            try:
                got = attack(bootstrap)
            except Exception as e:  # noqa: BLE001 - what the attacker got is the measurement
                got = f"failed: {e!r}"[:200]
            took = time.monotonic() - started
            peak = max(peak, rss_mb(broker.pid))
            time.sleep(0.3)
        return {"broker": name, "attacker_got": got, "attack_s": round(took, 2),
                "probe_worst_wait_s": round(probe.worst, 3), "probe_answers": probe.answers,
                "probe_error": repr(probe.error) if probe.error else None,
                "rss_growth_mb": round(peak - before, 1),
                # connections the broker closed for reading none of their answers (finding 2)
                "non_readers_closed": (broker.dir / "broker.log").read_text(errors="replace").count(
                    "it has read none of its answers")}
    finally:
        broker.kill()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, required=True, help="the checkout before (e.g. /work/before)")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "issue30-attacks.json")
    ap.add_argument("--only", default="", help="comma-separated attack numbers (1,2,9,3,5)")
    a = ap.parse_args(argv)
    rows = []
    for title, attack, overrides in ATTACKS:
        if a.only and title.split(":")[0] not in a.only.split(","):
            continue
        for name, cwd in (("after", ROOT), ("before", a.baseline)):
            row = {"attack": title, **run_one(name, cwd, attack, overrides)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    a.results.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows},
                                    indent=1) + "\n")
    print(f"{'attack':<70} {'broker':<7} {'worst wait':>10} {'attack':>8} {'RSS+':>7}  attacker got")
    for r in rows:
        print(f"{str(r['attack'])[:70]:<70} {r['broker']:<7} {r['probe_worst_wait_s']:>9.2f}s {r['attack_s']:>7.1f}s "
              f"{r['rss_growth_mb']:>6.0f}M  {r['attacker_got']}"
              + (f"; {r['non_readers_closed']} closed for not reading" if r["non_readers_closed"] else ""))


if __name__ == "__main__":
    main()
