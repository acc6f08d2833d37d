"""Incremental fetch sessions (KIP-227).

A consumer that fetches many partitions can open a session (epoch 0) and from then on send only
what changed (epoch 1, 2, ...); the broker remembers the rest. The response of an incremental
fetch lists only partitions with something new: records, a changed high watermark, last stable
offset or log start offset, or an error. Epoch -1 means "no session" (a full fetch every time).
Kafka: kafka.server.FetchSession / FetchSessionCache; eviction here is plain least-recently-used.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TypeAlias

from minibroker_protocol.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

# A session's partition: (topic name, topic id, partition); unknown topics keep what the client sent
# (a name with no id before v13, an id with no name from v13 on).
PartitionKey: TypeAlias = tuple[str | None, uuid.UUID | None, int]


@dataclass(slots=True)
class SessionPartition:
    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    # What the client last saw, to decide whether an incremental response must include it.
    sent_hw: int = -2
    sent_lso: int = -2
    sent_log_start: int = -2


@dataclass
class FetchSession:
    session_id: int
    epoch: int
    # ordered as the client added them
    partitions: OrderedDict[PartitionKey, SessionPartition] = field(default_factory=OrderedDict)


class FetchSessionCache:
    def __init__(self, max_slots: int = 1000):
        self.max_slots = max(0, int(max_slots))
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(random.randint(1, 1 << 20))

    def __len__(self) -> int:
        return len(self._sessions)

    def new_session(self) -> FetchSession | None:
        if self.max_slots == 0:
            return None
        while len(self._sessions) >= self.max_slots:
            self._sessions.popitem(last=False)
        sid = next(self._ids) & 0x7FFFFFFF or next(self._ids)
        session = FetchSession(sid, 1)
        self._sessions[sid] = session
        return session

    def get(self, session_id: int, epoch: int) -> FetchSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)
