"""SASL/OAUTHBEARER outcomes for tests/reference/test_security_reference.py, which runs them against
Apache Kafka 4.4 and minibroker configured with the same keys: a SASL_PLAINTEXT listener serving
OAUTHBEARER with Kafka's unsecured JWS validator, which requires the scope `kafka`
(`unsecuredValidatorRequiredScope`, JAAS below). The same outcomes on both:

- confluent-kafka with librdkafka's own unsecured JWT (`enable.sasl.oauthbearer.unsecure.jwt`,
  `sasl.oauthbearer.config=principal=alice scope=kafka`), kafka-python and aiokafka with a token
  provider returning an unsecured JWT, kafkajs with `oauthBearerProvider`, and the Java client
  (Kafka's console producer and consumer with `OAuthBearerLoginModule` and
  `unsecuredLoginStringClaim_sub`): each produces and consumes;
- an expired token, a token without the required scope and a malformed token are refused with the
  same error (RFC 7628's JSON, as SASL_AUTHENTICATION_FAILED's message);
- on the wire: the error challenge and the failure after the client's 0x01, the session lifetime a
  token's expiry sets (KIP-368), an authorization id other than the token's principal, a message
  that is not OAUTHBEARER, a JWS header without `alg` and a scheme other than Bearer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from minibroker.security.oauthbearer import unsecured_jwt
from minibroker_protocol.apis import sasl_authenticate, sasl_handshake
from reference import kafka_reference as kr
from tests.integration.helpers import RawClient

JS = Path(__file__).resolve().parent.parent / "js"
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JAAS = (f'{MODULE} required unsecuredLoginStringClaim_sub="admin" unsecuredLoginStringClaim_scope="kafka" '
        'unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";')


def short(e: KafkaError) -> str:
    return e.str().split(" (after")[0].split(": ", 1)[-1]


def confluent(bootstrap: str, topic: str, token: str | None) -> tuple[bool, str]:
    """(a record produced and consumed back, first error) with librdkafka's unsecured JWT (token
    None) or an oauth_cb returning `token`."""
    errors: list[KafkaError] = []
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                            "sasl.mechanism": "OAUTHBEARER", "error_cb": errors.append}
    if token is None:
        conf.update({"enable.sasl.oauthbearer.unsecure.jwt": True,
                     "sasl.oauthbearer.config": "principal=alice scope=kafka"})
    else:
        conf["oauth_cb"] = lambda _config: (token, time.time() + 3600)
    p = Producer({**conf, "message.timeout.ms": 6000})
    p.produce(topic, b"oauth")
    deadline = time.monotonic() + 10
    while p.flush(0.1) and not errors and time.monotonic() < deadline:
        pass
    if errors or len(p):
        return False, short(errors[0]) if errors else "timeout"
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = None
    while got is None and time.monotonic() < deadline + 10:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got = m.value()
    c.close()
    return got == b"oauth", ""


def kafka_python(bootstrap: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Tokens(AbstractTokenProvider):
        def token(self) -> str:
            return unsecured_jwt("alice", scope=["kafka"])

    conf = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Tokens()}
    p = KafkaProducer(**conf)
    p.send(topic, b"kp").get(timeout=10)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **conf)
    try:
        return [next(iter(c)).value]
    finally:
        c.close()


def aiokafka(bootstrap: str, topic: str) -> list[bytes | None]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider

    class Tokens(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_jwt("alice", scope=["kafka"])

    async def run() -> list[bytes | None]:
        conf = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Tokens()}
        p = AIOKafkaProducer(**conf)
        await p.start()
        try:
            await p.send_and_wait(topic, b"aio")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
        await c.start()
        try:
            return [(await asyncio.wait_for(c.getone(), 10)).value]
        finally:
            await c.stop()

    return asyncio.run(run())


def java(bootstrap: str, topic: str, props_file: Path) -> list[str]:
    props_file.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                          f'sasl.jaas.config={MODULE} required unsecuredLoginStringClaim_sub="alice" '
                          'unsecuredLoginListClaim_scope=",kafka";\n')
    r = kr.run_tool("kafka-console-producer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(props_file)], input="j1\nj2\n")
    assert r.returncode == 0, r.stderr[-2000:]
    r = kr.run_tool("kafka-console-consumer", ["--bootstrap-server", bootstrap, "--topic", topic,
                                               "--command-config", str(props_file), "--from-beginning",
                                               "--max-messages", "2", "--timeout-ms", "20000"])
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def kafkajs(bootstrap: str, name: str) -> dict[str, Any]:
    if not os.environ.get("CI") and (shutil.which("node") is None or not (JS / "node_modules" / "kafkajs").is_dir()):
        return {"skipped": "needs node and `npm ci` in tests/js"}
    scenarios = [{"name": f"ok-{name}", "brokers": [bootstrap], "topic": f"oauth-js-{name}",
                  "sasl": {"mechanism": "oauthbearer", "token": unsecured_jwt("alice", scope=["kafka"])}},
                 {"name": f"expired-{name}", "brokers": [bootstrap], "topic": f"oauth-js-x-{name}",
                  "sasl": {"mechanism": "oauthbearer",
                           "token": unsecured_jwt("alice", scope=["kafka"], now=time.time() - 7200)}}]
    done = subprocess.run(["node", str(JS / "secure_client.js"), json.dumps(scenarios)], capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return {r["name"].split("-")[0]: (r["ok"], r["values"] and len(r["values"]), r["error"])
            for r in json.loads(done.stdout.strip().splitlines()[-1])}


def b64(obj: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def wire(bootstrap: str, messages: list[bytes]) -> list[Any]:
    """SaslHandshake v1 OAUTHBEARER, then one SaslAuthenticate v2 per message: each answer as
    (error code, message, auth bytes, session lifetime rounded down to 10 s), or "closed"."""
    out: list[Any] = []
    with RawClient(bootstrap) as c:
        assert c.call(sasl_handshake.API, 1, sasl_handshake.REQUEST(mechanism="OAUTHBEARER")).error_code == 0
        for m in messages:
            try:
                r = c.call(sasl_authenticate.API, 2, sasl_authenticate.REQUEST(auth_bytes=m))
            except (EOFError, ConnectionResetError):
                out.append("closed")
                break
            out.append((r.error_code, r.error_message, bytes(r.auth_bytes), r.session_lifetime_ms // 10000))
    return out


def first(token: str, authzid: str = "", scheme: str = "Bearer", extensions: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth={scheme} {token}{extensions}\x01\x01".encode()


def outcomes(bootstrap: str, name: str, tmp_path: Path) -> dict[str, Any]:
    """Every scenario against one broker's SASL_PLAINTEXT listener."""
    now = time.time()
    expired = unsecured_jwt("alice", scope=["kafka"], now=now - 7200)
    no_scope = unsecured_jwt("alice", scope=["other"])
    no_alg = f"{b64({'typ': 'JWT'})}.{b64({'sub': 'alice', 'exp': int(now) + 600, 'scope': 'kafka'})}."
    return {
        "confluent unsecure jwt": confluent(bootstrap, f"oauth-cf-{name}", None),
        "confluent expired": confluent(bootstrap, f"oauth-cf-exp-{name}", expired),
        "confluent no scope": confluent(bootstrap, f"oauth-cf-scope-{name}", no_scope),
        "confluent malformed": confluent(bootstrap, f"oauth-cf-bad-{name}", "not-a-jwt"),
        "kafka-python": kafka_python(bootstrap, f"oauth-kp-{name}"),
        "aiokafka": aiokafka(bootstrap, f"oauth-aio-{name}"),
        "kafkajs": kafkajs(bootstrap, name),
        "wire ok, lifetime from exp": wire(bootstrap, [first(unsecured_jwt("alice", 60, scope="kafka"),
                                                             extensions="\x01traceId=abc")]),
        "wire expired": wire(bootstrap, [first(expired), b"\x01"]),
        "wire authzid": wire(bootstrap, [first(unsecured_jwt("alice", scope="kafka"), authzid="bob")]),
        "wire not oauthbearer": wire(bootstrap, [b"n,,auth=Bearer x"]),
        "wire no alg": wire(bootstrap, [first(no_alg)]),
        "wire basic scheme": wire(bootstrap, [first("abc", scheme="Basic")]),
        "java": java(bootstrap, f"oauth-java-{name}", tmp_path / f"java-{name}.properties"),
    }
