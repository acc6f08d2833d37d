"""KIP-919 controller registrations on minibroker's controller, over its listener (loopback TCP):
the controller registers itself (RegisterControllerRecord, a new incarnation at every start),
ControllerRegistration (API 70) registers another, DescribeCluster with the controller endpoint
type lists the registered controllers on the listener asked, UnregisterController (API 94) writes
UnregisterControllerRecord or answers CONTROLLER_ID_NOT_REGISTERED with Kafka's text, and the
controller registers itself again once its registration is gone (Kafka's
ControllerRegistrationManager). Snapshots keep the registrations."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller import controller_registration_control as crc
from minibroker.controller.controller_server import ControllerServer
from minibroker.controller.quorum_controller import ControllerConfig
from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.raft.snapshots import read_snapshot
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import controller_registration, describe_cluster, unregister_controller
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.metadata_serde import ApiMessageAndVersion
from minibroker_protocol.schema import Message

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TIMEOUT = 30.0


def config() -> ControllerConfig:
    return ControllerConfig(node_id=3000, cluster_id=CLUSTER, voters=(3000,), max_idle_interval_ms=200)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ControllerServer]:
    s = ControllerServer(tmp_path, config(), "127.0.0.1", 0)
    await s.startup()
    yield s
    await s.shutdown()


async def call(server: ControllerServer, api: object, request: Message, version: int = 0) -> Message:
    channel = ControllerChannel("127.0.0.1", server.port, client_id="kip-919-test")
    try:
        return await channel.send(api, request, version=version)  # type: ignore[arg-type]
    finally:
        await channel.close()


async def described(server: ControllerServer) -> list[tuple[int, str, int]]:
    resp = await call(server, describe_cluster.API, describe_cluster.REQUEST(
        include_cluster_authorized_operations=False, endpoint_type=2, include_fenced_brokers=False), version=2)
    assert isinstance(resp, describe_cluster.DescribeClusterResponse)
    assert (resp.error_code, resp.endpoint_type, resp.controller_id) == (0, 2, 3000)
    return [(b.broker_id, b.host, b.port) for b in resp.brokers]


async def unregister(server: ControllerServer, controller_id: int) -> tuple[int, str | None]:
    resp = await call(server, unregister_controller.API, unregister_controller.REQUEST(controller_id=controller_id))
    assert isinstance(resp, unregister_controller.UnregisterControllerResponse)
    return resp.error_code, resp.error_message


def registration(controller_id: int, listener: str, port: int) -> Message:
    req = controller_registration.REQUEST
    return req(controller_id=controller_id, incarnation_id=uuid.uuid4(), zk_migration_ready=True,
               listeners=[req.Listener(name=listener, host="127.0.0.1", port=port, security_protocol=0)],
               features=[req.Feature(name="metadata.version", min_supported_version=7, max_supported_version=33)])


async def test_the_controller_registers_itself_at_every_start(tmp_path: Path) -> None:
    s = ControllerServer(tmp_path, config(), "127.0.0.1", 0)
    await s.startup()
    try:
        first = s.controller.image.controllers[3000]
        assert first.endpoint("CONTROLLER") is not None
        assert (first.endpoint("CONTROLLER").host, first.endpoint("CONTROLLER").port) == ("127.0.0.1", s.port)  # type: ignore[union-attr]
        assert not first.zk_migration_ready
        assert first.features["metadata.version"] == (7, 33)
    finally:
        await s.shutdown()
    s = ControllerServer(tmp_path, config(), "127.0.0.1", 0)
    await s.startup()
    try:
        again = s.controller.image.controllers[3000]
        assert again.incarnation_id != first.incarnation_id  # a new incarnation, written to the log again
        assert again.endpoint("CONTROLLER").port == s.port  # type: ignore[union-attr]
    finally:
        await s.shutdown()


async def test_describe_cluster_lists_the_registered_controllers_on_the_listener_asked(server: ControllerServer) -> None:
    assert await described(server) == [(3000, "127.0.0.1", server.port)]
    resp = await call(server, controller_registration.API, registration(3001, "CONTROLLER", 19093))
    assert isinstance(resp, controller_registration.ControllerRegistrationResponse)
    assert (resp.error_code, resp.error_message) == (0, "")  # Kafka's answer
    assert not server.controller.image.controllers[3001].zk_migration_ready  # Kafka 4 writes false
    resp = await call(server, controller_registration.API, registration(3002, "OTHER", 19094))
    assert resp.error_code == 0  # type: ignore[attr-defined]
    # 3002 has no endpoint on CONTROLLER, the listener asked: not listed (as Kafka)
    assert await described(server) == [(3000, "127.0.0.1", server.port), (3001, "127.0.0.1", 19093)]


async def test_unregister_controller_as_kafka(server: ControllerServer) -> None:
    assert await unregister(server, 99) == (ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                                            "Controller ID 99 is not currently registered.")
    await call(server, controller_registration.API, registration(3001, "CONTROLLER", 19093))
    assert await unregister(server, 3001) == (0, "")
    assert 3001 not in server.controller.image.controllers
    assert await unregister(server, 3001) == (ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                                              "Controller ID 3001 is not currently registered.")
    # the active controller's own id: refused first, as Kafka's QuorumController does
    assert await unregister(server, 3000) == (ErrorCode.INVALID_REQUEST,
                                              "Controller cannot unregister itself while it is active.")
    assert await described(server) == [(3000, "127.0.0.1", server.port)]


async def test_the_controller_registers_again_when_its_registration_is_gone(server: ControllerServer) -> None:
    """Kafka's ControllerRegistrationManager sends its registration again after a metadata update
    that leaves the image without it (here: another incarnation's record replayed over it)."""
    c = server.controller
    ours = c.image.controllers[3000].incarnation_id
    other = registration(3000, "CONTROLLER", server.port)
    await c.register_controller(other)  # type: ignore[arg-type]
    assert c.image.controllers[3000].incarnation_id != ours
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while c.image.controllers[3000].incarnation_id != ours:
        assert loop.time() < deadline, "the controller did not register again"
        await asyncio.sleep(0.02)


def test_refusals_below_the_metadata_versions_that_support_them() -> None:
    image = MetadataImage(features={"metadata.version": 14})
    req = registration(3001, "CONTROLLER", 1)
    with pytest.raises(KafkaError) as e:
        crc.register_controller(image, req)  # type: ignore[arg-type]
    assert (e.value.code, e.value.message) == (ErrorCode.UNSUPPORTED_VERSION, "The current MetadataVersion is too "
                                               "old to support controller registrations.")
    delta = MetadataDelta(MetadataImage(features={"metadata.version": 32}))
    for r in crc.register_controller(MetadataImage(features={"metadata.version": 15}), req):  # type: ignore[arg-type]
        delta.replay(r)
    with pytest.raises(KafkaError) as e:
        crc.unregister_controller(delta.apply(0, 1), 3001, 3000)
    assert (e.value.code, e.value.message) == (ErrorCode.UNSUPPORTED_VERSION, "The current MetadataVersion is too "
                                               "old to support controller unregistration.")


def test_a_snapshot_keeps_the_registrations_and_an_unregistration_removes_one() -> None:
    delta = MetadataDelta(MetadataImage(features={"metadata.version": 33}))
    for cid in (3000, 3001):
        for r in crc.register_controller(delta.apply(0, 1), registration(cid, "CONTROLLER", 9000 + cid)):  # type: ignore[arg-type]
            delta.replay(r)
    image = delta.apply(1, 1)
    rebuilt = MetadataDelta(MetadataImage())
    for r in image.records():
        rebuilt.replay(r)
    assert rebuilt.apply(1, 1).controllers == image.controllers
    assert [r.message.controller_id for r in image.records() if isinstance(r.message, mr.RegisterControllerRecord)
            ] == [3000, 3001]
    after = MetadataDelta(image)
    after.replay(ApiMessageAndVersion(mr.UNREGISTER_CONTROLLER_RECORD(controller_id=3001), 0))
    assert set(after.apply(2, 1).controllers) == {3000} and after.changed_controllers == {3001}


def test_kafkas_registration_in_its_snapshot_is_kept_and_written_back_as_kafka_wrote_it() -> None:
    """The RegisterControllerRecord of Kafka 4.4's snapshot (tests/protocol/kraft_golden) replayed
    into our image is written back by `records()` as Kafka wrote it (its features in their order)."""
    snap = read_snapshot(Path(__file__).parents[1] / "protocol" / "kraft_golden" /
                         "00000000000000000048-0000000001.checkpoint")
    delta = MetadataDelta(MetadataImage())
    kafkas = []
    for r in snap.records:
        delta.replay(r)
        if isinstance(r, ApiMessageAndVersion) and isinstance(r.message, mr.RegisterControllerRecord):
            kafkas.append(r.message)
    image = delta.apply(snap.id.end_offset - 1, snap.id.epoch)
    assert len(kafkas) == 1 and set(image.controllers) == {1}
    assert image.controllers[1].endpoint("CONTROLLER") is not None
    ours = [r.message for r in image.records() if isinstance(r.message, mr.RegisterControllerRecord)]
    assert ours == kafkas
