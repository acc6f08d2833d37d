"""Delegation tokens (KIP-48) driven by Kafka's own tools against a broker with a SASL_PLAINTEXT
listener (tests/reference/test_security_reference.py's brokers): kafka-delegation-tokens creates,
describes, renews and expires; the Java console producer and consumer authenticate with SCRAM and
the token (tokenauth=true). Outputs are masked (token ids, HMACs, dates) to compare two brokers."""

from __future__ import annotations

import re
from pathlib import Path

from reference import kafka_reference as kr

SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def client_config(path: Path, user: str, password: str, *, token: bool = False,
                  mechanism: str = "SCRAM-SHA-256") -> Path:
    extra = ' tokenauth="true"' if token else ""
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={SCRAM_LOGIN} required username="{user}" password="{password}"{extra};\n')
    return path


def tokens_tool(bootstrap: str, config: Path, *args: str) -> tuple[int, str]:
    r = kr.run_tool("kafka-delegation-tokens", ["--bootstrap-server", bootstrap, "--command-config", str(config),
                                                *args], timeout=120)
    return r.returncode, r.stdout + _error_line(r.stderr)


def _error_line(stderr: str) -> str:
    """The first line naming a Kafka exception (the tool prints the failure and a stack trace)."""
    for line in stderr.splitlines():
        if "Exception" in line and "org.apache.kafka.common.errors" in line:
            return "\nERR " + line.split("org.apache.kafka.common.errors.", 1)[1].split(":")[0]
    return ""


def created(output: str) -> tuple[str, str]:
    """(token id, HMAC) from --create's table."""
    m = re.search(r"tokenId : (\S+)", output)
    assert m, output
    token_id = m.group(1)
    row = next(line for line in output.splitlines() if line.startswith(token_id + " "))
    return token_id, row.split()[1]


def mask(output: str, names: dict[str, str]) -> str:
    for value, name in names.items():
        output = output.replace(value, name)
    return _DATE.sub("<DATE>", output)


def produce_consume(bootstrap: str, config: Path, topic: str, values: list[str]) -> list[str]:
    """What the Java console consumer reads back of what the console producer wrote."""
    r = kr.run_tool("kafka-console-producer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(config)],
                    input="".join(v + "\n" for v in values), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    r = kr.run_tool("kafka-console-consumer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(config), "--from-beginning",
                                               "--max-messages", str(len(values)), "--timeout-ms", "30000"],
                    timeout=120)
    return r.stdout.split()
