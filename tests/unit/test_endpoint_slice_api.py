"""discovery.k8s.io/v1 EndpointSlices in the embedded server without a server: defaults,
validation (messages as kube-apiserver v1.36 gave them), the strategy's generation and
deprecatedTopology rules, Table cells, and the kubernetes Service's slice and address."""

from __future__ import annotations

from typing import Any

from pykcm.api.endpoints import ENDPOINT_SLICES
from pykcm.apiserver.controlplane.identity_lease import server_id
from pykcm.apiserver.controlplane.kubernetes_service import (
    choose_advertise_address,
    slice_from_endpoints,
)
from pykcm.apiserver.endpoints import tables
from pykcm.apiserver.registry.discovery.endpointslice import endpoint_slice_warnings, ip_warnings
from pykcm.apiserver.registry.lookup import strategy_for

STRATEGY = strategy_for(ENDPOINT_SLICES)


def eps(**fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                           "metadata": {"name": "s", "namespace": "ns"}, "addressType": "IPv4"}
    obj.update(fields)
    return obj


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    causes = (STRATEGY.validate_create(obj) if old is None
              else STRATEGY.validate_update(obj, old))
    return [f"{c.field}: {c.body()}" for c in causes]


def test_registry_entry() -> None:
    assert ENDPOINT_SLICES.api_version == "discovery.k8s.io/v1"
    assert ENDPOINT_SLICES.namespaced and ENDPOINT_SLICES.track_generation


def test_defaults_write_go_fields_in_order() -> None:
    obj = eps(ports=[{"port": 80}, {"appProtocol": "x", "name": "a"}],
              endpoints=[{"zone": "z", "addresses": ["10.0.0.1"]}])
    obj = {"ports": obj.pop("ports"), **obj}
    STRATEGY.default(obj, create=True)
    assert list(obj) == ["kind", "apiVersion", "metadata", "addressType", "endpoints", "ports"]
    assert obj["ports"] == [{"name": "", "protocol": "TCP", "port": 80},
                            {"name": "a", "protocol": "TCP", "appProtocol": "x"}]
    assert list(obj["ports"][1]) == ["name", "protocol", "appProtocol"]
    assert obj["endpoints"] == [{"addresses": ["10.0.0.1"], "conditions": {}, "zone": "z"}]
    empty = eps()
    STRATEGY.default(empty, create=True)
    assert empty["endpoints"] is None and empty["ports"] is None


