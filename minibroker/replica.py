"""What a partition's leader knows of each follower, and the messages of leadership changes
(Kafka: kafka.cluster.Replica with ReplicaState, LeaderAndIsr, AlterPartitionManager).

Theory of operation: the leader's `Partition` keeps one `Replica` per other member of the replica
set. Each replica Fetch from that broker updates it (`update_fetch_state`): its log end offset
(the fetch offset: a follower asks for what it does not have), its log start offset, and its
*last caught-up time* — the time of this fetch if it asked for the leader's LEO, else the time of
the previous fetch if it asked for at least the LEO the leader had then (Kafka's rule: a follower
that keeps up with a leader that keeps writing is in sync although it never equals the LEO).
The ISR drops a follower whose last caught-up time is older than `replica.lag.time.max.ms`, and
takes it back once its LEO reaches the high watermark (and the current leader epoch's start).

ISR changes are not the leader's to make: it proposes them to the controller (AlterPartition,
KIP-497) through an `AlterPartitionManager`, with the partition epoch it knows, and applies the
controller's answer (Kafka: Partition.submitAlterPartition / handleAlterPartitionUpdate).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol

from minibroker_protocol.errors import ErrorCode, KafkaError

UNKNOWN_OFFSET = -1
LEADER_RECOVERY_RECOVERED = 0  # Kafka: LeaderRecoveryState.RECOVERED
LEADER_RECOVERY_RECOVERING = 1  # after an unclean election, until the leader has written its epoch


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """One broker as the metadata says it is (Kafka: BrokerRegistration, the fields replication
    reads): where its listener is, its epoch (the offset of its registration record), whether it
    is fenced or shutting down (such a broker does not join an ISR, KIP-841)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    broker_epoch: int = -1
    fenced: bool = False
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leadership as AlterPartition proposes and answers it (Kafka: LeaderAndIsr):
    `isr_with_epochs` pairs each ISR member with the broker epoch the leader saw it fetch with
    (AlterPartition v3+, KIP-903), -1 when unknown."""

    leader: int
    leader_epoch: int
    isr_with_epochs: tuple[tuple[int, int], ...]
    partition_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED

    @property
    def isr(self) -> tuple[int, ...]:
        return tuple(b for b, _ in self.isr_with_epochs)


class AlterPartitionManager(Protocol):
    """The leader's way to propose an ISR change to the controller (Kafka: AlterPartitionManager).
    `submit` sends the proposal (batched with others, AlterPartition) and completes with what the
    controller committed, or raises the KafkaError it answered (INVALID_UPDATE_VERSION,
    FENCED_LEADER_EPOCH, NOT_CONTROLLER, INELIGIBLE_REPLICA, ...). One proposal per partition is in
    flight at a time; a second one is refused with OPERATION_NOT_ATTEMPTED."""

    def submit(self, topic_id: uuid.UUID, partition: int, leader_and_isr: LeaderAndIsr) -> Awaitable[LeaderAndIsr]: ...


@dataclass(slots=True)
class ReplicaState:
    """What the leader knows of one follower (Kafka: ReplicaState)."""

    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET  # the leader's LEO at the follower's last fetch
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    broker_epoch: int | None = None


@dataclass(slots=True)
class Replica:
    """A remote replica of a partition this broker leads (Kafka: kafka.cluster.Replica)."""

    broker_id: int
    state: ReplicaState = field(default_factory=ReplicaState)

    @property
    def log_end_offset(self) -> int:
        return self.state.log_end_offset

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int, broker_epoch: int) -> None:
        """A replica Fetch from this follower (Kafka: Replica.updateFetchStateOrThrow). A fetch
        with an older broker epoch than one already seen is from a previous incarnation of the
        broker (it restarted and re-registered): refused, so it cannot put a stale LEO in."""
        st = self.state
        if broker_epoch >= 0 and st.broker_epoch is not None and broker_epoch < st.broker_epoch:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Received fetch request for a replica with stale broker epoch {broker_epoch}. "
                             f"The expected broker epoch is {st.broker_epoch} or higher.")
        if fetch_offset >= leader_end_offset:
            st.last_caught_up_time_ms = max(st.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= st.last_fetch_leader_log_end_offset:
            st.last_caught_up_time_ms = max(st.last_caught_up_time_ms, st.last_fetch_time_ms)
        st.log_start_offset = log_start_offset
        st.log_end_offset = fetch_offset
        st.last_fetch_leader_log_end_offset = leader_end_offset
        st.last_fetch_time_ms = fetch_time_ms
        if broker_epoch >= 0:
            st.broker_epoch = broker_epoch

    def reset(self, now_ms: int, *, is_new_leader: bool, in_sync: bool) -> None:
        """At a new leader epoch (Kafka: Replica.resetReplicaState): an ISR member counts as
        caught up now, so that it is not dropped before it had a chance to fetch, any other as
        never (so the HW does not wait for it); a broker that just became leader knows nothing
        of its followers' logs, one that stays leader keeps what it knew."""
        caught_up = now_ms if in_sync else 0
        if is_new_leader:
            self.state = ReplicaState(last_caught_up_time_ms=caught_up)
        else:
            self.state.last_caught_up_time_ms = caught_up

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """Not out of sync (Kafka: Partition.isFollowerOutOfSync, negated)."""
        return self.state.log_end_offset == leader_end_offset or now_ms - self.state.last_caught_up_time_ms <= max_lag_ms
