"""A well-behaved client beside an attack: Metadata on its own connection every few milliseconds,
recording how long each answer took, to show the other clients keep being served (issue 30)."""

from __future__ import annotations

import threading
import time
from typing import Any

from minibroker_protocol.apis import metadata
from tests.integration.helpers import RawClient


class MetadataProbe:
    """`with MetadataProbe(bootstrap) as probe: <attack>`; then probe.worst (seconds) and
    probe.answered. A Metadata that gets no answer within `timeout` fails the probe (probe.error)."""

    def __init__(self, bootstrap: str, interval: float = 0.05, timeout: float = 60.0) -> None:
        self.bootstrap, self.interval, self.timeout = bootstrap, interval, timeout
        self.latencies: list[float] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="metadata-probe")

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)

    @property
    def answered(self) -> int:
        return len(self.latencies)

    def _run(self) -> None:
        R = metadata.REQUEST
        body = R(topics=[], allow_auto_topic_creation=False)
        try:
            with RawClient(self.bootstrap, timeout=self.timeout, client_id="metadata-probe") as c:
                while not self._stop.is_set():
                    t0 = time.monotonic()
                    c.call(metadata.API, 12, body)
                    self.latencies.append(time.monotonic() - t0)
                    self._stop.wait(self.interval)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def __enter__(self) -> MetadataProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 5)
