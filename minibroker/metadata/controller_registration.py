"""A controller's registration in the metadata image (KIP-919; Kafka: ControllerRegistration, the
controllers of ClusterImage).

Each controller, once it knows the active controller, sends it ControllerRegistration (API 70)
with its id, an incarnation id new at every start, its listeners and the feature levels it
supports; the active controller writes a RegisterControllerRecord, and an UnregisterController
(API 94) an UnregisterControllerRecord. What the image keeps is what DescribeCluster asked of a
controller listener answers (the controllers and their endpoint on the listener asked), and what
a snapshot writes back.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis.controller_registration import ControllerRegistrationRequest


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    endpoints: tuple[ControllerEndpoint, ...]
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def endpoint(self, listener: str) -> ControllerEndpoint | None:
        return next((e for e in self.endpoints if e.name == listener), None)

    @classmethod
    def from_record(cls, m: mr.RegisterControllerRecord) -> ControllerRegistration:
        return cls(m.controller_id, m.incarnation_id, m.zk_migration_ready,
                   tuple(ControllerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in m.end_points),
                   {f.name: (f.min_supported_version, f.max_supported_version) for f in m.features})

    def to_record(self) -> mr.RegisterControllerRecord:
        rec = mr.REGISTER_CONTROLLER_RECORD
        return rec(controller_id=self.id, incarnation_id=self.incarnation_id, zk_migration_ready=self.zk_migration_ready,
                   end_points=[rec.ControllerEndpoint(name=e.name, host=e.host, port=e.port,
                                                      security_protocol=e.security_protocol) for e in self.endpoints],
                   features=[rec.ControllerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                             for n, (lo, hi) in self.features.items()])  # in the order registered (Kafka keeps it)


def registration_record(req: ControllerRegistrationRequest) -> mr.RegisterControllerRecord:
    """The record the active controller writes for a ControllerRegistration request (Kafka:
    ClusterControlManager.registerController: zkMigrationReady is always written false in Kafka 4)."""
    return ControllerRegistration(
        req.controller_id, req.incarnation_id, False,
        tuple(ControllerEndpoint(li.name, li.host, li.port, li.security_protocol) for li in req.listeners),
        {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}).to_record()
