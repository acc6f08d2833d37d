"""--host/--port with a config that defines listeners (issue 30, finding 12). The flags replace
`listeners` with one PLAINTEXT listener; a config whose listeners authenticate or encrypt (or are
several) would silently become one open port where everyone reaches the ACLs as ANONYMOUS. Kafka
has no such flags (its listeners are what the config says), so the broker refuses to start and says
why; a single PLAINTEXT listener replaced by another is logged as a warning."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig
from minibroker.config.definitions import ConfigError

SASL = ('listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"\n'
        "sasl.enabled.mechanisms: PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config: 'org.apache.kafka.common.security.plain.PlainLoginModule"
        ' required username="a" password="a" user_a="a";\'\n')


def test_the_broker_refuses_to_start_when_the_flags_would_drop_sasl_listeners(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(SASL)
    cmd = [sys.executable, "-m", "minibroker", "--config", str(tmp_path / "c.yaml"), "--port", "0",
           "--data-dir", str(tmp_path / "data")]
    try:
        r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the broker started with its SASL listener replaced by a PLAINTEXT one")
    assert r.returncode != 0
    assert "would replace the config's listeners" in r.stderr and "SASL_PLAINTEXT://127.0.0.1:0" in r.stderr


@pytest.mark.parametrize("config", [
    SASL,
    'listeners: "SECURE://127.0.0.1:9093"\nlistener.security.protocol.map: "SECURE:SSL"\n',
    'listeners: "A://127.0.0.1:9092,B://127.0.0.1:9093"\nlistener.security.protocol.map: "A:PLAINTEXT,B:PLAINTEXT"\n',
])
def test_flags_never_replace_secured_or_several_listeners(tmp_path: Path, config: str) -> None:
    (tmp_path / "c.yaml").write_text(config)
    for flags in ({"port": 9000}, {"host": "0.0.0.0"}):
        with pytest.raises(ConfigError, match="leave out --host/--port"):
            BrokerConfig.load(tmp_path / "c.yaml", **flags)  # type: ignore[arg-type]
    # --override listeners=... wins over the flags, as before: nothing is dropped unseen
    b = BrokerConfig.load(tmp_path / "c.yaml", ["listener.security.protocol.map=PLAINTEXT:PLAINTEXT",
                                                "listeners=PLAINTEXT://127.0.0.1:7002"], port=7001)
    assert b.listener_port == 7002


def test_a_replaced_plaintext_listener_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "c.yaml").write_text('listeners: "PLAINTEXT://127.0.0.1:7000"\n')
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        b = BrokerConfig.load(tmp_path / "c.yaml", port=7001)
    assert b.listener_port == 7001
    assert "replace the config's listeners PLAINTEXT://127.0.0.1:7000 with PLAINTEXT://127.0.0.1:7001" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        BrokerConfig.load(tmp_path / "c.yaml", port=7000)  # the same listener: nothing replaced
        BrokerConfig.load(None, port=7001)  # no config listeners: the flags are the listeners
    assert "replace" not in caplog.text
