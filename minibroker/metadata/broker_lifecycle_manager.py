"""A broker's registration and heartbeats with the controller (Kafka: BrokerLifecycleManager).

`start` registers (BrokerRegistration with a new incarnation id, the listeners, the supported
features) until the controller accepts, retrying with a backoff; the answer is the broker epoch.
Then a heartbeat goes every `broker.heartbeat.interval.ms` carrying the metadata offset the broker
has replayed (`metadata_offset()`); `caught_up` is set when the controller says the broker caught
up, `unfenced` when it is unfenced — the broker serves only after that (Kafka waits for both).
A heartbeat answered STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED (the controller fenced and
forgot it, or restarted on another log) makes the broker register again. `controlled_shutdown`
asks to shut down until the controller has moved every leadership away and says so, bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker_protocol.apis import broker_heartbeat, broker_registration
from minibroker_protocol.errors import ErrorCode

log = logging.getLogger("minibroker.metadata")


@dataclass(frozen=True, slots=True)
class ListenerInfo:
    name: str
    host: str
    port: int
    security_protocol: int = 0  # PLAINTEXT


class RegistrationRefused(RuntimeError):
    """The controller will never take this broker (another cluster's id, a feature it cannot support):
    a start-up error said in one line (Kafka's broker logs the error and keeps retrying)."""


class BrokerLifecycleManager:
    def __init__(self, channel: ControllerChannel, *, node_id: int, cluster_id: str,
                 listeners: Sequence[ListenerInfo], features: dict[str, tuple[int, int]],
                 metadata_offset: Callable[[], int], rack: str | None = None,
                 heartbeat_interval_ms: int = 2000, log_dirs: Sequence[uuid.UUID] = ()):
        self.channel = channel
        self.node_id, self.cluster_id, self.rack = node_id, cluster_id, rack
        self.listeners, self.features, self.log_dirs = list(listeners), features, list(log_dirs)
        # directories that failed since the start (Kafka: BrokerLifecycleManager.propagateDirectoryFailure)
        self.offline_log_dirs: list[uuid.UUID] = []
        self.metadata_offset = metadata_offset
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.previous_broker_epoch = -1
        self.fenced = True
        self.caught_up = asyncio.Event()
        self.unfenced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._want_shut_down = False
        self._should_shut_down = asyncio.Event()
        self._wake = asyncio.Event()  # a heartbeat to send now (a failed directory)

    async def start(self) -> None:
        await self.register()
        self._task = asyncio.create_task(self._heartbeats(), name="broker-heartbeats")

    async def register(self) -> None:
        req = broker_registration.REQUEST
        backoff = 0.05
        while True:
            msg = req(broker_id=self.node_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
                      listeners=[req.Listener(name=x.name, host=x.host, port=x.port,
                                              security_protocol=x.security_protocol) for x in self.listeners],
                      features=[req.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                                for n, (lo, hi) in sorted(self.features.items())],
                      rack=self.rack, log_dirs=self.log_dirs, previous_broker_epoch=self.previous_broker_epoch)
            try:
                resp = await self.channel.send(broker_registration.API, msg)
            except ControllerUnavailable as e:
                log.info("broker %d: registration failed (%s); retrying", self.node_id, e)
            else:
                assert isinstance(resp, broker_registration.BrokerRegistrationResponse)
                if resp.error_code == ErrorCode.NONE:
                    self.broker_epoch = resp.broker_epoch
                    log.info("broker %d registered with broker epoch %d", self.node_id, self.broker_epoch)
                    return
                if resp.error_code in (ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.UNSUPPORTED_VERSION):
                    raise RegistrationRefused(f"broker {self.node_id}: the controller refused the registration "
                                              f"(error {ErrorCode(resp.error_code).name})")
                log.info("broker %d: registration answered %s; retrying", self.node_id,
                         ErrorCode(resp.error_code).name)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)

    async def heartbeat(self) -> broker_heartbeat.BrokerHeartbeatResponse | None:
        msg = broker_heartbeat.REQUEST(broker_id=self.node_id, broker_epoch=self.broker_epoch,
                                       current_metadata_offset=self.metadata_offset(), want_fence=False,
                                       want_shut_down=self._want_shut_down,
                                       offline_log_dirs=list(self.offline_log_dirs))
        try:
            resp = await self.channel.send(broker_heartbeat.API, msg, timeout=max(self.heartbeat_interval * 2, 1.0))
        except ControllerUnavailable as e:
            log.info("broker %d: heartbeat failed (%s)", self.node_id, e)
            return None
        assert isinstance(resp, broker_heartbeat.BrokerHeartbeatResponse)
        if resp.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            log.info("broker %d: heartbeat answered %s; registering again", self.node_id,
                     ErrorCode(resp.error_code).name)
            self.incarnation_id = uuid.uuid4()
            await self.register()
            return resp
        if resp.error_code != ErrorCode.NONE:
            return resp
        self.fenced = resp.is_fenced
        if resp.is_caught_up:
            self.caught_up.set()
        if not resp.is_fenced:
            self.unfenced.set()
        if resp.should_shut_down:
            self._should_shut_down.set()
        return resp

    def propagate_directory_failure(self, directory_id: uuid.UUID) -> None:
        """Name a failed directory in every heartbeat from now on, the next one sent at once
        (Kafka: BrokerLifecycleManager.propagateDirectoryFailure, scheduleNextCommunicationImmediately)."""
        if directory_id not in self.offline_log_dirs:
            self.offline_log_dirs.append(directory_id)
        self._wake.set()

    async def _heartbeats(self) -> None:
        while self._task is not None:
            self._wake.clear()
            await self.heartbeat()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.heartbeat_interval):
                    await self._wake.wait()

    async def controlled_shutdown(self, timeout: float) -> bool:
        """Ask to shut down until the controller agrees (leaderships moved); False if `timeout` passed."""
        self._want_shut_down = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._should_shut_down.is_set() and loop.time() < deadline:
            await self.heartbeat()
            if not self._should_shut_down.is_set():
                await asyncio.sleep(min(0.1, self.heartbeat_interval))
        return self._should_shut_down.is_set()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.channel.close()
