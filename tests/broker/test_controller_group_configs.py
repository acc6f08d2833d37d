"""GROUP config resources (type 32) at the controller (Kafka: ConfigurationControlManager with
ControllerConfigurationValidator's GROUP case): the group's resulting set checked against the
controller's properties with Kafka's messages, ConfigRecords only for the keys whose value changes,
validate_only writing nothing, APPEND refused, the "" group refused. The brokers' side (the
publisher, describe on every broker, a share consumer) is in
tests/reference/test_kafka_cluster_reference.py on both clusters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig
from minibroker.controller.quorum_controller import QuorumController
from minibroker_protocol.apis import incremental_alter_configs
from minibroker_protocol.apis.incremental_alter_configs import IncrementalAlterConfigsResponse
from minibroker_protocol.errors import ErrorCode
from tests.broker.controller_helpers import Clock, config, replayed, wire

REQ = incremental_alter_configs.REQUEST
SET, DELETE, APPEND = 0, 1, 2


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[QuorumController]:
    # the controller's own properties widen one bound, as a server.properties would
    props = BrokerConfig({"group.consumer.max.session.timeout.ms": 90000})
    c = QuorumController(tmp_path, config(properties=props), clock=Clock())
    await c.start()
    yield c
    await c.shutdown()


async def _alter(c: QuorumController, group: str, *ops: tuple[str, int, str | None],
                 validate_only: bool = False) -> IncrementalAlterConfigsResponse.AlterConfigsResourceResponse:
    req = REQ(validate_only=validate_only, resources=[REQ.AlterConfigsResource(
        resource_type=32, resource_name=group,
        configs=[REQ.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])])
    (resp,) = (await c.incremental_alter_configs(wire(REQ, 1, req))).responses
    return resp


async def test_group_configs_are_checked_and_written_as_config_records(controller: QuorumController) -> None:
    c = controller
    r = await _alter(c, "g", ("consumer.session.timeout.ms", SET, "80000"), ("share.auto.offset.reset", SET, "earliest"),
                     ("streams.num.standby.replicas", SET, "1"))
    assert (r.error_code, r.error_message) == (0, None)
    assert c.image.configs[(32, "g")] == {"consumer.session.timeout.ms": "80000", "share.auto.offset.reset": "earliest",
                                         "streams.num.standby.replicas": "1"}
    end = c.log.high_watermark
    assert (await _alter(c, "g", ("consumer.session.timeout.ms", SET, "80000"))).error_code == 0
    assert c.log.high_watermark == end  # nothing changed: no record (only BROKER values are written again)
    assert (await _alter(c, "g", ("consumer.session.timeout.ms", SET, "50000"), validate_only=True)).error_code == 0
    assert c.log.high_watermark == end
    refused = {
        ("consumer.session.timeout.ms", SET, "95000"): (
            ErrorCode.INVALID_CONFIG, "consumer.session.timeout.ms must be in the range 45000 to 90000 inclusive."),
        ("share.delivery.count.limit", SET, "x"): (
            ErrorCode.INVALID_CONFIG, "Invalid value x for configuration share.delivery.count.limit: "
                                      "Not a number of type INT"),
        ("no.such.key", SET, "1"): (ErrorCode.INVALID_CONFIG, "Unknown group config name: no.such.key"),
        ("streams.rack.aware.assignment.tags", APPEND, "a"): (
            ErrorCode.INVALID_CONFIG, "Can't APPEND to key streams.rack.aware.assignment.tags because its type "
                                      "is not LIST."),
    }
    for op, want in refused.items():
        # with a good change beside it: a resource whose check fails changes nothing
        r = await _alter(c, "g", ("share.record.lock.duration.ms", SET, "20000"), op)
        assert (r.error_code, r.error_message) == want, op
    r = await _alter(c, "", ("consumer.session.timeout.ms", SET, "50000"))
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert c.log.high_watermark == end
    assert (await _alter(c, "g", ("consumer.session.timeout.ms", DELETE, None))).error_code == 0
    assert c.image.configs[(32, "g")] == {"share.auto.offset.reset": "earliest", "streams.num.standby.replicas": "1"}
    assert replayed(c).configs == c.image.configs


async def test_without_properties_the_bounds_are_kafkas_defaults(tmp_path: Path) -> None:
    c = QuorumController(tmp_path, config(), clock=Clock())
    await c.start()
    try:
        r = await _alter(c, "g", ("consumer.session.timeout.ms", SET, "80000"))
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_CONFIG, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")
    finally:
        await c.shutdown()
