"""What the reference tests share: the two sides of a comparison and how a tool is run on both.

`Pair.run(tool, args)` runs the same Kafka tool against Apache Kafka and minibroker at once (one
thread each) and returns both results; `BOOT` in an argument stands for each broker's address.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference import kafka_reference as kr

# placeholder in tool arguments for the broker's bootstrap address
BOOT = "{bootstrap}"
# one pool for the session: each broker's call runs in its own thread, both JVMs at once
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="kafka-tool")


@dataclass(frozen=True)
class Side:
    """One broker under test: "kafka" (the reference) or "minibroker"."""

    name: str
    bootstrap: str
    data_dir: Path

    def run(self, tool: str, args: Sequence[str] = (), *, input: str | None = None,
            timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        return kr.run_tool(tool, [a.replace(BOOT, self.bootstrap) for a in args], input=input,
                           timeout=timeout)

    def normalise(self, text: str) -> str:
        """The broker's own address and directory replaced by placeholders."""
        return text.replace(self.bootstrap, "<bootstrap>").replace(str(self.data_dir), "<log.dirs>")


@dataclass(frozen=True)
class Pair:
    kafka: Side
    mini: Side

    def run(self, tool: str, args: Sequence[str] = (), *, input: str | None = None,
            timeout: float = 180.0) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
        """The same command against both brokers, concurrently: (Kafka's result, minibroker's)."""
        futures = [POOL.submit(side.run, tool, args, input=input, timeout=timeout)
                   for side in (self.kafka, self.mini)]
        a, b = (f.result() for f in futures)
        return a, b

    def stdout(self, tool: str, args: Sequence[str] = (), *, input: str | None = None,
               timeout: float = 180.0) -> tuple[str, str]:
        """Both stdouts, normalised; a failing tool fails the test with its stderr."""
        a, b = self.run(tool, args, input=input, timeout=timeout)
        for side, r in ((self.kafka, a), (self.mini, b)):
            if r.returncode != 0:
                raise AssertionError(f"{tool} {' '.join(args)} against {side.name} exited "
                                     f"{r.returncode}:\n{r.stdout}\n{r.stderr}")
        return self.kafka.normalise(a.stdout), self.mini.normalise(b.stdout)


def topic_ids_normalised(text: str) -> str:
    """Topic ids (22 characters of URL-safe base64) are random per broker."""
    return re.sub(r"(TopicId: )[A-Za-z0-9_-]{22}", r"\1<id>", text)


def java_available() -> bool:
    return kr.java_executable() is not None and os.access(kr.java_executable() or "", os.X_OK)


def sasl_plain_client(bootstrap: str, user: str, password: str, client_id: str = "acl-raw") -> Any:
    """A RawClient (tests/integration/helpers.py) logged in with SASL PLAIN: SaslHandshake v1 and
    SaslAuthenticate v2 (KIP-152), for raw requests as that user over a SASL_PLAINTEXT listener."""
    from minibroker_protocol.apis import sasl_authenticate, sasl_handshake
    from tests.integration.helpers import RawClient

    c = RawClient(bootstrap, client_id=client_id)
    try:
        hs = c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN"))
        assert hs.error_code == 0, hs
        auth = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(
            auth_bytes=b"\0" + user.encode() + b"\0" + password.encode()))
        assert auth.error_code == 0, auth
    except BaseException:
        c.close()
        raise
    return c
