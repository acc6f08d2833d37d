"""Which controller a broker talks to (Kafka: RaftControllerNodeProvider, and the bootstrap side of
KIP-853's controller.quorum.bootstrap.servers).

A quorum of several controllers has one active controller, the leader of `__cluster_metadata`; the
others answer a broker's requests with NOT_CONTROLLER (heartbeats, registrations, AlterPartition,
forwarded requests) or NOT_LEADER_OR_FOLLOWER (the metadata Fetch, naming the leader they know).
Every ControllerChannel of a broker asks this object where to connect. It learns the leader from
the metadata fetches (their CurrentLeader, and the leader's endpoint from NodeEndpoints when the
voters were only given as bootstrap servers); until it knows one, or when a channel was refused or
cut, it tries the next address of the quorum in turn, as Kafka's brokers try the bootstrap servers.
"""

from __future__ import annotations

import logging

log = logging.getLogger("minibroker.metadata")

Address = tuple[str, int]


class ControllerNodeProvider:
    def __init__(self, voters: dict[int, Address], bootstrap: list[Address] | None = None):
        """`voters`: controller.quorum.voters by node id; `bootstrap`: addresses without ids
        (controller.quorum.bootstrap.servers), used when no voter is named."""
        self.voters = dict(voters)
        self._addresses: list[Address] = list(voters.values()) or list(bootstrap or ())
        if not self._addresses:
            raise ValueError("no controller address")
        self._next = 0
        self.leader_id: int | None = None
        self.generation = 0  # bumped on every change of target, so that channels reconnect

    @property
    def several(self) -> bool:
        """More than one controller to choose from."""
        return len(set(self._addresses) | set(self.voters.values())) > 1

    @classmethod
    def single(cls, host: str, port: int) -> ControllerNodeProvider:
        return cls({}, [(host, port)])

    def target(self) -> Address:
        if self.leader_id is not None and self.leader_id in self.voters:
            return self.voters[self.leader_id]
        return self._addresses[self._next % len(self._addresses)]

    def on_leader(self, leader_id: int, endpoint: Address | None = None) -> None:
        """The metadata log's leader, as a fetch answer named it (and its address, if it gave one)."""
        if leader_id < 0:
            return
        if endpoint is not None and self.voters.get(leader_id) != endpoint:
            self.voters[leader_id] = endpoint
        if leader_id != self.leader_id and leader_id in self.voters:
            log.info("the active controller is node %d at %s:%d", leader_id, *self.voters[leader_id])
            self.leader_id = leader_id
            self.generation += 1

    def on_failure(self, address: Address) -> None:
        """`address` refused the request (NOT_CONTROLLER) or could not be reached: forget the leader
        if it was there, and move on to the next address."""
        if address != self.target():
            return  # another channel already moved on
        if self.leader_id is not None:
            self.leader_id = None
        if len(self._addresses) > 1:
            self._next = (self._addresses.index(address) + 1) % len(self._addresses) \
                if address in self._addresses else self._next + 1
        self.generation += 1
