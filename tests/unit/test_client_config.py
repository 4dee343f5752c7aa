"""Config loading: kubeconfig merging and contexts, in-cluster, token files, TLS material."""

from __future__ import annotations

import base64
import datetime
import os
import re
import ssl
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykcm.client import (
    Config,
    ConfigError,
    default_user_agent,
    load_incluster_config,
    load_kube_config,
)
from pykcm.client._auth import Authenticator, FileTokenSource
from pykcm.client._tls import build_ssl_context


def self_signed(cn: str = "test") -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def kubeconfig(clusters: dict[str, dict[str, Any]], users: dict[str, dict[str, Any]],
               contexts: dict[str, dict[str, Any]], current: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": c} for n, c in contexts.items()],
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_single_file_with_token_ca_and_namespace(tmp_path: Path) -> None:
    ca, _ = self_signed()
    p = write(tmp_path / "config", kubeconfig(
        {"c": {"server": "https://10.0.0.1:6443", "certificate-authority-data": b64(ca),
               "tls-server-name": "kubernetes"}},
        {"u": {"token": "secret-token"}},
        {"ctx": {"cluster": "c", "user": "u", "namespace": "team-a"}}, current="ctx"))
    cfg = load_kube_config(p)
    assert cfg.host == "https://10.0.0.1:6443"
    assert cfg.ca_data == ca and cfg.tls_server_name == "kubernetes"
    assert cfg.token == "secret-token" and cfg.namespace == "team-a"
    assert cfg.qps == 0  # unlimited by default


def test_kubeconfig_env_merges_first_file_wins(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a = write(tmp_path / "a" / "config", kubeconfig(
        {"shared": {"server": "https://from-a"}},
        {"alice": {"token": "token-a"}},
        {"ctx-a": {"cluster": "shared", "user": "alice"}}))          # no current-context
    (tmp_path / "b" / "certs").mkdir(parents=True)
    ca, _ = self_signed()
    (tmp_path / "b" / "certs" / "ca.crt").write_bytes(ca)
    (tmp_path / "b" / "tok").write_text("token-from-file\n")
    b = write(tmp_path / "b" / "config", kubeconfig(
        {"shared": {"server": "https://from-b"},
         "other": {"server": "https://other", "certificate-authority": "certs/ca.crt"}},
        {"alice": {"token": "token-b"}, "bob": {"tokenFile": "tok"}},
        {"ctx-a": {"cluster": "other", "user": "bob"},
         "ctx-b": {"cluster": "other", "user": "bob", "namespace": "nb"}},
        current="ctx-b"))
    c = write(tmp_path / "c" / "config", kubeconfig({}, {}, {}, current="ctx-a"))
    missing = str(tmp_path / "nope" / "config")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([a, missing, b, c]))
    cfg = load_kube_config()
    # current-context from the first file that sets it (b), not c
    assert cfg.namespace == "nb" and cfg.host == "https://other"
    # relative paths resolved against b's directory
    assert cfg.ca_file == str(tmp_path / "b" / "certs" / "ca.crt")
    assert cfg.token_file == str(tmp_path / "b" / "tok")
    # ctx-a, cluster "shared" and user "alice" come from a (first definition wins)
    cfg = load_kube_config(context="ctx-a")
    assert cfg.host == "https://from-a" and cfg.token == "token-a"


def test_explicit_paths_list_and_missing_explicit_file(tmp_path: Path) -> None:
    a = write(tmp_path / "a", kubeconfig({"c": {"server": "http://x:8080"}}, {},
                                         {"ctx": {"cluster": "c"}}, current="ctx"))
    cfg = load_kube_config([a])
    assert cfg.host == "http://x:8080" and cfg.token is None
    with pytest.raises(ConfigError, match="reading kubeconfig"):
        load_kube_config([a, str(tmp_path / "missing")])


@pytest.mark.parametrize("doc,context,pattern", [
    (kubeconfig({"c": {"server": "https://x"}}, {}, {"ctx": {"cluster": "c"}}), None,
     "no context chosen"),
    (kubeconfig({"c": {"server": "https://x"}}, {}, {"ctx": {"cluster": "c"}}, "ctx"), "nope",
     "context 'nope' not found"),
    (kubeconfig({}, {}, {"ctx": {"cluster": "c"}}, "ctx"), None,
     "cluster 'c' .* not found"),
    (kubeconfig({"c": {}}, {}, {"ctx": {"cluster": "c"}}, "ctx"), None, "has no server"),
    (kubeconfig({"c": {"server": "https://x"}}, {}, {"ctx": {"cluster": "c", "user": "u"}},
                "ctx"), None, "user 'u' .* not found"),
    (kubeconfig({"c": {"server": "https://x", "insecure-skip-tls-verify": True,
                       "certificate-authority-data": b64(b"x")}}, {},
                {"ctx": {"cluster": "c"}}, "ctx"), None, "insecure flag is not allowed"),
    (kubeconfig({"c": {"server": "https://x"}}, {"u": {"client-certificate-data": b64(b"x")}},
                {"ctx": {"cluster": "c", "user": "u"}}, "ctx"), None, "without its key"),
    (kubeconfig({"c": {"server": "https://x"}}, {"u": {"tokenFile": "/nonexistent/tok"}},
                {"ctx": {"cluster": "c", "user": "u"}}, "ctx"), None, "tokenFile"),
])
def test_clear_errors(tmp_path: Path, doc: dict[str, Any], context: str | None,
                      pattern: str) -> None:
    p = write(tmp_path / "config", doc)
    with pytest.raises(ConfigError, match=pattern):
        load_kube_config(p, context)


@pytest.mark.parametrize("provider", ["oidc", "gcp", "azure"])
def test_auth_provider_is_refused_by_name(tmp_path: Path, provider: str) -> None:
    p = write(tmp_path / "config", kubeconfig(
        {"c": {"server": "https://x"}},
        {"u": {"auth-provider": {"name": provider, "config": {"idp-issuer-url": "https://i"}}}},
        {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    with pytest.raises(ConfigError) as info:
        load_kube_config(p)
    msg = str(info.value)
    assert "auth-provider" in msg and repr(provider) in msg and "exec" in msg


def test_exec_stanza(tmp_path: Path) -> None:
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "bin/plugin",
                     "args": ["get-token", "--x"], "env": [{"name": "A", "value": "1"}],
                     "interactiveMode": "Never", "provideClusterInfo": True,
                     "installHint": "install it"}}
    cluster = {"server": "https://x", "extensions": [
        {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "aud"}}]}
    p = write(tmp_path / "config", kubeconfig({"c": cluster}, {"u": user},
                                              {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    ex = load_kube_config(p).exec_provider
    assert ex is not None
    assert ex.command == str(tmp_path / "bin" / "plugin")  # has a separator: relative to file
    assert ex.args == ("get-token", "--x") and ex.env == (("A", "1"),)
    assert ex.interactive_mode == "Never" and ex.provide_cluster_info
    assert ex.cluster_config == {"audience": "aud"} and ex.install_hint == "install it"
    # a bare command name is looked up in PATH, not resolved
    user["exec"]["command"] = "kubelogin"
    p = write(tmp_path / "config", kubeconfig({"c": cluster}, {"u": user},
                                              {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    assert load_kube_config(p).exec_provider.command == "kubelogin"  # type: ignore[union-attr]


@pytest.mark.parametrize("exec_doc,pattern", [
    ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"},
     "v1alpha1' is not supported"),
    ({"apiVersion": "client.authentication.k8s.io/v1", "command": "x"},
     "interactiveMode must be specified"),
    ({"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "x",
      "interactiveMode": "Sometimes"}, "invalid interactiveMode"),
    ({"apiVersion": "client.authentication.k8s.io/v1beta1"}, "no command"),
])
def test_exec_stanza_errors(tmp_path: Path, exec_doc: dict[str, Any], pattern: str) -> None:
    p = write(tmp_path / "config", kubeconfig(
        {"c": {"server": "https://x"}}, {"u": {"exec": exec_doc}},
        {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    with pytest.raises(ConfigError, match=pattern):
        load_kube_config(p)


def test_v1beta1_exec_defaults_to_if_available(tmp_path: Path) -> None:
    p = write(tmp_path / "config", kubeconfig(
        {"c": {"server": "https://x"}},
        {"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "x"}}},
        {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    ex = load_kube_config(p).exec_provider
    assert ex is not None and ex.interactive_mode == "IfAvailable"


def test_in_cluster(tmp_path: Path) -> None:
    ca, _ = self_signed()
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(ca)
    (tmp_path / "namespace").write_text("kube-system")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = load_incluster_config(service_account_dir=str(tmp_path), environ=env)
    assert cfg.host == "https://10.96.0.1:443"
    assert cfg.token == "sa-token" and cfg.token_file == str(tmp_path / "token")
    assert cfg.ca_file == str(tmp_path / "ca.crt") and cfg.namespace == "kube-system"
    env6 = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load_incluster_config(service_account_dir=str(tmp_path),
                                 environ=env6).host == "https://[fd00::1]:443"
    (tmp_path / "namespace").unlink()
    assert load_incluster_config(service_account_dir=str(tmp_path),
                                 environ=env).namespace == "default"


def test_in_cluster_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        load_incluster_config(service_account_dir=str(tmp_path), environ={})
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match="service account token"):
        load_incluster_config(service_account_dir=str(tmp_path), environ=env)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_token_file_is_reread_at_most_once_a_minute_or_on_reset(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    clock = Clock()
    src = FileTokenSource(str(path), clock=clock)
    assert src.token() == "one"
    path.write_text("two")
    clock.t += 30
    assert src.token() == "one" and src.read_count == 1  # cached
    clock.t += 31
    assert src.token() == "two" and src.read_count == 2  # a minute passed
    path.write_text("three")
    src.reset()  # what a 401 does
    assert src.token() == "three"
    path.unlink()  # being rotated: keep the last good one
    clock.t += 61
    assert src.token() == "three"


def test_token_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  \n")
    with pytest.raises(ConfigError, match="empty token"):
        FileTokenSource(str(path)).token()


async def test_authenticator_precedence(tmp_path: Path) -> None:
    tok = tmp_path / "token"
    tok.write_text("from-file")
    a = Authenticator(Config(host="https://x", token="static", token_file=str(tok)))
    assert (await a.credential())[0] == "Bearer from-file"  # the file wins, as client-go
    a = Authenticator(Config(host="https://x", token="static"))
    assert (await a.credential())[0] == "Bearer static" and not a.refreshable
    a = Authenticator(Config(host="https://x", username="u", password="p"))
    assert (await a.credential())[0] == "Basic " + b64(b"u:p")
    assert (await Authenticator(Config(host="https://x")).credential())[0] is None


def test_config_normalization_and_checks() -> None:
    assert Config(host="example.com:6443/").host == "https://example.com:6443"
    assert not Config(host="http://a").is_tls
    with pytest.raises(ConfigError, match="scheme"):
        Config(host="ftp://a")
    with pytest.raises(ConfigError, match="proxy"):
        Config(host="https://a", proxy_url="socks5://p:1080")
    with pytest.raises(ConfigError, match="key"):
        Config(host="https://a", client_key_data=b"k")


def test_user_agent_format() -> None:
    ua = default_user_agent("kube-controller-manager")
    assert re.fullmatch(r"pykcm/\d+\.\d+\.\d+\S* \([a-z]+/[a-z0-9_]+\) kube-controller-manager",
                        ua), ua


def test_ca_data_is_loaded_in_memory_and_bad_ca_fails() -> None:
    ca, _ = self_signed()
    ctx = build_ssl_context(Config(host="https://x", ca_data=ca))
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert len(ctx.get_ca_certs()) == 1  # only the given CA, not the system's
    with pytest.raises(ConfigError, match="certificate-authority-data"):
        build_ssl_context(Config(host="https://x", ca_data=b"-----BEGIN CERTIFICATE-----\nxx"))
    assert build_ssl_context(Config(host="http://x")) is None
    ctx = build_ssl_context(Config(host="https://x", insecure=True))
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE


def test_client_key_data_goes_through_private_files_removed_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed("client")
    seen: list[tuple[int, int, int, str]] = []
    original = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: Any, keyfile: Any = None, password: Any = None
            ) -> None:
        d = os.path.dirname(certfile)
        seen.append((stat.S_IMODE(os.stat(d).st_mode), stat.S_IMODE(os.stat(certfile).st_mode),
                     stat.S_IMODE(os.stat(keyfile).st_mode), d))
        original(self, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    ctx = build_ssl_context(Config(host="https://x", insecure=True, client_cert_data=cert,
                                   client_key_data=key))
    assert ctx is not None
    assert len(seen) == 1
    dir_mode, cert_mode, key_mode, d = seen[0]
    assert (dir_mode, cert_mode, key_mode) == (0o700, 0o600, 0o600)
    assert not os.path.exists(d)  # removed as soon as loaded
    with pytest.raises(ConfigError, match="client certificate"):
        build_ssl_context(Config(host="https://x", insecure=True, client_cert_data=cert,
                                 client_key_data=b"not a key"))
    assert not os.path.exists(d)


def test_client_cert_files(tmp_path: Path) -> None:
    cert, key = self_signed("client")
    (tmp_path / "c.crt").write_bytes(cert)
    (tmp_path / "c.key").write_bytes(key)
    p = write(tmp_path / "config", kubeconfig(
        {"c": {"server": "https://x", "insecure-skip-tls-verify": True}},
        {"u": {"client-certificate": "c.crt", "client-key": "c.key"}},
        {"ctx": {"cluster": "c", "user": "u"}}, "ctx"))
    cfg = load_kube_config(p)
    assert cfg.client_cert_file == str(tmp_path / "c.crt")
    assert build_ssl_context(cfg) is not None
