"""TLS on SSL and SASL_SSL listeners: each listener's `ssl.SSLContext` built from Kafka's `ssl.*`
keys, the client certificate's DN mapped to a principal, and `TlsSession`, the sans-IO TLS state of
one connection.

Theory of operation. The connection owns its non-blocking socket (minibroker.network), so TLS
cannot be an asyncio transport wrapped around it. Instead each connection holds an `ssl.SSLObject`
over two memory BIOs: bytes read from the socket go into `receive`, which drives the handshake and
returns the plaintext; plaintext to send goes into `encrypt`, and `outgoing` hands back the TLS
records for the socket. The handshake is therefore as non-blocking as everything else on the loop.

Keystores (Kafka: DefaultSslEngineFactory): `ssl.keystore.type=PEM` with `ssl.keystore.location`
(a file holding the key and the chain) or inline `ssl.keystore.key` + `ssl.keystore.certificate.chain`;
`PKCS12` with `ssl.keystore.location` + `ssl.keystore.password`. OpenSSL loads key material from
files only, so an inline or PKCS12 key is re-encrypted under a random one-time password into a
private temporary file that is removed once loaded: no key is ever on disk in clear.

Principals (Kafka: SslPrincipalMapper, DefaultKafkaPrincipalBuilder): on an SSL listener the
principal is `User:<name>`, the name being the client certificate's DN in RFC 2253 form (as Java's
X500Principal prints it) after `ssl.principal.mapping.rules`; without a certificate it is
User:ANONYMOUS. On SASL_SSL the SASL login sets it.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from minibroker.config import BrokerConfig, ConfigError, Endpoint

log = logging.getLogger("minibroker.security")

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}


# --------------------------------------------------------------------------- principal mapping


class NoMatchingRule(ValueError):
    """No rule of ssl.principal.mapping.rules matched a DN (Kafka fails the connection)."""


@dataclass(frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        assert self.pattern is not None
        if not self.pattern.fullmatch(dn):  # Java's Matcher.matches(): the whole DN
            return None
        name = self.pattern.sub(self.replacement, dn, count=1)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


# One rule: DEFAULT, or RULE:pattern/replacement/[LU] where '/' may be escaped as '\/'
# (SslPrincipalMapper's RULE_PARSER, written anew).
_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|$)")


class PrincipalMapper:
    """`ssl.principal.mapping.rules`: the first rule that matches the DN gives the name."""

    def __init__(self, rules: str = "DEFAULT"):
        self.rules: list[_Rule] = []
        text, pos = rules.strip(), 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigError.invalid("ssl.principal.mapping.rules", rules,
                                          f"Invalid rule at '{text[pos:]}'")
            if m.group(1):
                self.rules.append(_Rule(True))
            else:
                pattern = m.group(2).replace("\\/", "/")
                # Java's $1 group references become Python's \1
                replacement = re.sub(r"\$(\d+)", r"\\\1", m.group(3).replace("\\/", "/"))
                try:
                    self.rules.append(_Rule(False, re.compile(pattern), replacement, m.group(4)))
                except re.error as e:
                    raise ConfigError.invalid("ssl.principal.mapping.rules", rules, f"bad pattern {pattern!r}: {e}") \
                        from None
            pos = m.end()
        if not self.rules:
            self.rules.append(_Rule(True))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            got = rule.apply(dn)
            if got is not None:
                return got
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")


def certificate_dn(der: bytes) -> str:
    """The subject DN of a DER certificate, RFC 2253 style (most specific first: CN=..,OU=..,O=..)."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


# --------------------------------------------------------------------------- per-listener settings


