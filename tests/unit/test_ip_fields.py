"""IP and CIDR fields of the networking kinds (registry/networking/ip_fields.py): the sloppy
parse kube-apiserver's legacy fields start from, the strict refusals and canonical forms,
the warnings (texts as apimachinery's util/validation/ip.go words them)."""

from __future__ import annotations

import pytest

from pykcm.apiserver.registry.networking.ip_fields import (
    cidr_warnings,
    ip_family,
    ip_warnings,
    is_valid_cidr,
    is_valid_ip,
    legacy_cidr_errors,
    legacy_ip_errors,
    parse_cidr_sloppy,
    parse_ip_sloppy,
)


def _details(causes: list) -> list[str]:  # type: ignore[type-arg]
    return [c.detail for c in causes]


def test_sloppy_parse_takes_leading_zeros_and_refuses_zones() -> None:
    assert str(parse_ip_sloppy("010.001.002.003")) == "10.1.2.3"
    assert parse_ip_sloppy("fe80::1%eth0") is None
    assert parse_ip_sloppy("1.2.3") is None and parse_ip_sloppy("256.1.1.1") is None
    parsed = parse_cidr_sloppy("10.1.2.3/08")
    assert parsed is not None and str(parsed[1]) == "10.0.0.0/8"
    assert parse_cidr_sloppy("10.0.0.0/33") is None and parse_cidr_sloppy("10.0.0.0") is None


@pytest.mark.parametrize(("value", "errors"), [
    ("10.0.0.0/8", []),
    ("10.0.0.1/8", ["must not have bits set beyond the prefix length"]),
    ("010.0.0.0/8", ["must not have leading 0s in IP or prefix length"]),
    ("10.0.0.0/08", ["must not have leading 0s in IP or prefix length"]),
    ("::ffff:1.2.3.0/120", ["must not have an IPv4-mapped IPv6 address"]),
    ("300.0.0.0/8", ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]),
])
def test_legacy_cidr(value: str, errors: list[str]) -> None:
    assert _details(legacy_cidr_errors("f", value)) == errors
    assert legacy_cidr_errors("f", value, (value,)) == []  # the old object's value stays


def test_new_fields_want_the_canonical_form() -> None:
    assert _details(is_valid_cidr("f", "FD00::/64")) == ['must be in canonical form ("fd00::/64")']
    assert is_valid_cidr("f", "fd00::/64") == []
    assert _details(is_valid_ip("f", "FD00::1")) == ['must be in canonical form ("fd00::1")']
    assert _details(is_valid_ip("f", "010.1.1.1")) == ["must not have leading 0s"]
    assert _details(legacy_ip_errors("f", "::ffff:1.2.3.4")) == [
        "must not be an IPv4-mapped IPv6 address"]


def test_warnings() -> None:
    assert cidr_warnings("p", "2001:DB8::/64") == [
        ('p: IPv6 CIDR value "2001:DB8::/64" should be in RFC 5952 canonical format '
        '("2001:db8::/64")')]
    assert cidr_warnings("p", "10.0.0.1/8") == [
        ('p: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or '
        '"10.0.0.1/32"?)')]
    assert cidr_warnings("p", "010.0.0.0/8") == [
        'p: non-standard CIDR value "010.0.0.0/8" is invalid: use "10.0.0.0/8"']
    assert cidr_warnings("p", "10.0.0.0/8") == []
    assert ip_warnings("p", "010.1.1.1") == [
        'p: non-standard IP address "010.1.1.1" is invalid: use "10.1.1.1"']
    assert ip_warnings("p", "FD00::1") == [
        'p: IPv6 address "FD00::1" should be in RFC 5952 canonical format ("fd00::1")']


def test_ip_family() -> None:
    assert (ip_family("10.0.0.0/8"), ip_family("fd00::/64"), ip_family("x")) == ("4", "6", "")
