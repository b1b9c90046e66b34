"""The serving certificate: the given files, or a self-signed one made at start, as upstream."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

log = logging.getLogger(__name__)

PAIR_NAME = "kubesched"
"""Base name of the self-signed pair in ``--cert-dir`` (kube-scheduler's is ``kube-scheduler``)."""

VALIDITY = datetime.timedelta(days=365)
"""How long a self-signed certificate is valid (upstream's: one year)."""


def self_signed_pair(host: str) -> tuple[bytes, bytes]:
    """A self-signed certificate and its key (PEM) for ``host``, ``localhost`` and
    ``127.0.0.1``, named ``<host>@<unix time>`` as upstream's."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(now.timestamp())}")])
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    addresses = {ipaddress.ip_address("127.0.0.1")}
    try:
        addresses.add(ipaddress.ip_address(host))
    except ValueError:
        names.append(x509.DNSName(host))
    names += [x509.IPAddress(a) for a in sorted(addresses, key=str)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        # A minute back: a client whose clock is a little behind still accepts it.
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                key_cert_sign=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def public_host(bind_address: str) -> str:
    """The name a self-signed certificate is made for: the bind address, or this host's
    name when it binds every interface."""
    if bind_address in ("", "0.0.0.0", "::"):
        return socket.gethostname()
    return bind_address


def serving_context(
    *,
    bind_address: str,
    cert_file: str | None,
    key_file: str | None,
    cert_dir: str | None,
    client_ca: str | None,
) -> ssl.SSLContext:
    """The TLS context of the secure server.

    With ``cert_file``/``key_file`` those serve; otherwise ``cert_dir``'s
    ``kubesched.crt``/``kubesched.key`` are read, or made self-signed and written there
    first; without ``cert_dir`` the pair is made for this run only (kube-scheduler
    keeps it in memory; Python's ``ssl`` loads files, so it is written to a private
    temporary directory and removed once loaded). ``client_ca`` (PEM text) makes
    clients' certificates signed by it authenticate them: asked for, not required.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
    elif cert_dir:
        folder = Path(cert_dir)
        crt, key = folder / f"{PAIR_NAME}.crt", folder / f"{PAIR_NAME}.key"
        if not (os.access(crt, os.R_OK) and os.access(key, os.R_OK)):
            cert_pem, key_pem = self_signed_pair(public_host(bind_address))
            folder.mkdir(parents=True, exist_ok=True)
            crt.write_bytes(cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(key_pem)
            log.info("generated self-signed cert (%s, %s)", crt, key)
        context.load_cert_chain(str(crt), str(key))
    else:
        cert_pem, key_pem = self_signed_pair(public_host(bind_address))
        with tempfile.TemporaryDirectory(prefix="kubesched-serving-") as folder:
            crt, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
            crt.write_bytes(cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(key_pem)
            context.load_cert_chain(str(crt), str(key))
        log.info("serving with a self-signed certificate made for this run")
    if client_ca:
        context.load_verify_locations(cadata=client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context
