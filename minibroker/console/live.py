"""The live protocol trace: a trace listener (minibroker.tools.trace) that hands each request's
decoded entry to the browsers watching /trace/stream.

A subscriber is a bounded queue: a browser that falls behind loses entries (counted, and told in
the next event) rather than making the broker buffer without limit. The listener is attached to
the broker's trace hook only while someone watches, so an unwatched console costs requests
nothing. The last `HISTORY` entries are kept so a page opened just after a request still shows it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging

from minibroker.tools.trace import Traced, TraceEntry, TraceListeners, trace_entry
from minibroker_protocol.schema import Message

log = logging.getLogger("minibroker.console")

HISTORY = 200
QUEUE = 1000


class Subscriber:
    def __init__(self, client_id: str | None, api: str | None) -> None:
        self.client_id = client_id or None
        self.api = api.lower() if api else None
        self.queue: asyncio.Queue[str] = asyncio.Queue(QUEUE)
        self.dropped = 0

    def wants(self, entry: TraceEntry) -> bool:
        if self.client_id is not None and entry["client_id"] != self.client_id:
            return False
        return self.api is None or entry["api"].lower() == self.api


class LiveTrace:
    """Trace listener + subscriber set."""

    def __init__(self, listeners: TraceListeners) -> None:
        self._listeners = listeners
        self._subs: set[Subscriber] = set()
        self.history: collections.deque[str] = collections.deque(maxlen=HISTORY)
        self._seq = 0

    def subscribe(self, client_id: str | None, api: str | None) -> Subscriber:
        sub = Subscriber(client_id, api)
        if not self._subs:
            self._listeners.add(self)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subs.discard(sub)
        if not self._subs:
            self._listeners.remove(self)

    def close(self) -> None:
        self._subs.clear()
        self._listeners.remove(self)

    def request(self, ctx: Traced, request: Message, response: Message | None, frame: bytes | bytearray, started: float) -> None:
        entry = trace_entry(ctx, request, response, frame, started)
        self._seq += 1
        entry["seq"] = self._seq
        text = json.dumps(entry, default=str)
        self.history.append(text)
        for sub in self._subs:
            if not sub.wants(entry):
                continue
            try:
                sub.queue.put_nowait(text)
            except asyncio.QueueFull:
                sub.dropped += 1
