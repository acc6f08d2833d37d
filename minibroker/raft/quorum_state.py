"""`quorum-state`: the raft epoch and leader a KRaft voter last knew (Kafka: FileQuorumStateStore).

A JSON document in `__cluster_metadata-0/`, rewritten atomically whenever the epoch or the leader
changes. With static voters (`controller.quorum.voters`, kraft.version 0) Kafka writes data
version 0 with the voters listed: `{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,
"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}`. A single voter needs only
the epoch back at start: it elects itself in the next one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from minibroker_storage.log_files import atomic_write

QUORUM_STATE_FILE = "quorum-state"
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What quorum-state holds (Kafka: ElectionState)."""

    leader_epoch: int = 0
    leader_id: int = NO_LEADER
    voted_id: int = NO_LEADER
    voters: tuple[int, ...] = ()

    def to_json(self) -> bytes:
        # key order and spacing as Kafka's Jackson writer (QuorumStateData, data version 0)
        doc = {"clusterId": "", "leaderId": self.leader_id, "leaderEpoch": self.leader_epoch,
               "votedId": self.voted_id, "appliedOffset": 0,
               "currentVoters": [{"voterId": v} for v in self.voters], "data_version": 0}
        return json.dumps(doc, separators=(",", ":")).encode()


def read_quorum_state(log_dir: Path) -> ElectionState | None:
    """The stored state, or None when the file does not exist yet (an unformatted or new voter)."""
    path = log_dir / QUORUM_STATE_FILE
    if not path.exists():
        return None
    doc = json.loads(path.read_text("utf-8"))
    voters = tuple(int(v["voterId"]) for v in doc.get("currentVoters") or [])
    return ElectionState(int(doc.get("leaderEpoch", 0)), int(doc.get("leaderId", NO_LEADER)),
                         int(doc.get("votedId", NO_LEADER)), voters)


def write_quorum_state(log_dir: Path, state: ElectionState) -> None:
    atomic_write(log_dir / QUORUM_STATE_FILE, state.to_json())
