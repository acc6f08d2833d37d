"""Certificates for TLS listeners in development and tests: a CA, a server certificate for the
listener's host names and addresses (as subject alternative names, which is what a client's
`ssl.endpoint.identification.algorithm=https` checks), and client certificates for mTLS.

Made with the `cryptography` package, never by shelling out to openssl or keytool. Keys are EC
P-256 (fast to make; every Kafka client accepts them), written as PKCS#8 PEM, the one private-key
form Kafka's PEM keystores read (`ssl.keystore.type=PEM`), and as PKCS12 keystores for configs that
use `ssl.keystore.location`.

    python -m minibroker certs --dir certs --host localhost --host 127.0.0.1 --client alice

writes ca.pem (the truststore for clients and, with mTLS, for the broker), ca.key, server.pem
(certificate chain), server.key, server-keystore.pem (key and chain: a PEM keystore), server.p12, and client-<name>.pem / .key / .p12 per client.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

_DAYS = 825  # below the 825-day cap some TLS stacks put on leaf certificates


@dataclass(frozen=True)
class Issued:
    """One certificate with its private key (and the chain up to, not including, the CA)."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, password: bytes | None = None) -> bytes:
        """PKCS#8 PEM, encrypted when `password` is given (Kafka reads both forms)."""
        enc: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)

    def pkcs12(self, password: bytes, ca: Issued | None = None, alias: bytes = b"minibroker") -> bytes:
        extra = [ca.cert] if ca is not None else None
        return pkcs12.serialize_key_and_certificates(alias, self.key, self.cert, extra,
                                                     serialization.BestAvailableEncryption(password))


def _name(dn: str) -> x509.Name:
    """'CN=alice,OU=eng,O=acme' (most specific first, as Java prints DNs) -> an x509 Name."""
    return x509.Name.from_rfc4514_string(dn)


def make_ca(dn: str = "CN=minibroker test CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(dn)).issuer_name(_name(dn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return Issued(cert, key)


def make_cert(ca: Issued, dn: str, *, hosts: Sequence[str] = (), client: bool = False) -> Issued:
    """A leaf certificate signed by `ca`. `hosts` become DNS or IP subject alternative names."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    builder = (x509.CertificateBuilder().subject_name(_name(dn)).issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=_DAYS))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH] if client else
                                                    [ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
                              critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


@dataclass(frozen=True)
class CertFiles:
    """Paths of what `write_certs` made."""

    dir: Path
    ca: Path  # CA certificate, PEM: the clients' truststore (ssl.ca.location / ssl.truststore.certificates)
    server_chain: Path
    server_key: Path
    server_p12: Path
    server_keystore: Path  # key and chain in one PEM file: Kafka's ssl.keystore.location with type PEM
    password: str  # of the .p12 files

    def client(self, name: str) -> tuple[Path, Path]:
        """(certificate PEM, key PEM) of client `name`."""
        return self.dir / f"client-{name}.pem", self.dir / f"client-{name}.key"


def write_certs(directory: str | Path, hosts: Sequence[str] = ("localhost", "127.0.0.1"),
                clients: Sequence[str] = (), *, password: str = "minibroker",
                client_dn: str = "CN={name},OU=clients,O=minibroker") -> CertFiles:
    """Make a CA, a server certificate for `hosts` and one certificate per client name (DN from
    `client_dn`) in `directory`; private keys are written readable by the owner only."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca = make_ca()
    server = make_cert(ca, f"CN={hosts[0] if hosts else 'localhost'},OU=brokers,O=minibroker", hosts=hosts)
    pw = password.encode()

    def put(name: str, data: bytes, private: bool = False) -> Path:
        path = d / name
        path.write_bytes(data)
        if private:
            path.chmod(0o600)
        return path

    put("ca.pem", ca.cert_pem)
    put("ca.key", ca.key_pem(), private=True)
    chain = put("server.pem", server.cert_pem + ca.cert_pem)
    key = put("server.key", server.key_pem(), private=True)
    p12 = put("server.p12", server.pkcs12(pw, ca), private=True)
    keystore = put("server-keystore.pem", server.key_pem() + server.cert_pem + ca.cert_pem, private=True)
    for name in clients:
        c = make_cert(ca, client_dn.format(name=name), client=True)
        put(f"client-{name}.pem", c.cert_pem + ca.cert_pem)
        put(f"client-{name}.key", c.key_pem(), private=True)
        put(f"client-{name}.p12", c.pkcs12(pw, ca), private=True)
    return CertFiles(d, d / "ca.pem", chain, key, p12, keystore, password)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="minibroker certs",
                                description="Make a CA, a server certificate and client certificates for TLS "
                                            "listeners (development and tests).")
    p.add_argument("--dir", default="certs", help="where to write them (default ./certs)")
    p.add_argument("--host", action="append", default=[],
                   help="a host name or address clients use for the broker (repeatable; default localhost, "
                        "127.0.0.1): the server certificate's subject alternative names")
    p.add_argument("--client", action="append", default=[], help="make a client certificate CN=<name> (repeatable)")
    p.add_argument("--password", default="minibroker", help="password of the .p12 keystores")
    args = p.parse_args(argv)
    files = write_certs(args.dir, args.host or ["localhost", "127.0.0.1"], args.client, password=args.password)
    print(f"wrote {files.dir}/: ca.pem, server.pem, server.key, server.p12"
          + "".join(f", client-{c}.pem/.key/.p12" for c in args.client))
    print("broker (PEM keystore):")
    print("  ssl.keystore.type=PEM")
    print(f"  ssl.keystore.location={files.server_keystore.resolve()}")
    print(f"or PKCS12: ssl.keystore.location={files.server_p12.resolve()} ssl.keystore.password={args.password}")
    print(f"clients: ssl.ca.location={files.ca.resolve()}")
    return 0
