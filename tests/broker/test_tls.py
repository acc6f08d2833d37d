"""minibroker.security.tls without sockets: the principal mapping rules as Kafka's
SslPrincipalMapper applies them, and a TlsSession driven byte by byte by a client SSLObject."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig, ConfigError
from minibroker.security.certs import write_certs
from minibroker.security.tls import NoMatchingRule, PrincipalMapper, TlsError, TlsSettings


def test_mapping_rules() -> None:
    m = PrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L,DEFAULT")
    assert m.name("CN=kafka-app,OU=ServiceUsers,O=Org") == "kafka-app"
    assert m.name("CN=Duke,OU=JavaSoft,O=Sun") == "duke@javasoft"
    assert m.name("CN=x,O=y") == "CN=x,O=y"  # DEFAULT: the DN itself
    assert PrincipalMapper("RULE:^CN=(.*)$/$1/U").name("CN=bob") == "BOB"
    assert PrincipalMapper("RULE:^CN=a\\/b(.*)$/x$1/").name("CN=a/bc") == "xc"  # escaped slash
    with pytest.raises(NoMatchingRule):
        PrincipalMapper("RULE:^CN=(.*)$/$1/").name("OU=nothing")
    with pytest.raises(ConfigError):
        PrincipalMapper("RULE:^CN=(.*)$/$1")


def _settings(certs_dir: Path, **extra: str) -> tuple[TlsSettings, object]:
    files = write_certs(certs_dir, ["127.0.0.1"], ["alice"])
    config = BrokerConfig.from_props({"listeners": "SSL://127.0.0.1:0", "log.dirs": str(certs_dir / "d"),
                                      "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.server_p12),
                                      "ssl.keystore.password": files.password, "ssl.truststore.type": "PEM",
                                      "ssl.truststore.location": str(files.ca), **extra})
    return TlsSettings.for_listener(config, config.listener_endpoints[0]), files


def test_session_byte_by_byte_with_client_certificate(tmp_path: Path) -> None:
    settings, files = _settings(tmp_path, **{"ssl.client.auth": "required",
                                             "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/"})
    ctx = ssl.create_default_context(cafile=str(files.ca))  # type: ignore[attr-defined]
    ctx.load_cert_chain(*files.client("alice"))  # type: ignore[attr-defined]
    cin, cout = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ctx.wrap_bio(cin, cout, server_hostname="127.0.0.1")
    server = settings.session()
    plain = b""
    for _ in range(10):
        try:
            client.do_handshake()
        except ssl.SSLWantReadError:
            pass
        for i in range(len(data := cout.read())):  # the server is fed one byte at a time
            plain += server.receive(data[i:i + 1])
        cin.write(server.outgoing())
        if server.established and client.version():
            break
    assert server.established and server.principal == "User:alice"
    client.write(b"hello kafka")
    for b in cout.read():
        plain += server.receive(bytes([b]))
    assert plain == b"hello kafka"
    server.encrypt(b"answer")
    cin.write(server.outgoing())
    assert client.read(100) == b"answer"


def test_session_refuses_a_client_without_certificate_when_required(tmp_path: Path) -> None:
    settings, files = _settings(tmp_path, **{"ssl.client.auth": "required"})
    ctx = ssl.create_default_context(cafile=str(files.ca))  # type: ignore[attr-defined]
    cin, cout = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ctx.wrap_bio(cin, cout, server_hostname="127.0.0.1")
    server = settings.session()
    with pytest.raises(TlsError, match="handshake failed"):
        for _ in range(10):
            try:
                client.do_handshake()
            except ssl.SSLWantReadError:
                pass
            server.receive(cout.read())
            cin.write(server.outgoing())


def test_bad_keystore_settings_fail_the_start(tmp_path: Path) -> None:
    files = write_certs(tmp_path, ["127.0.0.1"])
    base = {"listeners": "SSL://127.0.0.1:0", "log.dirs": str(tmp_path / "d")}
    for extra, message in (({}, "JKS"),
                           ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.server_p12),
                             "ssl.keystore.password": "wrong"}, "wrong ssl.keystore.password"),
                           ({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.server_keystore),
                             "ssl.client.auth": "required"}, "needs a truststore")):
        config = BrokerConfig.from_props({**base, **extra})
        with pytest.raises(ConfigError, match=message):
            TlsSettings.for_listener(config, config.listener_endpoints[0])
