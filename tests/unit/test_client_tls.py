"""Client certificates against a local server that requires them (mutual TLS):
from kubeconfig data, and from an exec plugin whose certificate rotates after a 401."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykcm.client import Client, Config, ExecConfig, Unauthorized


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class CA:
    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(_name("test-ca"))
                     .issuer_name(_name("test-ca")).public_key(self.key.public_key())
                     .serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                                    critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cn: str, server: bool = False) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(self.cert.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=1)))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        cert = b.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@pytest.fixture(scope="module")
def ca() -> CA:
    return CA()


@pytest.fixture
async def mtls_server(ca: CA, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """Answers with the CN of the client certificate; 401 for the CNs in `state["reject"]`."""
    cert, key = ca.issue("127.0.0.1", server=True)
    (tmp_path / "s.crt").write_bytes(cert)
    (tmp_path / "s.key").write_bytes(key)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(tmp_path / "s.crt"), str(tmp_path / "s.key"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=ca.pem.decode())
    state: dict[str, Any] = {"reject": set(), "seen": []}

    async def handler(request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        cn = dict(x[0] for x in peer["subject"])["commonName"] if peer else None
        state["seen"].append(cn)
        if cn in state["reject"]:
            return web.json_response({"kind": "Status", "apiVersion": "v1", "code": 401,
                                      "reason": "Unauthorized", "message": "Unauthorized"},
                                     status=401)
        return web.json_response({"kind": "Pod", "metadata": {"name": cn}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state["url"] = f"https://127.0.0.1:{port}"
    yield state
    await runner.cleanup()


async def test_client_certificate_data(ca: CA, mtls_server: dict[str, Any]) -> None:
    cert, key = ca.issue("alice")
    cfg = Config(host=mtls_server["url"], ca_data=ca.pem, client_cert_data=cert,
                 client_key_data=key)
    async with Client(cfg) as c:
        assert (await c.get("pods", "x", "ns"))["metadata"]["name"] == "alice"


PLUGIN = f'''#!{sys.executable}
import json, os
state = os.environ["PLUGIN_STATE"]
n = int(open(state).read()) + 1 if os.path.exists(state) else 1
open(state, "w").write(str(n))
certs = json.load(open(os.environ["PLUGIN_CERTS"]))
pem = certs[min(n, len(certs)) - 1]
print(json.dumps({{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",
                  "status": {{"clientCertificateData": pem[0], "clientKeyData": pem[1]}}}}))
'''


async def test_exec_plugin_certificate_rotates_after_401(ca: CA, mtls_server: dict[str, Any],
                                                         tmp_path: Path) -> None:
    import json

    certs = [[p.decode() for p in ca.issue(cn)] for cn in ("first", "second")]
    (tmp_path / "certs.json").write_text(json.dumps(certs))
    plugin = tmp_path / "plugin"
    plugin.write_text(PLUGIN)
    plugin.chmod(0o755)
    ex = ExecConfig(command=str(plugin), interactive_mode="Never",
                    env=(("PLUGIN_STATE", str(tmp_path / "n")),
                         ("PLUGIN_CERTS", str(tmp_path / "certs.json"))))
    async with Client(Config(host=mtls_server["url"], ca_data=ca.pem, exec_provider=ex)) as c:
        assert (await c.get("pods", "x", "ns"))["metadata"]["name"] == "first"
        mtls_server["reject"].add("first")  # the first certificate is revoked
        # 401 → the plugin runs again → new connections with the new certificate
        assert (await c.get("pods", "x", "ns"))["metadata"]["name"] == "second"
        assert (await c.get("pods", "x", "ns"))["metadata"]["name"] == "second"
        mtls_server["reject"].add("second")
        with pytest.raises(Unauthorized):  # the plugin has nothing newer: the 401 stands
            await c.get("pods", "x", "ns")
    assert mtls_server["seen"] == ["first", "first", "second", "second", "second", "second"]
