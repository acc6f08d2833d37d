"""Controller registrations on the active controller (KIP-919; Kafka: ClusterControlManager's
registerController / unregisterController, ControllerRegistrationManager).

ControllerRegistration (API 70) becomes a RegisterControllerRecord once metadata.version is at
least 3.7-IV0; UnregisterController (API 94, Kafka 4.4) an UnregisterControllerRecord once it is
at least 4.4-IV2, CONTROLLER_ID_NOT_REGISTERED with Kafka's text for an id the image has no
registration of, INVALID_REQUEST for the active controller's own id. Refusals are raised as
KafkaError with Kafka's messages.

minibroker's controller is the single voter, so it is always the active controller it registers
with: `self_registration` is the request Kafka's ControllerRegistrationManager would send, and
`needs_registration` says when to send it again, as that manager does after each metadata update
(its registration missing or of another incarnation, or metadata.version raised to a level that
supports registrations).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from minibroker.features import METADATA_VERSION
from minibroker.metadata.controller_registration import registration_record
from minibroker.metadata.image import MetadataImage
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import controller_registration
from minibroker_protocol.apis.controller_registration import ControllerRegistrationRequest
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion

REGISTRATION_LEVEL = 15  # metadata.version 3.7-IV0 (MetadataVersion.isControllerRegistrationSupported)
UNREGISTRATION_LEVEL = 33  # 4.4-IV2 (MetadataVersion.isControllerUnregistrationSupported)
PLAINTEXT = 0  # SecurityProtocol id: the controller listener is PLAINTEXT here


def register_controller(image: MetadataImage, req: ControllerRegistrationRequest) -> list[ApiMessageAndVersion]:
    if image.features.get(METADATA_VERSION, 0) < REGISTRATION_LEVEL:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         "The current MetadataVersion is too old to support controller registrations.")
    return [ApiMessageAndVersion(registration_record(req), 0)]


def unregister_controller(image: MetadataImage, controller_id: int, active_id: int) -> list[ApiMessageAndVersion]:
    """`active_id`: this controller's id (Kafka's QuorumController refuses it first)."""
    if controller_id == active_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active.")
    if image.features.get(METADATA_VERSION, 0) < UNREGISTRATION_LEVEL:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         "The current MetadataVersion is too old to support controller unregistration.")
    if controller_id not in image.controllers:
        raise KafkaError(ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                         f"Controller ID {controller_id} is not currently registered.")
    return [ApiMessageAndVersion(mr.UNREGISTER_CONTROLLER_RECORD(controller_id=controller_id), 0)]


def self_registration(node_id: int, incarnation_id: uuid.UUID, listener: tuple[str, str, int],
                      features: Mapping[str, tuple[int, int]]) -> ControllerRegistrationRequest:
    """What Kafka's ControllerRegistrationManager sends: this node's id and incarnation, its
    controller listener, the feature levels it supports, zkMigrationReady false."""
    req = controller_registration.REQUEST
    name, host, port = listener
    return req(controller_id=node_id, incarnation_id=incarnation_id, zk_migration_ready=False,
               listeners=[req.Listener(name=name, host=host, port=port, security_protocol=PLAINTEXT)],
               features=[req.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                         for n, (lo, hi) in sorted(features.items())])


def needs_registration(image: MetadataImage, req: ControllerRegistrationRequest) -> bool:
    """Whether the image lacks this incarnation's registration (Kafka: registeredInLog false)."""
    current = image.controllers.get(req.controller_id)
    return (image.features.get(METADATA_VERSION, 0) >= REGISTRATION_LEVEL
            and (current is None or current.incarnation_id != req.incarnation_id))
