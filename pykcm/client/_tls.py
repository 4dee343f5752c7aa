"""The SSL context for a Config, without leaving key material where others can read it.

CA data goes in through `load_verify_locations(cadata=...)`, in memory. Python's
ssl can load a client certificate and key only from files, so certificate and
key *data* are written, 0600, into a fresh 0700 directory of our own, loaded,
and removed with the directory at once (before the context is even used).
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile

from pykcm.client.config import Config, ConfigError


def _write_private(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def load_client_cert(ctx: ssl.SSLContext, *, cert_data: bytes | None = None,
                     cert_file: str | None = None, key_data: bytes | None = None,
                     key_file: str | None = None) -> None:
    """Load a client certificate and key given as data and/or files into `ctx`."""
    tmpdir: str | None = None
    try:
        if cert_data is not None or key_data is not None:
            tmpdir = tempfile.mkdtemp(prefix="pykcm-tls-")  # mode 0700
            os.chmod(tmpdir, 0o700)
        if cert_data is not None:
            assert tmpdir is not None
            cert_file = _write_private(tmpdir, "client.crt", cert_data)
        if key_data is not None:
            assert tmpdir is not None
            key_file = _write_private(tmpdir, "client.key", key_data)
        if cert_file is None or key_file is None:
            raise ConfigError("a client certificate needs both the certificate and its key")
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"loading the client certificate and key: {exc}") from None
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def build_ssl_context(config: Config, *, cert_data: bytes | None = None,
                      key_data: bytes | None = None) -> ssl.SSLContext | None:
    """The client SSL context for `config` (None for plain http).

    `cert_data`/`key_data` (an exec plugin's certificate) replace the config's own.
    """
    if not config.is_tls:
        return None
    if config.insecure:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif config.ca_data or config.ca_file:
        # Only the given CA is trusted, as client-go does.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            if config.ca_data:
                ctx.load_verify_locations(cadata=config.ca_data.decode("ascii", "replace"))
            else:
                ctx.load_verify_locations(cafile=config.ca_file)
        except (ssl.SSLError, OSError, ValueError) as exc:
            src = "certificate-authority-data" if config.ca_data else \
                f"certificate-authority {config.ca_file}"
            raise ConfigError(f"loading {src}: {exc}") from None
    else:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_data is not None and key_data is not None:
        load_client_cert(ctx, cert_data=cert_data, key_data=key_data)
    elif config.client_cert_data or config.client_cert_file:
        load_client_cert(ctx, cert_data=config.client_cert_data,
                         cert_file=config.client_cert_file, key_data=config.client_key_data,
                         key_file=config.client_key_file)
    return ctx
