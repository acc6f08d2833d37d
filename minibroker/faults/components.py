"""Faults of a broker's components, by kind (issue 32): a slow disk, a full disk, a paused broker.

Theory of operation: a component fault is a `Fault` with a `kind` instead of an API. `KINDS` maps
each kind to a `ComponentKind` that applies it to the broker the fault's `node` names (the one
broker, when it names none) and reverts it when the fault is removed. The cluster (issue 29) adds
its kinds the same way, with `register_kind`: a leader move, a coordinator move, a broker stopped,
a follower cut off from its leader, each applied to the broker(s) its fault names.

- `disk.slow`: each append of a Produce waits `delay_ms` before it is written, as an fsync or a
  write stuck behind a slow device makes it wait (the request is held; other connections go on,
  where a Kafka broker's request handler thread would be blocked).
- `disk.full`: each append of a Produce is refused with KAFKA_STORAGE_ERROR, the code Kafka
  answers when the write to the log directory fails (an IOException marks the log dir offline,
  LogDirFailureChannel); nothing is written, so nothing acknowledged is lost, and reads go on.
  Kafka would also take the partitions offline (and stop a broker whose every log dir failed);
  here the broker keeps serving reads, so a test sees the producer's side alone.
- `broker.pause`: the broker stops accepting and stops reading every connection (what a
  SIGSTOP'ed or GC-paused broker looks like from outside: TCP connects into the backlog, requests
  sit in the socket buffers); answers already being worked on still go out. Removing the fault
  resumes it.

The disk kinds hang on the ReplicaManager's `disk_fault` hook (None unless one is set: the produce
path pays one attribute check).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from minibroker.faults.model import Fault
from minibroker.replica_manager import DiskFaultHook
from minibroker_protocol.errors import ErrorCode, KafkaError


class DiskHook(Protocol):
    disk_fault: DiskFaultHook | None


class Pausable(Protocol):
    def pause(self) -> None: ...

    def resume(self) -> None: ...


class FaultTarget(Protocol):
    """What the component kinds reach of a broker (minibroker.server.BrokerServer)."""

    node_id: int

    @property
    def replica_manager(self) -> DiskHook: ...

    @property
    def socket_server(self) -> Pausable: ...


class DiskFaults:
    """The disk faults on one broker, consulted before each Produce append
    (ReplicaManager._append_one)."""

    def __init__(self, on_fire: Callable[[Fault, str], None]) -> None:
        self.faults: list[Fault] = []
        self._on_fire = on_fire

    async def before_append(self, topic: str, partition: int) -> None:
        for f in list(self.faults):
            if f.topic is not None and (f.topic != topic or (f.partition is not None and f.partition != partition)):
                continue
            if not f.trigger():
                continue
            self._on_fire(f, f"{topic}-{partition}")
            if f.kind == "disk.full":
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"Error while appending records to {topic}-{partition} (fault {f.id}: disk full)")
            await asyncio.sleep(f.delay_ms / 1000)


class ComponentKind(Protocol):
    def apply(self, target: FaultTarget, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None: ...

    def revert(self, target: FaultTarget, fault: Fault) -> None: ...


class _Disk:
    def apply(self, target: FaultTarget, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None:
        rm = target.replica_manager
        hook = rm.disk_fault
        if not isinstance(hook, DiskFaults):
            hook = rm.disk_fault = DiskFaults(on_fire)
        hook.faults.append(fault)

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        rm = target.replica_manager
        hook = rm.disk_fault
        if isinstance(hook, DiskFaults) and fault in hook.faults:
            hook.faults.remove(fault)
            if not hook.faults:
                rm.disk_fault = None


class _Pause:
    def apply(self, target: FaultTarget, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None:
        fault.matched += 1
        fault.fired += 1
        on_fire(fault, f"node {target.node_id} paused")
        target.socket_server.pause()

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        target.socket_server.resume()


KINDS: dict[str, ComponentKind] = {"disk.slow": _Disk(), "disk.full": _Disk(), "broker.pause": _Pause()}


def register_kind(name: str, kind: ComponentKind) -> None:
    """Add a component fault kind (the cluster's: leader moves, broker stops, ...)."""
    KINDS[name] = kind
