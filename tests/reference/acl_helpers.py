"""What the ACL reference tests share: Apache Kafka and minibroker configured the same way
(StandardAuthorizer, PLAIN users over SASL_PLAINTEXT, the operator as super user on a PLAINTEXT
listener), started side by side, and the client settings of a PLAIN user.

Each test module holds its own pair through `acl_brokers` (a module-scoped fixture of its own),
so that the ACLs one module creates never show up in another's listings.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reference import kafka_reference as kr

JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def acl_props(plain_port: int, sasl_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        "authorizer.class.name": AUTHORIZER,
        # the PLAINTEXT listener (and Kafka's own controller link) is the operator's: ANONYMOUS is super
        "super.users": "User:admin;User:ANONYMOUS",
        "group.initial.rebalance.delay.ms": "0",
    }


@contextmanager
def acl_brokers(data_dir: Path) -> Iterator[dict[str, tuple[str, str]]]:
    """name -> (PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap), for "kafka" and "minibroker";
    skips the test when the reference broker cannot run here."""
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    from minibroker.testing import BrokerThread

    kport, ksasl, cp = kr.free_port(), kr.free_port(), kr.free_port()
    props = acl_props(kport, ksasl)
    k = kr.KafkaReference(overrides={
        **props, "listeners": props["listeners"] + f",CONTROLLER://127.0.0.1:{cp}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
        port=kport, controller_port=cp)
    mini = BrokerThread(data_dir, overrides=acl_props(0, 0))
    k.start()
    try:
        mini.start()
        try:
            yield {"kafka": (f"127.0.0.1:{kport}", f"127.0.0.1:{ksasl}"),
                   "minibroker": (mini.bootstrap_for("PLAINTEXT"), mini.bootstrap_for("SASL_PLAINTEXT"))}
        finally:
            mini.stop()
    finally:
        k.stop()


def password(user: str) -> str:
    return f"{user}-secret"


def client_conf(sasl: str, user: str) -> dict[str, Any]:
    """librdkafka (confluent-kafka) settings of a PLAIN user on the SASL_PLAINTEXT listener."""
    return {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": password(user)}


def raw_as(bootstrap: str, user: str, api: Any, version: int, body: Any) -> dict[str, Any]:
    """One raw request (our codec) on a connection authenticated as `user` with SASL PLAIN: the
    decoded response as a dict."""
    from minibroker_protocol.apis import sasl_authenticate, sasl_handshake
    from tests.integration.helpers import RawClient

    with RawClient(bootstrap, client_id="acl-raw") as c:
        assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="PLAIN")).error_code == 0
        auth = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(
            auth_bytes=f"\0{user}\0{password(user)}".encode()))
        assert auth.error_code == 0, auth.error_message
        return c.call(api, version, body).to_dict()  # type: ignore[no-any-return]
