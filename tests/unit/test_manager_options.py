"""Controller-manager flags: kube-controller-manager's names and defaults, Go durations,
pflag-style booleans and slices, validation messages, the /configz shape."""

from __future__ import annotations

import argparse

import pytest

from pykcm.manager import ControllerManagerOptions, OptionsError, format_duration, parse_duration
from pykcm.manager.options import add_flags, parse_bool
from pykcm.manager.registry import ControllerDescriptor, ControllerRegistry


async def _init(ctx: object, name: str) -> None:
    return None


def registry(*names: str) -> ControllerRegistry:
    r = ControllerRegistry()
    for n in names:
        r.register(ControllerDescriptor(n, _init))
    return r


def test_defaults_are_kube_controller_managers() -> None:
    o = ControllerManagerOptions.parse([])
    assert o == ControllerManagerOptions()
    assert o.controllers == ["*"]
    assert (o.kube_api_qps, o.kube_api_burst) == (20.0, 30)
    assert o.min_resync_period == 12 * 3600
    assert o.leader_elect is True
    assert (o.leader_elect_lease_duration, o.leader_elect_renew_deadline,
            o.leader_elect_retry_period) == (15.0, 10.0, 2.0)
    assert (o.leader_elect_resource_lock, o.leader_elect_resource_namespace,
            o.leader_elect_resource_name) == ("leases", "kube-system", "kube-controller-manager")
    assert (o.bind_address, o.secure_port, o.port) == ("0.0.0.0", 10257, 0)
    assert (o.concurrent_replicaset_syncs, o.concurrent_deployment_syncs,
            o.concurrent_job_syncs, o.concurrent_cron_job_syncs, o.concurrent_gc_syncs,
            o.concurrent_namespace_syncs, o.concurrent_ttl_after_finished_syncs) == \
        (5, 5, 5, 5, 20, 10, 5)
    assert o.controller_shutdown_timeout == 10.0
    assert o.v == 0 and o.kubeconfig is None


def test_flags_parse() -> None:
    o = ControllerManagerOptions.parse([
        "--kubeconfig", "/k", "--controllers=a,-b", "--controllers", "c",
        "--kube-api-qps=5.5", "--kube-api-burst", "7", "--leader-elect=false",
        "--leader-elect-lease-duration=1m30s", "--leader-elect-renew-deadline", "500ms",
        "--leader-elect-retry-period=0.1s", "--min-resync-period=1h", "--secure-port=0",
        "--port", "12345", "--bind-address=127.0.0.1", "--concurrent-gc-syncs=3",
        "--controller-shutdown-timeout=2s", "-v", "4"])
    assert o.kubeconfig == "/k"
    assert o.controllers == ["a", "-b", "c"]  # the first use replaces "*", later ones append
    assert (o.kube_api_qps, o.kube_api_burst) == (5.5, 7)
    assert o.leader_elect is False
    assert o.leader_elect_lease_duration == 90.0
    assert o.leader_elect_renew_deadline == 0.5
    assert o.leader_elect_retry_period == pytest.approx(0.1)
    assert o.min_resync_period == 3600.0
    assert (o.secure_port, o.port, o.bind_address) == (0, 12345, "127.0.0.1")
    assert o.concurrent_gc_syncs == 3 and o.controller_shutdown_timeout == 2.0 and o.v == 4


def test_bool_flag_forms() -> None:
    assert ControllerManagerOptions.parse(["--leader-elect"]).leader_elect is True
    assert ControllerManagerOptions.parse(["--leader-elect=False"]).leader_elect is False
    assert ControllerManagerOptions.parse(["--leader-elect=0"]).leader_elect is False
    with pytest.raises(ValueError, match="invalid syntax"):
        parse_bool("yes")


def test_compact_informer_objects_on_by_default() -> None:
    # pykcm only (issue 19): the informers cache compact read-only objects unless told not to
    assert ControllerManagerOptions.parse([]).compact_informer_objects is True
    assert ControllerManagerOptions.parse(
        ["--compact-informer-objects=false"]).compact_informer_objects is False
    assert ControllerManagerOptions.parse(
        ["--compact-informer-objects"]).compact_informer_objects is True


