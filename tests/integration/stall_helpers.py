"""A well-behaved client that keeps asking for Metadata while an attack runs (issue 30): the
stall tests and bench/memory_attack.py measure how long its answers took."""

from __future__ import annotations

import threading
import time

from protocol.apis import metadata
from tests.integration.helpers import RawClient


class MetadataProbe:
    """One connection sending Metadata v1 (no topics) back to back on a thread; `worst` is the
    longest wait for an answer (an unanswered request counts from when it was sent until `stop`)."""

    def __init__(self, bootstrap: str, timeout: float = 60.0):
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.answers = 0
        self.latencies: list[float] = []
        self.error: BaseException | None = None
        self._sent_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="metadata-probe")

    def __enter__(self) -> MetadataProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            with RawClient(self.bootstrap, timeout=self.timeout) as raw:
                while not self._stop.is_set():
                    self._sent_at = time.monotonic()
                    resp = raw.call(metadata.API, 1, metadata.REQUEST(topics=[]))
                    assert resp.brokers, resp
                    self.latencies.append(time.monotonic() - self._sent_at)
                    self._sent_at = None
                    self.answers += 1
                    time.sleep(0.02)
        except (OSError, EOFError, AssertionError) as e:  # a socket timeout is an OSError
            self.error = e

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.timeout + 5)

    @property
    def worst(self) -> float:
        """The longest wait for an answer so far, counting the one still awaited."""
        pending = time.monotonic() - self._sent_at if self._sent_at is not None else 0.0
        return max([pending, *self.latencies])

    def summary(self) -> str:
        return f"{self.answers} Metadata answers, worst wait {self.worst * 1000:.0f} ms" + (
            f", failed: {self.error!r}" if self.error else "")
