"""The controller manager's issue-12 flags and wiring: the endpoint and service-account
flags (names, defaults, validation, /configz), the token controller's special start,
per-controller ServiceAccount credentials (config, token caching)."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.client import Config
from pykcm.manager.context import ClientBuilder
from pykcm.manager.options import ControllerManagerOptions, OptionsError
from pykcm.manager.registry import ControllerDescriptor, ControllerRegistry, builtin_registry
from pykcm.manager.service_account_credentials import ServiceAccountTokenSource


def test_flags_and_defaults_are_kube_controller_managers() -> None:
    o = ControllerManagerOptions.parse([])
    assert (o.concurrent_endpoint_syncs, o.endpoint_updates_batch_period) == (5, 0.0)
    assert (o.concurrent_service_endpoint_syncs, o.max_endpoints_per_slice,
            o.endpointslice_updates_batch_period) == (5, 100, 0.0)
    assert (o.mirroring_concurrent_service_endpoint_syncs, o.mirroring_max_endpoints_per_subset,
            o.mirroring_endpointslice_updates_batch_period) == (5, 1000, 0.0)
    assert (o.service_account_private_key_file, o.root_ca_file,
            o.concurrent_serviceaccount_token_syncs) == ("", "", 5)
    assert o.legacy_service_account_token_clean_up_period == 365 * 24 * 3600
    assert o.use_service_account_credentials is False
    o = ControllerManagerOptions.parse([
        "--endpoint-updates-batch-period=500ms", "--max-endpoints-per-slice", "7",
        "--use-service-account-credentials", "--root-ca-file=/ca",
        "--service-account-private-key-file", "/k", "--legacy-service-account-token-clean-up-period=1h"])
    assert (o.endpoint_updates_batch_period, o.max_endpoints_per_slice) == (0.5, 7)
    assert o.use_service_account_credentials and (o.root_ca_file, o.service_account_private_key_file) \
        == ("/ca", "/k")
    c = o.configz()
    assert c["EndpointSliceController"] == {"ConcurrentServiceEndpointSyncs": 5,
                                            "MaxEndpointsPerSlice": 7,
                                            "EndpointUpdatesBatchPeriod": "0s"}
    assert c["SAController"] == {"ServiceAccountKeyFile": "/k", "ConcurrentSATokenSyncs": 5,
                                 "RootCAFile": "/ca"}
    assert c["LegacySATokenCleaner"] == {"CleanUpPeriod": "1h0m0s"}


@pytest.mark.parametrize(("kw", "message"), [
    ({"max_endpoints_per_slice": 0}, "max-endpoints-per-slice must not be less than 1, but got 0"),
    ({"mirroring_max_endpoints_per_subset": 1001},
     "mirroring-max-endpoints-per-subset must not be more than 1000, but got 1001"),
    ({"concurrent_service_endpoint_syncs": 51},
     "concurrent-service-endpoint-syncs must not be more than 50, but got 51"),
])
def test_endpoint_flag_ranges(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionsError, match=f"^{message}$"):
        ControllerManagerOptions(**kw).validate()


def test_the_token_controller_starts_first_whatever_controllers_says() -> None:
    async def init(ctx: Any, name: str) -> None:
        return None
    r = ControllerRegistry()
    r.register(ControllerDescriptor("a", init))
    r.register(ControllerDescriptor("tokens", init, requires_special_handling=True))
    assert r.resolve_enabled(["*"]) == ["tokens", "a"]
    assert r.resolve_enabled(["-tokens"]) == ["tokens"]
    names = builtin_registry().known_names()
    for name in ("serviceaccount-token-controller", "serviceaccount-controller",
                 "root-ca-certificate-publisher-controller", "endpoints-controller",
                 "endpointslice-controller", "endpointslice-mirroring-controller",
                 "legacy-serviceaccount-token-cleaner-controller"):
        assert name in names
    assert builtin_registry().resolve_enabled(["*"])[0] == "serviceaccount-token-controller"


def test_service_account_credentials_replace_the_managers() -> None:
    root = Config(host="https://127.0.0.1:6443", ca_data=b"CA", token="admin",
                  impersonate_user="someone")
    plain = ClientBuilder(root, qps=5, burst=10)
    assert plain.config("replicaset-controller").token == "admin"
    sa = ClientBuilder(root, qps=5, burst=10, use_service_account_credentials=True)
    cfg = sa.config("replicaset-controller")
    assert cfg.token is None and cfg.impersonate_user is None and cfg.ca_data == b"CA"
    assert isinstance(cfg.token_source, ServiceAccountTokenSource)
    assert (cfg.token_source.namespace, cfg.token_source.name) == \
        ("kube-system", "replicaset-controller")
    assert cfg.user_agent is not None and cfg.user_agent.endswith(
        " controller-manager/system:serviceaccount:kube-system:replicaset-controller")
    assert (cfg.qps, cfg.burst) == (5, 10)
    # the shared informers and the token controller keep the manager's credentials
    assert sa.root_config("shared-informers").token == "admin"
    assert sa.root_client("x") is not sa.client("x")


class FakeCore:
    """GET/POST of ServiceAccounts and TokenRequests."""

    def __init__(self) -> None:
        self.accounts: set[str] = set()
        self.tokens = 0

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Any:
        from pykcm.client.errors import NotFound
        if resource == "serviceaccounts" and name not in self.accounts:
            raise NotFound({"code": 404, "reason": "NotFound", "message": name})
        return {"metadata": {"name": name}}

    async def create(self, resource: str, body: Any, namespace: str | None = None, *,
                     subresource: str | None = None) -> Any:
        if subresource == "token":
            self.tokens += 1
            return {"status": {"token": f"t{self.tokens}",
                               "expirationTimestamp": "2099-01-01T00:00:00Z"}}
        if resource == "serviceaccounts":
            self.accounts.add(body["metadata"]["name"])
        return body


async def test_token_source_creates_the_account_and_caches_the_token() -> None:
    core = FakeCore()
    now = [0.0]
    src = ServiceAccountTokenSource(core, "kube-system", "job-controller",  # type: ignore[arg-type]
                                    clock=lambda: now[0])
    await src.ensure_service_account()
    assert core.accounts == {"job-controller"}
    assert await src.token() == "t1"
    assert await src.token() == "t1"  # cached
    src.reset()  # after a 401
    assert await src.token() == "t2"
    now[0] = 4102444800.0  # past 80 % of its lifetime: renewed
    assert await src.token() == "t3"