@dataclass(frozen=True)
class TlsSettings:
    listener: str
    context: ssl.SSLContext = field(repr=False)
    client_auth: str
    mapper: PrincipalMapper = field(repr=False)
    sets_principal: bool  # SSL listeners: the certificate names the principal; SASL_SSL: the login does

    @classmethod
    def for_listener(cls, config: BrokerConfig, endpoint: Endpoint) -> TlsSettings:
        name = endpoint.listener_name
        prefix = f"listener.name.{name.lower()}."

        def get(key: str) -> object:
            return config.listener_value(name, key)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _load_keystore(ctx, prefix, get)
        client_auth = str(get("ssl.client.auth") or "none").strip().lower()
        if client_auth not in _CLIENT_AUTH:
            raise ConfigError.invalid(prefix + "ssl.client.auth", client_auth, "String must be one of: none, "
                                      "requested, required")
        ctx.verify_mode = _CLIENT_AUTH[client_auth]
        trusted = _load_truststore(ctx, prefix, get)
        if client_auth != "none" and not trusted:
            raise ConfigError(f"listener {name}: ssl.client.auth={client_auth} needs a truststore "
                              "(ssl.truststore.location or ssl.truststore.certificates) to check client "
                              "certificates against")
        _set_protocols(ctx, prefix, _as_list(get("ssl.enabled.protocols")))
        _set_ciphers(ctx, prefix, _as_list(get("ssl.cipher.suites")))
        mapper = PrincipalMapper(str(get("ssl.principal.mapping.rules") or "DEFAULT"))
        return cls(name, ctx, client_auth, mapper, endpoint.security_protocol == "SSL")

    def session(self) -> TlsSession:
        return TlsSession(self)


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    items: Iterable[object] = value.split(",") if isinstance(value, str) else value  # type: ignore[assignment]
    return [str(v).strip() for v in items if str(v).strip()]


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e.strerror or e}") from None


def _load_pem_chain(ctx: ssl.SSLContext, chain: bytes, key: bytes, key_password: str | None) -> None:
    """Load a PEM key and chain given as bytes: the key re-encrypted under a one-time password in a
    private temporary file (OpenSSL reads files only), removed before returning."""
    try:
        private = serialization.load_pem_private_key(key, key_password.encode() if key_password else None)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"the keystore's private key cannot be read: {e}") from None
    once = secrets.token_hex(16)
    sealed = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.BestAvailableEncryption(once.encode()))
    fd, tmp = tempfile.mkstemp(prefix="minibroker-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(sealed + b"\n" + chain)
        ctx.load_cert_chain(tmp, password=once)
    except ssl.SSLError as e:
        raise ConfigError(f"the keystore's certificate chain does not load: {e}") from None
    finally:
        os.unlink(tmp)


def _load_keystore(ctx: ssl.SSLContext, prefix: str, get: Callable[[str], object]) -> None:
    kind = str(get("ssl.keystore.type") or "JKS").upper()
    location = get("ssl.keystore.location")
    key_password = get("ssl.key.password")
    if kind == "PEM":
        inline_key, inline_chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
        if inline_key or inline_chain:
            if not (inline_key and inline_chain):
                raise ConfigError(f"{prefix}ssl.keystore.key and ssl.keystore.certificate.chain go together")
            _load_pem_chain(ctx, str(inline_chain).encode(), str(inline_key).encode(),
                            str(key_password) if key_password else None)
            return
        if not location:
            raise ConfigError(f"a TLS listener needs a keystore: {prefix}ssl.keystore.location or "
                              "ssl.keystore.key + ssl.keystore.certificate.chain")
        data = _read(str(location), "keystore")
        _load_pem_chain(ctx, data, data, str(key_password) if key_password else None)
        return
    if kind == "PKCS12":
        if not location:
            raise ConfigError(f"a TLS listener needs {prefix}ssl.keystore.location (ssl.keystore.type=PKCS12)")
        password = get("ssl.keystore.password")
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(
                _read(str(location), "keystore"), str(password).encode() if password else None)
        except ValueError as e:
            raise ConfigError(f"keystore {location} cannot be read (wrong ssl.keystore.password?): {e}") from None
        if key is None or cert is None:
            raise ConfigError(f"keystore {location} holds no private key with its certificate")
        chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *(extra or [])])
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        _load_pem_chain(ctx, chain, key_pem, None)
        return
    raise ConfigError(f"{prefix}ssl.keystore.type={kind}: minibroker reads PEM and PKCS12 keystores (convert a "
                      "JKS keystore with keytool -importkeystore -deststoretype PKCS12)")


