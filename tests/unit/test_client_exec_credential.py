"""Exec credential plugins: a tiny Python script as the plugin, caching, expiry, re-exec."""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from pathlib import Path

import pytest

from pykcm.client import ExecConfig, ExecCredentialProvider, ExecPluginError
from pykcm.client.exec_credential import cluster_info

PLUGIN = r'''#!{python}
import json, os, sys
state = os.environ["PLUGIN_STATE"]
n = 1
if os.path.exists(state + ".count"):
    n = int(open(state + ".count").read()) + 1
open(state + ".count", "w").write(str(n))
open(state + ".info", "w").write(os.environ.get("KUBERNETES_EXEC_INFO", ""))
open(state + ".stdin", "w").write(repr(sys.stdin.read() if sys.stdin else None))
if os.environ.get("PLUGIN_EXIT"):
    sys.exit(int(os.environ["PLUGIN_EXIT"]))
status = {{"token": "tok-%d" % n}}
if os.environ.get("PLUGIN_CERT"):
    status = {{"clientCertificateData": "CERT-%d" % n, "clientKeyData": "KEY-%d" % n}}
if os.environ.get("PLUGIN_EXPIRY"):
    status["expirationTimestamp"] = os.environ["PLUGIN_EXPIRY"]
print(json.dumps({{"kind": "ExecCredential",
                  "apiVersion": os.environ.get("PLUGIN_VERSION", "client.authentication.k8s.io/v1"),
                  "status": status}}))
'''

EXPIRY = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    p = tmp_path / "plugin.py"
    p.write_text(PLUGIN.format(python=sys.executable))
    p.chmod(0o755)
    return p


def config(plugin: Path, tmp_path: Path, **env: str) -> ExecConfig:
    e = {"PLUGIN_STATE": str(tmp_path / "state")}
    e.update(env)
    return ExecConfig(command=str(plugin), args=("--flag",), env=tuple(e.items()),
                      api_version=env.get("PLUGIN_VERSION", "client.authentication.k8s.io/v1"),
                      interactive_mode="Never", install_hint="pip install the-plugin")


def count(tmp_path: Path) -> int:
    return int((tmp_path / "state.count").read_text())


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def test_token_cached_until_expiry(plugin: Path, tmp_path: Path) -> None:
    clock = Clock(EXPIRY.timestamp() - 100)
    prov = ExecCredentialProvider(
        config(plugin, tmp_path, PLUGIN_EXPIRY=EXPIRY.strftime("%Y-%m-%dT%H:%M:%SZ")),
        clock=clock)
    c1 = await prov.get()
    assert c1.token == "tok-1" and c1.expiration == EXPIRY.timestamp()
    clock.t += 99
    assert (await prov.get()).token == "tok-1" and count(tmp_path) == 1
    clock.t += 1  # expired
    assert (await prov.get()).token == "tok-2" and count(tmp_path) == 2


async def test_no_expiry_cached_until_a_401(plugin: Path, tmp_path: Path) -> None:
    prov = ExecCredentialProvider(config(plugin, tmp_path))
    used = await prov.get()
    for _ in range(3):
        assert (await prov.get()) is used
    fresh = await prov.refresh(used)  # the 401 path
    assert fresh.token == "tok-2" and fresh.serial != used.serial
    # a second request that failed with the old credential does not run it again
    assert (await prov.refresh(used)) is fresh and count(tmp_path) == 2


async def test_concurrent_callers_share_one_run(plugin: Path, tmp_path: Path) -> None:
    prov = ExecCredentialProvider(config(plugin, tmp_path))
    creds = await asyncio.gather(*(prov.get() for _ in range(8)))
    assert {c.token for c in creds} == {"tok-1"} and prov.exec_count == 1


async def test_exec_info_and_environment(plugin: Path, tmp_path: Path) -> None:
    cfg = ExecConfig(command=str(plugin), env=(("PLUGIN_STATE", str(tmp_path / "state")),),
                     interactive_mode="IfAvailable", provide_cluster_info=True,
                     cluster_config={"audience": "x"})
    cluster = cluster_info("https://k:6443", ca_data=b"PEM", tls_server_name="kubernetes")
    prov = ExecCredentialProvider(cfg, cluster=cluster, stdin_is_tty=lambda: False)
    await prov.get()
    info = json.loads((tmp_path / "state.info").read_text())
    assert info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {
        "server": "https://k:6443", "tls-server-name": "kubernetes",
        "certificate-authority-data": "UEVN", "config": {"audience": "x"}}
    assert (tmp_path / "state.stdin").read_text() == "''"  # no stdin: /dev/null


async def test_interactive_never_needs_no_tty_and_always_does(plugin: Path,
                                                              tmp_path: Path) -> None:
    never = ExecCredentialProvider(config(plugin, tmp_path), stdin_is_tty=lambda: True)
    assert (await never.get()).token == "tok-1"
    assert json.loads((tmp_path / "state.info").read_text())["spec"]["interactive"] is False
    always = ExecCredentialProvider(
        ExecConfig(command=str(plugin), interactive_mode="Always"), stdin_is_tty=lambda: False)
    with pytest.raises(ExecPluginError, match="not a terminal"):
        await always.get()


async def test_v1beta1_and_certificates(plugin: Path, tmp_path: Path) -> None:
    prov = ExecCredentialProvider(config(plugin, tmp_path, PLUGIN_CERT="1",
                                         PLUGIN_VERSION="client.authentication.k8s.io/v1beta1"))
    cred = await prov.get()
    assert cred.token is None and cred.has_certificate
    assert (cred.client_certificate_data, cred.client_key_data) == (b"CERT-1", b"KEY-1")


async def test_plugin_failures(plugin: Path, tmp_path: Path) -> None:
    mismatched = ExecConfig(command=str(plugin), interactive_mode="Never", env=(
        ("PLUGIN_STATE", str(tmp_path / "state")),
        ("PLUGIN_VERSION", "client.authentication.k8s.io/v1beta1")))
    with pytest.raises(ExecPluginError, match="configured to use API version client.authentica"
                                              "tion.k8s.io/v1, plugin returned version"):
        await ExecCredentialProvider(mismatched).get()
    with pytest.raises(ExecPluginError, match="failed with exit code 3"):
        await ExecCredentialProvider(config(plugin, tmp_path, PLUGIN_EXIT="3")).get()
    missing = ExecConfig(command=str(tmp_path / "nope"), interactive_mode="Never",
                         install_hint="pip install the-plugin")
    with pytest.raises(ExecPluginError, match="not found\n\npip install the-plugin"):
        await ExecCredentialProvider(missing).get()
    with pytest.raises(ExecPluginError, match="apiVersion"):
        ExecConfig(command="x", api_version="client.authentication.k8s.io/v1alpha1")


@pytest.mark.parametrize("stdout,pattern", [
    (b"nope", "decoding stdout"),
    (b'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}',
     "didn't return a status"),
    (b'{"apiVersion": "client.authentication.k8s.io/v1", "status": {}}',
     "didn't return a token or cert/key pair"),
    (b'{"apiVersion": "client.authentication.k8s.io/v1", "status": {"clientKeyData": "k"}}',
     "only certificate or key"),
    ((b'{"apiVersion": "client.authentication.k8s.io/v1", "status": {"token": "t", '
      b'"expirationTimestamp": "soon"}}'),
     "expirationTimestamp"),
])
def test_bad_plugin_output(stdout: bytes, pattern: str) -> None:
    from pykcm.client.exec_credential import parse_exec_credential

    with pytest.raises(ExecPluginError, match=pattern):
        parse_exec_credential(stdout, "client.authentication.k8s.io/v1")