def test_empty_controllers_enables_nothing() -> None:
    o = ControllerManagerOptions.parse(["--controllers="])
    assert o.controllers == []
    assert registry("a", "b").resolve_enabled(o.controllers) == []


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("15s", 15.0), ("1m30s", 90.0), ("12h", 43200.0), ("1.5h", 5400.0),
    ("500ms", 0.5), ("2h45m", 9900.0), ("-1m", -60.0), ("+3s", 3.0), ("100us", 1e-4),
    ("1h1m1s1ms", 3661.001), (".5s", 0.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'), ("15", 'time: missing unit in duration "15"'),
    ("s", 'time: invalid duration "s"'), ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1.s.", 'time: invalid duration "1.s."'), ("abc", 'time: invalid duration "abc"'),
    ("1h 2m", 'time: unknown unit "h " in duration "1h 2m"'),
    ("--1s", 'time: invalid duration "--1s"'), (".", 'time: invalid duration "."')])
def test_parse_duration_rejects(text: str, message: str) -> None:
    # time.ParseDuration's own messages (pykcm.api.go_duration)
    with pytest.raises(ValueError) as err:
        parse_duration(text)
    assert str(err.value) == message


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (15, "15s"), (90, "1m30s"), (43200, "12h0m0s"), (0.5, "500ms"),
    (1.5, "1.5s"), (3661.001, "1h1m1.001s"), (300, "5m0s"), (1e-6, "1µs"), (-2, "-2s")])
def test_format_duration_is_gos(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_bad_value_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser()
    add_flags(p)
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--leader-elect-lease-duration", "soon"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert 'invalid argument "soon" for "--leader-elect-lease-duration" flag: ' \
           'time: invalid duration "soon"' in err
    with pytest.raises(SystemExit):
        p.parse_args(["--kube-api-burst", "many"])
    assert 'strconv.ParseInt: parsing "many": invalid syntax' in capsys.readouterr().err


def test_validate_unknown_controller_message() -> None:
    r = registry("replicaset-controller")
    o = ControllerManagerOptions(controllers=["*", "-nosuch"])
    with pytest.raises(OptionsError) as e:
        o.validate(r)
    assert str(e.value) == '"nosuch" is not in the list of known controllers'


def test_validate_election_and_aggregate() -> None:
    ControllerManagerOptions().validate(registry())
    with pytest.raises(OptionsError, match='^resourceLock value must be "leases"$'):
        ControllerManagerOptions(leader_elect_resource_lock="endpoints").validate()
    # a non-electing manager does not care about the lock
    ControllerManagerOptions(leader_elect=False,
                             leader_elect_resource_lock="endpoints").validate()
    with pytest.raises(OptionsError, match="leaseDuration must be greater than renewDeadline"):
        ControllerManagerOptions(leader_elect_lease_duration=5).validate()
    with pytest.raises(OptionsError) as e:
        ControllerManagerOptions(leader_elect_resource_lock="x", secure_port=70000).validate()
    assert str(e.value) == ('[resourceLock value must be "leases", '
                            '--secure-port 70000 must be between 0 and 65535, inclusive]')


def test_configz_shape() -> None:
    c = ControllerManagerOptions(controllers=["*", "-a"]).configz()
    g = c["Generic"]
    assert g["Port"] == 10257 and g["Address"] == "0.0.0.0"
    assert g["MinResyncPeriod"] == "12h0m0s"
    assert g["ClientConnection"]["QPS"] == 20.0 and g["ClientConnection"]["Burst"] == 30
    assert g["LeaderElection"] == {
        "LeaderElect": True, "LeaseDuration": "15s", "RenewDeadline": "10s",
        "RetryPeriod": "2s", "ResourceLock": "leases",
        "ResourceName": "kube-controller-manager", "ResourceNamespace": "kube-system"}
    assert g["Controllers"] == ["*", "-a"]
    assert c["ReplicaSetController"] == {"ConcurrentRSSyncs": 5}
    assert c["GarbageCollectorController"]["ConcurrentGCSyncs"] == 20
    assert c["NamespaceController"] == {"NamespaceSyncPeriod": "5m0s",
                                        "ConcurrentNamespaceSyncs": 10}
