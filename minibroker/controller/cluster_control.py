"""Broker registrations, heartbeats and fencing (Kafka: ClusterControlManager, BrokerHeartbeatManager).

A broker registers (BrokerRegistration) and gets its *broker epoch*: the offset of its
RegisterBrokerRecord in the metadata log, so a later registration always has a larger one. It
starts fenced: it may not lead or be in an ISR. Its heartbeats (BrokerHeartbeat) carry the metadata
offset it has replayed; once that reaches its registration record and it does not ask to stay
fenced, the controller unfences it. A broker whose heartbeats stop for `broker.session.timeout.ms`
is fenced. `want_shut_down` starts a controlled shutdown: the broker is marked
`in_controlled_shutdown`, leaves every ISR and loses every leadership; once it leads nothing, the
answer says `should_shut_down` and the broker is fenced. The heartbeat times are soft state: a
controller that restarts gives every broker a full session from its start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from minibroker.controller.directory_assignment import check_registration
from minibroker.metadata.image import (
    FENCE,
    UNFENCE,
    BrokerRegistration,
    Endpoint,
    MetadataImage,
    register_broker_record,
)
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis.broker_heartbeat import BrokerHeartbeatRequest
from minibroker_protocol.apis.broker_registration import BrokerRegistrationRequest
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

REGISTER_BROKER_RECORD_VERSION = 3  # with log_dirs (KIP-858), read by every Kafka 4 tool
BROKER_REGISTRATION_CHANGE_VERSION = 2


@dataclass(slots=True)
class BrokerHeartbeatState:
    last_contact_ms: int
    metadata_offset: int = -1


def usable(image: MetadataImage, broker_id: int) -> bool:
    """May the broker lead or be in an ISR: registered, unfenced, not shutting down (Kafka: isActive)."""
    b = image.brokers.get(broker_id)
    return b is not None and not b.fenced and not b.in_controlled_shutdown


class ClusterControlManager:
    def __init__(self, cluster_id: str, session_timeout_ms: int, clock: Callable[[], int]):
        self.cluster_id = cluster_id
        self.session_timeout_ms = session_timeout_ms
        self.clock = clock
        self.heartbeats: dict[int, BrokerHeartbeatState] = {}

    def register(self, image: MetadataImage, req: BrokerRegistrationRequest,
                 record_offset: int) -> tuple[list[ApiMessageAndVersion], int]:
        """The RegisterBrokerRecord for `req` (to land at `record_offset`: the new epoch) and that epoch."""
        if req.cluster_id != self.cluster_id:
            raise KafkaError(ErrorCode.INCONSISTENT_CLUSTER_ID,
                             f"Expected cluster ID {self.cluster_id}, but got cluster ID {req.cluster_id}")
        existing = image.brokers.get(req.broker_id)
        now = self.clock()
        if existing is not None and existing.incarnation_id != req.incarnation_id and not existing.fenced \
                and req.previous_broker_epoch != existing.epoch:  # KIP-966: back from a clean shutdown
            hb = self.heartbeats.get(req.broker_id)
            if hb is not None and now - hb.last_contact_ms < self.session_timeout_ms:
                raise KafkaError(ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                                 f"Another broker is registered with that broker id {req.broker_id}.")
        check_registration(image, req)  # KIP-858: its directories
        mv = image.features.get("metadata.version")
        supported = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
        if mv is not None and "metadata.version" in supported:
            lo, hi = supported["metadata.version"]
            if not lo <= mv <= hi:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                                 f"Unable to register because the broker does not support finalized version {mv} "
                                 f"of metadata.version. The broker wants a version between {lo} and {hi}, inclusive.")
        reg = BrokerRegistration(
            req.broker_id, record_offset, req.incarnation_id,
            tuple(Endpoint(x.name, x.host, x.port, x.security_protocol) for x in req.listeners), req.rack,
            fenced=True, features=supported, log_dirs=tuple(req.log_dirs))
        self.heartbeats[req.broker_id] = BrokerHeartbeatState(now)
        return [ApiMessageAndVersion(register_broker_record(reg), REGISTER_BROKER_RECORD_VERSION)], record_offset

    def check_epoch(self, image: MetadataImage, broker_id: int, broker_epoch: int) -> BrokerRegistration:
        """The registration, if `broker_epoch` is its current one (Kafka: checkBrokerEpoch)."""
        b = image.brokers.get(broker_id)
        if b is None:
            raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered")  # Kafka: checkBrokerEpoch
        if b.epoch != broker_epoch:
            raise KafkaError(ErrorCode.STALE_BROKER_EPOCH,
                             f"Expected broker epoch {b.epoch}, but got broker epoch {broker_epoch}")
        return b

    def touch(self, req: BrokerHeartbeatRequest) -> None:
        hb = self.heartbeats.setdefault(req.broker_id, BrokerHeartbeatState(self.clock()))
        hb.last_contact_ms = self.clock()
        hb.metadata_offset = req.current_metadata_offset

    def expired(self, image: MetadataImage) -> list[int]:
        """Unfenced brokers whose session ran out (Kafka: BrokerHeartbeatManager.findOneStaleBroker)."""
        now = self.clock()
        out = []
        for b in image.brokers.values():
            hb = self.heartbeats.setdefault(b.id, BrokerHeartbeatState(now))
            if not b.fenced and now - hb.last_contact_ms >= self.session_timeout_ms:
                out.append(b.id)
        return out

    def start_sessions(self, image: MetadataImage) -> None:
        """After a controller start: every registered broker gets a full session from now."""
        now = self.clock()
        self.heartbeats = {b: BrokerHeartbeatState(now) for b in image.brokers}


def fence_record(b: BrokerRegistration) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.BROKER_REGISTRATION_CHANGE_RECORD(broker_id=b.id, broker_epoch=b.epoch,
                                                                     fenced=FENCE), BROKER_REGISTRATION_CHANGE_VERSION)


def unfence_record(b: BrokerRegistration) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.BROKER_REGISTRATION_CHANGE_RECORD(broker_id=b.id, broker_epoch=b.epoch,
                                                                     fenced=UNFENCE), BROKER_REGISTRATION_CHANGE_VERSION)


def controlled_shutdown_record(b: BrokerRegistration) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.BROKER_REGISTRATION_CHANGE_RECORD(broker_id=b.id, broker_epoch=b.epoch,
                                                                     in_controlled_shutdown=1),
                                BROKER_REGISTRATION_CHANGE_VERSION)


def unregister_record(b: BrokerRegistration) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(mr.UNREGISTER_BROKER_RECORD(broker_id=b.id, broker_epoch=b.epoch), 0)
