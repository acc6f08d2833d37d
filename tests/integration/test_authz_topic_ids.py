"""Metadata v12+ asks for topics by id (issue 30, finding 7): a user who may not DESCRIBE the topic
gets TOPIC_AUTHORIZATION_FAILED with the id echoed and a null name, never the topic's name and
partitions (Kafka: KafkaApis.handleTopicMetadataRequest; tests/reference/test_bounds_reference.py
compares with Kafka 4.4). A user with DESCRIBE still gets the topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.security.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import metadata, sasl_authenticate, sasl_handshake
from minibroker_protocol.errors import ErrorCode
from tests.integration.helpers import RawClient

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
R = metadata.REQUEST


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    data: Path = tmp_path_factory.mktemp("authz-ids") / "data"
    data.mkdir()
    with BrokerThread(data, overrides={
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin"}) as b:
        b.create_topic("hidden-by-id", 3)
        acl = AclBinding(ResourceType.TOPIC, "hidden-by-id", PatternType.LITERAL, "User:alice", "*",
                         AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        b._on_loop(lambda s: s.services.authorizer.create([acl]))
        yield b


def _metadata_by_id(b: BrokerThread, user: str, topic_id: Any, version: int) -> Any:
    with RawClient(b.bootstrap_for("SASL_PLAINTEXT")) as c:
        assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN")).error_code == 0
        auth = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(
            auth_bytes=f"\0{user}\0{user}-secret".encode()))
        assert auth.error_code == 0, auth.error_message
        return c.call(metadata.API, version, R(topics=[R.MetadataRequestTopic(topic_id=topic_id, name=None)],
                                               allow_auto_topic_creation=False))


@pytest.mark.parametrize("version", [12, 13])
def test_by_id_without_describe_is_refused_with_a_null_name(broker: BrokerThread, version: int) -> None:
    topic_id = broker._on_loop(lambda s: s.services.metadata_cache.topic("hidden-by-id").topic_id)
    [t] = _metadata_by_id(broker, "bob", topic_id, version).topics
    assert (t.error_code, t.name, t.topic_id, t.partitions) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id, [])
    [t] = _metadata_by_id(broker, "alice", topic_id, version).topics  # DESCRIBE: the topic itself
    assert (t.error_code, t.name, len(t.partitions)) == (0, "hidden-by-id", 3)
