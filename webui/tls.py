"""HTTPS for ``--listen``: the host's own certificate, or a self-signed one made once and kept.

The self-signed certificate and its key live in ``<data>/tls/`` (key readable by this user only) and are
reused on every start, so colleagues check its SHA-256 fingerprint once (the browser shows it) and the
warning they accept stays the same.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CERT_NAME, KEY_NAME = "facestation-cert.pem", "facestation-key.pem"
VALID_DAYS = 825  # the longest browsers accept for a server certificate


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) in ``folder``, made now if either is missing."""
    cert, key = folder / CERT_NAME, folder / KEY_NAME
    if cert.is_file() and key.is_file():
        return cert, key
    folder.mkdir(parents=True, exist_ok=True)
    private = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"facestation on {host}")])
    now = datetime.datetime.now(datetime.UTC)
    alt = x509.SubjectAlternativeName([x509.DNSName(host), x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(private.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                   .add_extension(alt, critical=False)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .sign(private, hashes.SHA256()))
    pem_key = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem_key)
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert, key


def fingerprint(cert: Path) -> str:
    """The certificate's SHA-256 fingerprint as browsers show it: ``AB:CD:…``."""
    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    return ":".join(f"{b:02X}" for b in loaded.fingerprint(hashes.SHA256()))
