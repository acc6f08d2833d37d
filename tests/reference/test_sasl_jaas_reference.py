"""A SASL listener enabling SCRAM whose only JAAS config is PLAIN's: Apache Kafka 4.4 refuses to
start (JaasContext.loadServerContext finds no JAAS entry for SCRAM-SHA-256 on the listener) and
so does minibroker, with a configuration error naming the listener and the mechanism; with a
SCRAM JAAS config added minibroker starts and a SCRAM user authenticates."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from minibroker.testing import SCRAM_JAAS, BrokerThread
from reference import kafka_reference as kr
from tests.helpers import BrokerProcess, free_port
from tests.reference.acl_helpers import JAAS_PLAIN

KAFKA_ERROR = ("Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. "
               "System property 'java.security.auth.login.config' is not set")


def _props(plain: int, sasl: int) -> dict[str, str]:
    return {"listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN}


def test_kafka_refuses_scram_with_only_a_plain_jaas_config(tmp_path: Path) -> None:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    kport, ksasl, cp = free_port(), free_port(), free_port()
    props = _props(kport, ksasl)
    k = kr.KafkaReference(overrides={
        **props, "listeners": props["listeners"] + f",CONTROLLER://127.0.0.1:{cp}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
        port=kport, controller_port=cp)
    k.workdir = tmp_path / "kafka"
    try:
        with pytest.raises(RuntimeError):
            k.start(timeout=120)
        log = (k.workdir / "server.log").read_text(errors="replace")
        assert "Fatal error during broker startup" in log
        assert KAFKA_ERROR in log
    finally:
        k.stop()
        shutil.rmtree(tmp_path / "kafka", ignore_errors=True)


def test_minibroker_refuses_it_too(tmp_path: Path) -> None:
    b = BrokerProcess(tmp_path / "data", overrides=_props(free_port(), free_port()))
    with pytest.raises(RuntimeError) as e:
        b.start()
    text = str(e.value)
    assert re.search(r"listener SASL_PLAINTEXT enables SASL mechanism SCRAM-SHA-256 but "
                     r"listener\.name\.sasl_plaintext\.scram-sha-256\.sasl\.jaas\.config is not set", text), text
    assert KAFKA_ERROR in text


def test_with_a_scram_jaas_config_it_starts(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    props = {**_props(0, 0), "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS}
    with BrokerThread(tmp_path / "data", overrides=props) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_for("PLAINTEXT")})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")]).values():
            f.result(30)
        scram = AdminClient({"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "carol",
                             "sasl.password": "carol-secret"})
        assert scram.list_topics(timeout=30).brokers
