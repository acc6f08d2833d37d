"""librdkafka's pre-0.10 modes (no ApiVersions; `broker.version.fallback`) against minibroker.

With `api.version.request=false` librdkafka guesses the broker's versions from the fallback:
0.8.2 and 0.9.0 speak Produce v0 / Fetch v0 / Metadata v0 with MessageSet v0, 0.10.0 speaks
magic 1. kcat is librdkafka in C, so this is the old C client path end to end.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.helpers import module_broker

FALLBACKS = ["0.8.2", "0.9.0", "0.10.0"]


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def kcat(bootstrap: str, fallback: str, *args: str, stdin: bytes | None = None) -> str:
    out = subprocess.run(["kcat", "-b", bootstrap, "-X", "api.version.request=false",
                          "-X", f"broker.version.fallback={fallback}", *args],
                         input=stdin, capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out.stdout.decode()


@pytest.mark.parametrize("fallback", FALLBACKS)
def test_old_librdkafka_modes_produce_list_and_consume(kafka_broker_module, fallback):
    topic = "old-librdkafka-" + fallback.replace(".", "-")
    lines = [f"k{i}:v{i}-{fallback}" for i in range(5)]
    kcat(kafka_broker_module.bootstrap, fallback, "-P", "-t", topic, "-K:", stdin="\n".join(lines).encode() + b"\n")
    listing = kcat(kafka_broker_module.bootstrap, fallback, "-L", "-t", topic)
    assert f'topic "{topic}" with 1 partitions' in listing
    got = kcat(kafka_broker_module.bootstrap, fallback, "-C", "-t", topic, "-e", "-q", "-f", "%o %k:%s\\n")
    assert got.splitlines() == [f"{i} {line}" for i, line in enumerate(lines)]
