"""Delegation tokens (KIP-48) driven by Kafka's own tools against a broker with a SASL_PLAINTEXT
listener (tests/reference/test_security_reference.py's brokers): kafka-delegation-tokens creates,
describes, renews and expires; the Java console producer and kafka-python authenticate with SCRAM
and the token (tokenauth=true); raw requests (our codec) give each broker's error codes. Outputs are masked (token ids, HMACs, dates) to compare two brokers."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from minibroker_protocol.apis import (
    create_delegation_token,
    describe_delegation_token,
    expire_delegation_token,
    renew_delegation_token,
    sasl_authenticate,
    sasl_handshake,
)
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient
from tests.reference.helpers import sasl_plain_client

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
    """The Kafka exception the tool failed with (it prints it with a stack trace), by class name."""
    m = re.search(r"org\.apache\.kafka\.common\.errors\.(\w+)", stderr)
    return "\nERR " + m.group(1) if m else ""


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


def plain_config(path: Path, user: str, password: str) -> Path:
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{user}" password="{password}";\n')
    return path


_lock = threading.Lock()
_in_use = 0


@contextmanager
def token_scram() -> Iterator[None]:
    """kafka-python's SCRAM-SHA-512 sending `tokenauth=true` in its first message, as Kafka's Java
    client does for a token (ScramLoginModule tokenauth="true"), while any caller is inside."""
    global _in_use
    from kafka.net import sasl as kp_sasl
    from kafka.net.sasl.scram import SaslMechanismScram

    class TokenScram(SaslMechanismScram):
        def __init__(self, **config: Any) -> None:
            super().__init__(**config)
            client = self._scram_client

            def first_message() -> bytes:
                bare = b"n=" + client.user + b",r=" + client.nonce + b",tokenauth=true"
                client.auth_message += bare
                return b"n,," + bare
            client.first_message = first_message

    with _lock:
        if _in_use == 0:
            kp_sasl.register_sasl_mechanism("SCRAM-SHA-512", TokenScram, overwrite=True)
        _in_use += 1
    try:
        yield
    finally:
        with _lock:
            _in_use -= 1
            if _in_use == 0:
                kp_sasl.register_sasl_mechanism("SCRAM-SHA-512", SaslMechanismScram, overwrite=True)


def token_login(sasl_bootstrap: str, token_id: str, mac: bytes) -> RawClient:
    """A raw connection authenticated by SCRAM-SHA-256 with the token (kafka-python's ScramClient
    for the proofs)."""
    from kafka.net.sasl.scram import ScramClient

    c = RawClient(sasl_bootstrap, client_id="dt-token")
    assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="SCRAM-SHA-256")).error_code == 0
    sc = ScramClient(token_id, base64.b64encode(mac).decode(), "SCRAM-SHA-256")
    bare = b"n=" + token_id.encode() + b",r=" + sc.nonce + b",tokenauth=true"
    sc.auth_message += bare
    r = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=b"n,," + bare))
    assert r.error_code == 0, r
    sc.process_server_first_message(r.auth_bytes)
    r = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=sc.final_message()))
    assert r.error_code == 0, r
    sc.process_server_final_message(r.auth_bytes)
    return c


def token_clients(sasl_bootstrap: str, config: Path, token_id: str, hmac_b64: str) -> list[str]:
    """The Java console producer writes two records logged in with the token; kafka-python, logged
    in with it too, reads them back."""
    from kafka import KafkaConsumer

    client_config(config, token_id, hmac_b64, token=True, mechanism="SCRAM-SHA-512")
    r = kr.run_tool("kafka-console-producer", ["--bootstrap-server", sasl_bootstrap, "--topic", "token-topic",
                                               "--command-config", str(config)], input="t1\nt2\n", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    with token_scram():
        c = KafkaConsumer("token-topic", bootstrap_servers=sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=token_id,
                          sasl_plain_password=hmac_b64, auto_offset_reset="earliest", consumer_timeout_ms=20000)
        got = []
        for m in c:
            got.append(m.value.decode())
            if len(got) == 2:
                break
        c.close()
    return got


def _create(c: RawClient, renewer_type: str = "User", owner: str | None = None) -> tuple[Any, ...]:
    R = create_delegation_token.REQUEST
    r = c.call(create_delegation_token.API, 3, R(
        owner_principal_type="User" if owner else None, owner_principal_name=owner, max_lifetime_ms=-1,
        renewers=[R.CreatableRenewers(principal_type=renewer_type, principal_name="x")]))
    return (r.error_code, r.principal_name, r.token_requester_principal_name, r.issue_timestamp_ms == -1,
            bool(r.token_id))


def raw_outcomes(plain: str, sasl: str, token_id: str, hmac_b64: str) -> dict[str, Any]:
    """Error codes (and what comes with them) of raw requests in the cases Kafka refuses."""
    mac = base64.b64decode(hmac_b64)
    out: dict[str, Any] = {}

    def renew(c: RawClient, m: bytes, period: int = -1) -> int:
        return c.call(renew_delegation_token.API, 2, renew_delegation_token.REQUEST(
            hmac=m, renew_period_ms=period)).error_code

    def expire(c: RawClient, m: bytes, period: int) -> int:
        return c.call(expire_delegation_token.API, 2, expire_delegation_token.REQUEST(
            hmac=m, expiry_time_period_ms=period)).error_code

    with RawClient(plain) as c:
        out["create over plaintext"] = _create(c)
        out["describe over plaintext"] = c.call(describe_delegation_token.API, 3, describe_delegation_token.REQUEST(
            owners=None)).error_code
        out["renew over plaintext"] = renew(c, mac)
    with sasl_plain_client(sasl, "alice", "alice-secret") as c:
        out["renewer not a user"] = _create(c, "Group")
        out["for another owner"] = _create(c, owner="someone")
        out["renew unknown"] = renew(c, b"nope")
        out["renew by another"] = renew(c, mac)
        out["expire by another"] = expire(c, mac, 1000)
        out["describe none"] = c.call(describe_delegation_token.API, 3, describe_delegation_token.REQUEST(
            owners=[])).tokens
    with sasl_plain_client(sasl, "admin", "admin-secret") as c:  # a renewer
        out["renew by a renewer"] = renew(c, mac, 60_000)
    with token_login(sasl, token_id, mac) as c:
        out["create with a token"] = _create(c)
        out["renew with a token"] = renew(c, mac)
    return out