def test_validation_messages_as_upstream() -> None:
    obj = eps(endpoints=[
        {"addresses": ["010.1.2.3", "::ffff:1.2.3.4", "fe80::1", "0.0.0.0", "1.2.3.4.5", "::1"]},
        {"addresses": []},
        {"addresses": ["1.1.1.1"], "hostname": "A_b", "nodeName": "N!",
         "hints": {"forZones": [{"name": "z"}, {"name": "z"}], "forNodes": [{"name": "n!"}]}}],
        ports=[{"name": "Bad_Name", "protocol": "XTP", "appProtocol": "a b"},
               {"name": "x", "port": 80}])
    STRATEGY.default(obj, create=True)
    label = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
    subdomain = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    assert messages(obj) == [
        f'ports[0].name: Invalid value: "Bad_Name": {label}',
        'ports[0].protocol: Unsupported value: "XTP": supported values: "SCTP", "TCP", "UDP"',
        ('ports[0].appProtocol: Invalid value: "a b": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        'endpoints[0].addresses[0]: Invalid value: "010.1.2.3": must not have leading 0s',
        ('endpoints[0].addresses[1]: Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped '
        "IPv6 address"),
        'endpoints[0].addresses: Invalid value: "fe80::1": must be an IPv4 address',
        ('endpoints[0].addresses[2]: Invalid value: "fe80::1": may not be in the link-local '
        "range (169.254.0.0/16, fe80::/10)"),
        'endpoints[0].addresses[3]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
        ('endpoints[0].addresses[4]: Invalid value: "1.2.3.4.5": must be a valid IP address, '
        "(e.g. 10.9.8.7 or 2001:db8::ffff)"),
        'endpoints[0].addresses: Invalid value: "::1": must be an IPv4 address',
        ('endpoints[0].addresses[5]: Invalid value: "::1": may not be in the loopback range '
        "(127.0.0.0/8, ::1/128)"),
        "endpoints[1].addresses: Required value: must contain at least 1 address",
        f'endpoints[2].nodeName: Invalid value: "N!": {subdomain}',
        f'endpoints[2].hostname: Invalid value: "A_b": {label}',
        'endpoints[2].hints.forZones[1].name: Duplicate value: "z"',
        f'endpoints[2].hints.forNodes[0].name: Invalid value: "n!": {subdomain}',
    ]
    v6 = eps(addressType="IPv6", endpoints=[{"addresses": ["1.2.3.4", "2001:DB8::1",
                                                           "::ffff:1.2.3.4"]}])
    assert messages(v6) == [
        'endpoints[0].addresses: Invalid value: "1.2.3.4": must be an IPv6 address',
        ('endpoints[0].addresses[1]: Invalid value: "2001:DB8::1": must be in canonical form '
        '("2001:db8::1")'),
        ('endpoints[0].addresses[2]: Invalid value: "::ffff:1.2.3.4": must not be an '
        "IPv4-mapped IPv6 address")]
    fqdn = eps(addressType="FQDN", endpoints=[{"addresses": ["a.b.c", "x"]}])
    assert messages(fqdn) == [('endpoints[0].addresses[1]: Invalid value: "x": should be a '
                              "domain with at least two segments separated by dots")]
    assert messages(eps(addressType="")) == ["addressType: Required value"]
    assert messages(eps(addressType="IP")) == [
        'addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"']


def test_update_rules() -> None:
    old = eps(endpoints=[{"addresses": ["127.0.0.1"], "conditions": {}}])
    new = eps(addressType="IPv6", endpoints=[{"addresses": ["127.0.0.1"], "conditions": {}}])
    # unchanged endpoints an older server accepted stay valid; addressType is immutable
    assert messages(new, old) == ['addressType: Invalid value: "IPv6": field is immutable']


def test_generation_and_deprecated_topology() -> None:
    created = eps(endpoints=[{"addresses": ["10.0.0.1"], "deprecatedTopology": {
        "kubernetes.io/hostname": "n1"}}])
    STRATEGY.prepare_for_create(created)
    assert created["metadata"]["generation"] == 1
    assert created["endpoints"] == [{"addresses": ["10.0.0.1"]}]
    old = eps(endpoints=[{"addresses": ["10.0.0.1"], "deprecatedTopology": {
        "kubernetes.io/hostname": "n1"}}])
    old["metadata"]["generation"] = 3
    annotated = eps(endpoints=old["endpoints"])
    annotated["metadata"].update(generation=3, annotations={"a": "b"})
    STRATEGY.prepare_for_update(annotated, old)
    out = annotated
    assert out["metadata"]["generation"] == 3
    assert out["endpoints"] == old["endpoints"]  # unchanged endpoints keep their topology
    labelled = eps(endpoints=old["endpoints"])
    labelled["metadata"]["labels"] = {"a": "b"}
    STRATEGY.prepare_for_update(labelled, old)
    assert labelled["metadata"]["generation"] == 4
    moved = eps(endpoints=[{"addresses": ["10.0.0.2"], "deprecatedTopology": {
        "kubernetes.io/hostname": "n1"}}])
    STRATEGY.prepare_for_update(moved, old)
    out = moved
    # a partial update keeps the node the old topology named
    assert out["endpoints"] == [{"addresses": ["10.0.0.2"], "nodeName": "n1"}]
    assert out["metadata"]["generation"] == 4


def test_warnings() -> None:
    assert endpoint_slice_warnings(eps(addressType="FQDN"), create=True) == [
        "spec.addressType: FQDN endpoints are deprecated"]
    assert endpoint_slice_warnings(eps(addressType="FQDN"), create=False) == []
    assert ip_warnings("f", "010.0.0.1") == [
        'f: non-standard IP address "010.0.0.1" is invalid: use "10.0.0.1"']
    assert ip_warnings("f", "2001:DB8::1") == [
        'f: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")']


def test_table_cells() -> None:
    obj = eps(ports=[{"port": 1}, {"name": "n"}, {"port": 3}, {"port": 4}],
              endpoints=[{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]},
                         {"addresses": ["10.0.0.4"]}])
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    t = tables.table("EndpointSlice", "discovery.k8s.io", [obj], printer=STRATEGY.printer,
                     list_meta=None,
                     include_object="None", api_version="meta.k8s.io/v1")
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "AddressType", "Ports", "Endpoints", "Age"]
    assert t["rows"][0]["cells"][:4] == ["s", "IPv4", "1,n,3 + 1 more...",
                                         "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."]
    empty = tables.table("EndpointSlice", "discovery.k8s.io", [eps()],
                         printer=STRATEGY.printer, list_meta=None,
                         include_object="None", api_version="meta.k8s.io/v1")
    assert empty["rows"][0]["cells"][2:4] == ["<unset>", "<unset>"]


def test_kubernetes_service_slice_and_address() -> None:
    ep = {"metadata": {"name": "kubernetes", "namespace": "default"}, "subsets": [
        {"addresses": [{"ip": "192.0.2.2"}], "ports": [{"name": "https", "port": 6443,
                                                        "protocol": "TCP"}]}]}
    assert slice_from_endpoints(ep) == {
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.0.2.2"], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "protocol": "TCP", "port": 6443}]}
    assert slice_from_endpoints({"metadata": ep["metadata"]})["endpoints"] is None
    assert choose_advertise_address("10.1.1.1") == "10.1.1.1"
    assert choose_advertise_address("127.0.0.1", "127.0.0.1") == "127.0.0.1"  # as told
    assert choose_advertise_address("127.0.0.1", "10.2.2.2") == "10.2.2.2"
    # a loopback or unspecified bind advertises the default route's address (if any)
    picked = choose_advertise_address("127.0.0.1")
    assert picked is None or not picked.startswith("127.")
    assert choose_advertise_address("0.0.0.0", "0.0.0.0") == picked


def test_identity_lease_name_as_kube_apiserver_derives_it() -> None:
    # the kit's kube-apiserver v1.36.2 on host "vm" held kube-system/apiserver-wlv32tlttr...
    assert server_id("vm") == "apiserver-wlv32tlttr4jl3gtroqexyxapa"
