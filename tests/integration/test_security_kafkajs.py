"""kafkajs over TLS: an SSL listener with server verification against the test CA (by address and by
host name; another CA refused) and SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER
(an unsecured JWT from kafkajs's oauthBearerProvider); a wrong password is refused with Kafka's
message. Each scenario produces two records and consumes them back in a group (tests/js/secure_client.js).
The same kafkajs scenarios run against Kafka 4.4 over SASL_PLAINTEXT in
tests/reference/test_security_reference.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from minibroker.security.certs import write_certs
from minibroker.security.oauthbearer import unsecured_jwt
from minibroker.testing import BrokerThread

JS = Path(__file__).resolve().parent.parent / "js"

# `make test` installs kafkajs; a bare pytest run without it skips, but CI (CI=true) must not.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (shutil.which("node") is None or not (JS / "node_modules" / "kafkajs").is_dir()),
    reason="needs node and `npm ci` in tests/js (make test does it)")


def run_kafkajs(scenarios: list[dict[str, Any]], timeout: float = 90) -> dict[str, dict[str, Any]]:
    done = subprocess.run(["node", str(JS / "secure_client.js"), json.dumps(scenarios)], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return {r["name"]: r for r in json.loads(done.stdout.strip().splitlines()[-1])}


def test_kafkajs_over_ssl_and_sasl_ssl(tmp_path: Path) -> None:
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
                 "group.initial.rebalance.delay.ms": 0}
    with BrokerThread(tmp_path / "data", security="SASL_SSL", users={"alice": "alice-secret"},
                      overrides=overrides) as b:
        ca = str(b.ca_file)
        other_ca = str(write_certs(tmp_path / "other", ["127.0.0.1"]).ca)
        ssl, sasl_ssl = b.bootstrap_for("SSL"), b.bootstrap_for("SASL_SSL")
        ssl_port = ssl.rsplit(":", 1)[1]

        def sasl(mechanism: str, password: str = "alice-secret") -> dict[str, str]:
            return {"mechanism": mechanism, "username": "alice", "password": password}

        scenarios = [
            {"name": "ssl-by-address", "brokers": [ssl], "ca": ca},
            {"name": "ssl-by-name", "brokers": [f"localhost:{ssl_port}"], "ca": ca},
            {"name": "ssl-other-ca", "brokers": [ssl], "ca": other_ca},
            {"name": "plain", "brokers": [sasl_ssl], "ca": ca, "sasl": sasl("plain")},
            {"name": "scram256", "brokers": [sasl_ssl], "ca": ca, "sasl": sasl("scram-sha-256")},
            {"name": "scram512", "brokers": [sasl_ssl], "ca": ca, "sasl": sasl("scram-sha-512")},
            {"name": "oauthbearer", "brokers": [sasl_ssl], "ca": ca,
             "sasl": {"mechanism": "oauthbearer", "token": unsecured_jwt("alice")}},
            {"name": "scram256-wrong", "brokers": [sasl_ssl], "ca": ca, "sasl": sasl("scram-sha-256", "nope")},
            {"name": "plain-wrong", "brokers": [sasl_ssl], "ca": ca, "sasl": sasl("plain", "nope")},
        ]
        for s in scenarios:
            s["topic"] = f"js-{s['name']}"
        got = run_kafkajs(scenarios)
    for name in ("ssl-by-address", "ssl-by-name", "plain", "scram256", "scram512", "oauthbearer"):
        assert got[name] == {"name": name, "ok": True, "values": [f"{name}-1", f"{name}-2"], "error": None}, got[name]
    assert got["ssl-other-ca"]["ok"] is False
    assert "certificate" in got["ssl-other-ca"]["error"], got["ssl-other-ca"]
    assert got["scram256-wrong"]["error"] == (
        "KafkaJSSASLAuthenticationError: SASL SCRAM SHA256 authentication failed: Authentication failed during "
        "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"), got["scram256-wrong"]
    assert got["plain-wrong"]["error"] == (
        "KafkaJSSASLAuthenticationError: SASL PLAIN authentication failed: Authentication failed: Invalid username "
        "or password"), got["plain-wrong"]
