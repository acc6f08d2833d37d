"""KIP-848 with franz-go and kcat, on Apache Kafka 4.4 and minibroker at once.

franz-go (tests/go/kip848, franz-go v1.22.3 pinned in its go.mod; `go build` once per session,
the module cache outside the repo): two clients of one group read a 6-partition topic once between
them, with kgo's default group settings and with the KIP-848 opt-in (`kgo.ServerSideBalancer()`).
Both brokers must give the same output and the same group type (ListGroups v5): franz-go v1.22
keeps the classic protocol by default even when the broker advertises ConsumerGroupHeartbeat (as
it does on Kafka 4.4), and speaks KIP-848 when asked.

kcat: `group.protocol=consumer` needs librdkafka 2.10+ (KIP-848 generally available); the kcat on
the machine is checked and the test skips, saying why, when its librdkafka is older.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from minibroker_protocol.apis import list_groups
from tests.helpers import ROOT
from tests.integration.helpers import RawClient
from tests.reference.helpers import POOL, Pair

GO_PROGRAM = ROOT / "tests" / "go" / "kip848"


@pytest.fixture(scope="session")
def franz_go(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("franz-go check needs Go (go build of tests/go/kip848)")
    out = tmp_path_factory.mktemp("franz-go") / "kip848"
    env = {**os.environ, "CGO_ENABLED": "0"}  # the module cache stays where Go keeps it (GOMODCACHE)
    subprocess.run([go, "build", "-o", str(out), "."], cwd=GO_PROGRAM, check=True, timeout=300,
                   capture_output=True, env=env)
    return out


def _group_type(bootstrap: str, group: str) -> list[tuple[str, str]]:
    with RawClient(bootstrap) as c:
        r = c.call(list_groups.API, 5, list_groups.REQUEST(states_filter=[], types_filter=[]))
    return [(g.group_type, g.group_state) for g in r.groups if g.group_id == group]


def _run(binary: Path, bootstrap: str, mode: str) -> tuple[str, list[tuple[str, str]]]:
    topic = group = f"franz-{mode}"  # the same names on both brokers
    proc = subprocess.run([str(binary), bootstrap, topic, group, mode], capture_output=True, text=True, timeout=150)
    return proc.stdout.strip() + (f" (stderr: {proc.stderr[-500:]})" if proc.returncode else ""), \
        _group_type(bootstrap, group)


@pytest.mark.parametrize("mode", ["defaults", "848"])
def test_franz_go_group_matches_kafka(pair: Pair, franz_go: Path, mode: str) -> None:
    kafka, mini = (f.result(timeout=200) for f in [POOL.submit(_run, franz_go, s.bootstrap, mode)
                                                   for s in (pair.kafka, pair.mini)])
    assert mini == kafka
    assert mini == ("OK read=60 distinct=60", [("classic" if mode == "defaults" else "consumer", "Empty")])


def _kcat_librdkafka() -> tuple[int, ...] | None:
    kcat = shutil.which("kcat")
    if kcat is None:
        return None
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", subprocess.run([kcat, "-V"], capture_output=True,
                                                                  text=True, timeout=30).stdout)
    return tuple(int(x) for x in m.groups()) if m else None


def test_kcat_with_group_protocol_consumer(pair: Pair) -> None:
    version = _kcat_librdkafka()
    if version is None:
        pytest.skip("kcat is not installed")
    if version < (2, 10, 0):
        pytest.skip(f"kcat's librdkafka {'.'.join(map(str, version))} predates group.protocol=consumer "
                    "(KIP-848 is generally available from librdkafka 2.10)")
    outs = []
    for side in (pair.kafka, pair.mini):
        topic = group = "kcat-kip848"
        subprocess.run(["kcat", "-b", side.bootstrap, "-P", "-t", topic], input="\n".join(map(str, range(20))),
                       text=True, check=True, timeout=60)
        r = subprocess.run(["kcat", "-b", side.bootstrap, "-G", group, "-X", "group.protocol=consumer",
                            "-o", "beginning", "-e", "-q", topic], capture_output=True, text=True, timeout=120)
        outs.append((sorted(r.stdout.split()), _group_type(side.bootstrap, group)))
    assert outs[1] == outs[0]
    assert outs[1][0] == sorted(map(str, range(20))) and outs[1][1][0][0] == "consumer"
