"""Network partitions inside a cluster, as component fault kinds (issue 32): a follower cut off
from its leader, a broker cut off from the controller.

- `replica.fetch.cut` (`node` = the follower; `topic`, `partition` optional): the follower's
  Fetch requests to its leaders stop getting through, for the partitions named (all without a
  topic). The leader sees no fetch for them, so after replica.lag.time.max.ms it proposes an ISR
  without the follower (Partition.maybeShrinkIsr, KIP-497 AlterPartition); an acks=all produce
  with fewer in-sync replicas than min.insync.replicas then answers NOT_ENOUGH_REPLICAS. Removing
  the fault lets the follower fetch again from its log end: it catches up and the leader puts it
  back into the ISR (maybeExpandIsr).
- `controller.cut` (`node`): every request of that broker to the controller (heartbeats, the
  metadata log fetches, AlterPartition, forwarded admin requests, producer id blocks) stops
  getting through. The controller fences it after broker.session.timeout.ms and elects new
  leaders for the partitions it led; the cut broker, hearing nothing of it, still believes it
  leads, but its followers now fetch from the new leaders, so the high watermark of an acks=all
  write to it cannot advance (its ISR shrink is only proposed, never committed: KIP-497) and the
  write times out, unacknowledged. Removing the fault lets its heartbeats and metadata fetches
  through: it learns the new leaders, becomes their follower and truncates what it appended
  alone (the DivergingEpoch of KIP-320/KIP-595, KIP-101/KIP-279's truncation), and the
  controller unfences it.

How a cut request behaves (the fault's `action`): by default it hangs, as over a network that
drops packets — a fetch waits until the fault is removed (Kafka's follower would time out after
replica.socket.timeout.ms and reconnect into the same silence), a request to the controller
waits out its timeout and fails (ControllerUnavailable), or goes through if the fault is removed
first. With `"action": "close"` it fails at once, as a refused or reset connection does: the
follower backs off replica.fetch.backoff.ms, the controller channels their own backoffs.

`fired` counts the requests a cut stopped (a fetch round of the follower, a request to the
controller). The hooks are None unless a cut is set (ReplicaFetcherManager.fetch_fault,
ControllerChannel.fault): the fetch and heartbeat paths pay one attribute check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from minibroker.faults.components import FaultTarget, register_kind
from minibroker.faults.model import Fault, FaultError
from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker_protocol.schema import Api

if TYPE_CHECKING:  # the fetcher's modules load with the first partition followed (issue 22)
    from minibroker.replica_fetcher import PartitionFetchState
    from minibroker.replica_fetcher_manager import ReplicaFetcherManager

TopicPartition = tuple[str, int]
OnFire = Callable[[Fault, str], None]
CUT_ACTIONS = (None, "drop", "close")  # hang (the default; "drop" says it), or fail at once


class FetcherHost(Protocol):
    fetcher_manager: ReplicaFetcherManager | None
    fetcher_manager_factory: Callable[[], ReplicaFetcherManager] | None


class _Cuts:
    """The cuts of one kind on one broker; `changed` wakes the requests hanging on them."""

    def __init__(self, on_fire: OnFire) -> None:
        self.faults: list[Fault] = []
        self.on_fire = on_fire
        self.changed = asyncio.Event()

    def add(self, fault: Fault) -> None:
        self.faults.append(fault)
        self._wake()

    def discard(self, fault: Fault) -> None:
        if fault in self.faults:
            self.faults.remove(fault)
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()  # the next waiters wait for the next change

    @staticmethod
    def fire(fault: Fault) -> None:
        fault.matched += 1
        fault.fired += 1


class FetchCuts(_Cuts):
    """minibroker.replica_fetcher.FetchFaultHook: the partitions a cut names are not fetched."""

    async def partitions_through(self, follower: int, leader: int, ready: Mapping[TopicPartition, PartitionFetchState]
                                 ) -> Mapping[TopicPartition, PartitionFetchState]:
        through: dict[TopicPartition, PartitionFetchState] = {}
        cut: dict[int, tuple[Fault, list[TopicPartition]]] = {}
        for tp, st in ready.items():
            f = next((f for f in self.faults if _names(f, tp)), None)
            if f is None:
                through[tp] = st
            else:
                cut.setdefault(f.id, (f, []))[1].append(tp)
        for f, tps in cut.values():
            self.fire(f)
            self.on_fire(f, f"Fetch {follower} -> leader {leader} cut: " + ", ".join(f"{t}-{p}" for t, p in tps))
        if through or not cut:
            return through
        if any(f.action == "close" for f, _ in cut.values()):
            raise ConnectionError(f"connection to leader {leader} refused ({_names_of(cut)}: replica.fetch.cut)")
        await self.changed.wait()  # hangs until a cut is set or removed; the next round looks again
        return {}


class ControllerCut(_Cuts):
    """minibroker.metadata.controller_channel.LinkFault: the broker's requests to the controller."""

    async def through(self, channel: ControllerChannel, api: Api, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.faults:
            f = self.faults[0]
            self.fire(f)
            self.on_fire(f, f"{api.name} to the controller ({channel.client_id}) cut")
            if f.action == "close":
                raise ControllerUnavailable(f"{api.name} to the controller at {channel.host}:{channel.port}: "
                                            f"connection refused (fault {f.id}: controller.cut)")
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                async with asyncio.timeout(left):
                    await self.changed.wait()
            except TimeoutError:
                break
        if self.faults:
            raise ControllerUnavailable(f"{api.name} to the controller at {channel.host}:{channel.port}: no answer "
                                        f"within {timeout:.1f} s (fault {self.faults[0].id}: controller.cut)")


def _names(f: Fault, tp: TopicPartition) -> bool:
    return f.topic is None or (f.topic == tp[0] and (f.partition is None or f.partition == tp[1]))


def _names_of(cut: Mapping[int, tuple[Fault, list[TopicPartition]]]) -> str:
    return ", ".join(f"fault {fid}" for fid in cut)


def _check_action(fault: Fault) -> None:
    if fault.action not in CUT_ACTIONS or fault.error is not None or fault.delay_ms:
        raise FaultError(f"{fault.kind} hangs the requests it cuts, or with \"action\": \"close\" fails them at once")


class _FetchCut:
    def apply(self, target: FaultTarget, fault: Fault, on_fire: OnFire) -> None:
        _check_action(fault)
        rm: FetcherHost = getattr(target, "replica_manager")  # noqa: B009 - FaultTarget types it narrower
        if rm.fetcher_manager is None:
            if rm.fetcher_manager_factory is None:
                raise FaultError(f"node {target.node_id} follows no leader: replica.fetch.cut needs a cluster")
            rm.fetcher_manager = rm.fetcher_manager_factory()
        manager = rm.fetcher_manager
        hook = manager.fetch_fault
        if not isinstance(hook, FetchCuts):
            hook = manager.fetch_fault = FetchCuts(on_fire)
        hook.add(fault)

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        rm: FetcherHost = getattr(target, "replica_manager")  # noqa: B009 - as above
        manager = rm.fetcher_manager
        hook = manager.fetch_fault if manager is not None else None
        if manager is not None and isinstance(hook, FetchCuts):
            hook.discard(fault)
            if not hook.faults:
                manager.fetch_fault = None


class _ControllerCut:
    def apply(self, target: FaultTarget, fault: Fault, on_fire: OnFire) -> None:
        _check_action(fault)
        channels: Sequence[ControllerChannel] = getattr(target, "controller_channels", ())
        if not channels:
            raise FaultError(f"node {target.node_id} has no controller: controller.cut needs a KRaft broker")
        hook = next((c.fault for c in channels if isinstance(c.fault, ControllerCut)), None)
        if hook is None:
            hook = ControllerCut(on_fire)
        for c in channels:
            c.fault = hook
        hook.add(fault)

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        channels: Sequence[ControllerChannel] = getattr(target, "controller_channels", ())
        for c in channels:
            hook = c.fault
            if isinstance(hook, ControllerCut):
                hook.discard(fault)
                if not hook.faults:
                    c.fault = None


KIND_NAMES = ("replica.fetch.cut", "controller.cut")


def register() -> None:
    register_kind("replica.fetch.cut", _FetchCut())
    register_kind("controller.cut", _ControllerCut())


register()