def _load_truststore(ctx: ssl.SSLContext, prefix: str, get: Callable[[str], object]) -> bool:
    kind = str(get("ssl.truststore.type") or "JKS").upper()
    inline = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    try:
        if inline:
            ctx.load_verify_locations(cadata=str(inline))
            return True
        if not location:
            return False
        if kind == "PKCS12":
            password = get("ssl.truststore.password")
            store = pkcs12.load_pkcs12(_read(str(location), "truststore"),
                                       str(password).encode() if password else None)
            certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
            ctx.load_verify_locations(cadata="".join(c.public_bytes(serialization.Encoding.PEM).decode()
                                                     for c in certs))
            return bool(certs)
        if kind != "PEM":
            raise ConfigError(f"{prefix}ssl.truststore.type={kind}: minibroker reads PEM and PKCS12 truststores")
        ctx.load_verify_locations(cafile=str(location))
        return True
    except (ssl.SSLError, ValueError) as e:
        raise ConfigError(f"{prefix}truststore cannot be read: {e}") from None


def _set_protocols(ctx: ssl.SSLContext, prefix: str, enabled: list[str]) -> None:
    versions = []
    for name in enabled or ["TLSv1.2", "TLSv1.3"]:
        if name not in _VERSIONS:
            raise ConfigError.invalid(prefix + "ssl.enabled.protocols", ",".join(enabled),
                                      f"unknown protocol {name} (TLSv1.2, TLSv1.3)")
        versions.append(_VERSIONS[name])
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)


# IANA (Java) names of the TLS 1.2 suites Kafka deployments list -> OpenSSL's names
_IANA_TO_OPENSSL = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}


def _set_ciphers(ctx: ssl.SSLContext, prefix: str, suites: list[str]) -> None:
    if not suites:
        return
    tls12 = [_IANA_TO_OPENSSL.get(s, s) for s in suites if s not in _TLS13_SUITES]
    if len(tls12) < len(suites):
        log.warning("%sssl.cipher.suites: TLS 1.3 suites cannot be restricted by minibroker (OpenSSL offers its "
                    "own); only the TLS 1.2 ones listed apply", prefix)
    if tls12:
        try:
            ctx.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise ConfigError.invalid(prefix + "ssl.cipher.suites", ",".join(suites),
                                      "none of the suites is known to OpenSSL") from None


# --------------------------------------------------------------------------- one connection


class TlsError(Exception):
    """The TLS session failed (handshake, a bad record, or a certificate that maps to no principal)."""


class TlsSession:
    """One connection's TLS state over memory BIOs (sans-IO: no socket here)."""

    __slots__ = ("_settings", "_in", "_out", "_obj", "established", "principal", "closed_by_peer")

    def __init__(self, settings: TlsSettings):
        self._settings = settings
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = settings.context.wrap_bio(self._in, self._out, server_side=True)
        self.established = False
        self.principal: str | None = None  # set once established, on SSL listeners
        self.closed_by_peer = False

    def receive(self, data: bytes) -> bytes:
        """Feed bytes from the socket; returns the plaintext they complete (maybe b""). Raises
        TlsError when the session fails; `outgoing()` may then hold an alert for the peer."""
        self._in.write(data)
        if not self.established:
            try:
                self._obj.do_handshake()
            except ssl.SSLWantReadError:
                return b""
            except ssl.SSLError as e:
                raise TlsError(f"TLS handshake failed: {e.reason or e}") from None
            self.established = True
            self._on_established()
        chunks = []
        while True:
            try:
                chunk = self._obj.read(256 * 1024)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                chunk = b""
            except ssl.SSLError as e:
                raise TlsError(f"TLS error: {e.reason or e}") from None
            if not chunk:
                # the peer's close_notify (SSLObject.read returns b"" for it): answer with ours,
                # asyncio's SSL transport (aiokafka's) waits 30 s for it before letting go
                self.closed_by_peer = True
                try:
                    self._obj.unwrap()
                except ssl.SSLError:
                    pass
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _on_established(self) -> None:
        if not self._settings.sets_principal:
            return
        der = self._obj.getpeercert(binary_form=True)
        if not der:
            self.principal = "User:ANONYMOUS"
            return
        dn = certificate_dn(der)
        try:
            self.principal = "User:" + self._settings.mapper.name(dn)
        except NoMatchingRule as e:
            raise TlsError(f"client certificate {dn}: {e}") from None

    def encrypt(self, data: bytes | memoryview) -> None:
        self._obj.write(data)

    def outgoing(self) -> bytes:
        """TLS records waiting for the socket (handshake messages, alerts, encrypted data)."""
        return self._out.read()

    @property
    def version(self) -> str | None:
        return self._obj.version()

    @property
    def cipher(self) -> str | None:
        c = self._obj.cipher()
        return c[0] if c else None
