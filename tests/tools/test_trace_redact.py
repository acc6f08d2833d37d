"""The trace's masking rule for config values: Kafka's AbstractKafkaConfig.loggableValue (issue 30,
finding 8), and responses that carry sensitive values or quote a masked one."""

from __future__ import annotations

import pytest

from minibroker.tools.trace_redact import HIDDEN, Redaction, sensitive_config
from minibroker_protocol.apis import describe_configs, incremental_alter_configs

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@pytest.mark.parametrize(("rtype", "name", "hidden"), [
    (BROKER, "num.partitions", False), (BROKER, "ssl.keystore.password", True),
    (BROKER, "listener.name.sasl_ssl.ssl.key.password", True),
    (BROKER, "listener.name.sasl_plaintext.plain.sasl.jaas.config", True),
    (BROKER, "no.such.key", True),  # unknown type: maybe sensitive
    (TOPIC, "retention.ms", False), (TOPIC, "no.such.key", True),
    (BROKER_LOGGER, "kafka.server", False), (GROUP, "consumer.session.timeout.ms", True),
    (CLIENT_METRICS, "interval.ms", True),
])
def test_loggable_value_rule(rtype: int, name: str, hidden: bool) -> None:
    assert sensitive_config(rtype, name) is hidden


def test_a_refusal_quoting_a_masked_value_is_masked_too() -> None:
    r = Redaction()
    req = {"resources": [{"resource_type": BROKER, "resource_name": "", "configs": [
        {"name": "ssl.keystore.password", "config_operation": 0, "value": "s3cr3t-pw"},
        {"name": "num.partitions", "config_operation": 0, "value": "3"}]}]}
    r.request(incremental_alter_configs.API.key, req)
    assert [c["value"] for c in req["resources"][0]["configs"]] == [HIDDEN, "3"]  # type: ignore[index]
    resp = r.response(incremental_alter_configs.API.key, {"responses": [
        {"error_code": 40, "error_message": "Invalid value s3cr3t-pw for configuration ssl.keystore.password"}]})
    assert "s3cr3t-pw" not in str(resp) and HIDDEN in str(resp)
    assert r.masked


def test_sensitive_described_values_and_synonyms_are_masked() -> None:
    r = Redaction()
    resp = r.response(describe_configs.API.key, {"results": [{"configs": [
        {"name": "ssl.key.password", "value": "pw", "is_sensitive": True, "synonyms": [{"name": "x", "value": "pw"}]},
        {"name": "num.partitions", "value": "1", "is_sensitive": False, "synonyms": []}]}]})
    configs = resp["results"][0]["configs"]  # type: ignore[index]
    assert (configs[0]["value"], configs[0]["synonyms"][0]["value"], configs[1]["value"]) == (HIDDEN, HIDDEN, "1")
