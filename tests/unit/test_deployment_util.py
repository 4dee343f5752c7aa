"""Deployment controller pure logic (pykcm.controllers.deployment.util, hashing, sync, rolling, progress).

Tables after upstream's deployment_util_test.go, sync_test.go, rolling_test.go
and progress_test.go, on wire-form dicts.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pykcm.api.intstr import IntOrStringError
from pykcm.controllers.deployment import util
from pykcm.controllers.deployment.hashing import (
    SAFE_ALPHANUMS,
    compute_hash,
    fnv32a,
    safe_encode_string,
)
from pykcm.controllers.deployment.progress import rollout_status, stuck_deployment_delay
from pykcm.controllers.deployment.recreate import old_pods_running
from pykcm.controllers.deployment.rolling import old_replica_sets_scale_down_plan
from pykcm.controllers.deployment.sync import (
    calculate_status,
    new_replica_set,
    proportional_sizes,
)

T0 = 1_800_000_000.0


def template(image: str = "nginx:1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web", **labels}},
            "spec": {"containers": [{"name": "c", "image": image}]}}


def deployment(replicas: int = 10, surge: int | str = "25%", unavailable: int | str = "25%",
               strategy: str = "RollingUpdate", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                         "template": template(), "revisionHistoryLimit": 10,
                         "progressDeadlineSeconds": 600}
    s["strategy"] = ({"type": "RollingUpdate",
                      "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
                     if strategy == "RollingUpdate" else {"type": strategy})
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "d-uid", "generation": 1},
            "spec": s, "status": {}}


def rs(name: str, replicas: int, available: int = 0, *, created: str = "2026-01-01T00:00:00Z",
       revision: str | None = None, max_replicas: int | None = None,
       desired: int | None = None, image: str = "nginx:1", actual: int | None = None,
       **status: Any) -> dict[str, Any]:
    ann: dict[str, str] = {}
    if revision is not None:
        ann[util.REVISION_ANNOTATION] = revision
    if max_replicas is not None:
        ann[util.MAX_REPLICAS_ANNOTATION] = str(max_replicas)
    if desired is not None:
        ann[util.DESIRED_REPLICAS_ANNOTATION] = str(desired)
    st = {"replicas": replicas if actual is None else actual, "availableReplicas": available,
          **status}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid",
                         "creationTimestamp": created, "annotations": ann,
                         "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "template": template(image, **{
                util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: name})},
            "status": st}


# -- fenceposts ------------------------------------------------------------------------------


@pytest.mark.parametrize(("surge", "unavailable", "desired", "want"), [
    ("0%", "0%", 0, (0, 1)),          # both zero: one may be unavailable
    ("39%", "39%", 10, (4, 3)),       # surge rounds up, unavailable down
    ("25%", "25%", 10, (3, 2)),
    ("25%", "25%", 4, (1, 1)),        # exact: no rounding either way
    ("25%", "25%", 1, (1, 0)),
    (0, "10%", 5, (0, 1)),            # 0.5 rounds down to 0, then the fencepost
    (2, 0, 10, (2, 0)),
    (None, None, 3, (0, 1)),
])
def test_resolve_fenceposts(surge: int | str | None, unavailable: int | str | None,
                            desired: int, want: tuple[int, int]) -> None:
    assert util.resolve_fenceposts(surge, unavailable, desired) == want


@pytest.mark.parametrize(("surge", "unavailable"), [("oops", "1%"), ("55%", "urg"), ("5", 1)])
def test_resolve_fenceposts_rejects_bad_values(surge: str, unavailable: int | str) -> None:
    with pytest.raises(IntOrStringError):
        util.resolve_fenceposts(surge, unavailable, 10)


def test_max_surge_and_unavailable_by_strategy() -> None:
    d = deployment(10, "25%", "25%")
    assert (util.max_surge(d), util.max_unavailable(d)) == (3, 2)
    assert util.max_unavailable(deployment(2, 0, 5)) == 2      # never more than replicas
    assert util.max_unavailable(deployment(0, 1, 1)) == 0      # nothing to be unavailable
    recreate = deployment(10, strategy="Recreate")
    assert (util.max_surge(recreate), util.max_unavailable(recreate)) == (0, 0)


# -- new ReplicaSet size ---------------------------------------------------------------------


@pytest.mark.parametrize(("strategy", "replicas", "surge", "new", "old", "want"), [
    ("RollingUpdate", 1, 1, 0, [1], 1),     # room for one more: 0 → 1
    ("RollingUpdate", 1, 1, 1, [1], 1),     # at replicas + surge already: stays
    ("RollingUpdate", 6, 10, 2, [6], 6),    # never past replicas
    ("RollingUpdate", 10, 3, 0, [10], 3),   # the surge
    ("RollingUpdate", 10, 3, 3, [8], 5),    # old scaled down by 2: two more
    ("RollingUpdate", 10, 0, 0, [10], 0),   # no surge: the old ones go first
    ("Recreate", 3, 0, 1, [0], 3),
])
def test_new_rs_new_replicas(strategy: str, replicas: int, surge: int, new: int,
                             old: list[int], want: int) -> None:
    d = deployment(replicas, surge, 1, strategy=strategy)
    new_rs = rs("new", new)
    old_rss = [rs(f"old{i}", n) for i, n in enumerate(old)]
    assert util.new_rs_new_replicas(d, [*old_rss, new_rs], new_rs) == want


def test_new_rs_new_replicas_unknown_strategy() -> None:
    d = deployment(3, strategy="Bogus")
    with pytest.raises(ValueError, match="Bogus"):
        util.new_rs_new_replicas(d, [], rs("new", 0))


# -- old ReplicaSets scale-down --------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "unavailable", "old", "new_available", "want"), [
    # 10 desired, 2 may be unavailable: 10 available old → 2 go.
    (10, 2, [(10, 10)], 0, [8]),
    # Nothing available beyond the minimum: nothing goes.
    (10, 2, [(8, 8)], 0, []),
    # New pods available count too: 8 old + 2 new available → 2 old go.
    (10, 2, [(8, 8)], 2, [6]),
    # Oldest first, across ReplicaSets.
    (10, 2, [(1, 1), (9, 9)], 2, [0, 6]),
    # Empty old ReplicaSets are skipped.
    (4, 1, [(0, 0), (4, 4)], 0, [3]),
])
def test_old_replica_sets_scale_down_plan(replicas: int, unavailable: int,
                                          old: list[tuple[int, int]], new_available: int,
                                          want: list[int]) -> None:
    d = deployment(replicas, 1, unavailable)
    old_rss = [rs(f"old{i}", n, a, created=f"2026-01-0{i + 1}T00:00:00Z")
               for i, (n, a) in enumerate(old)]
    new_rs = rs("new", 2, new_available, created="2026-02-01T00:00:00Z")
    plan = old_replica_sets_scale_down_plan([*old_rss, new_rs], old_rss, d)
    assert [n for _, n in plan] == want
    if plan:
        assert plan[0][0]["metadata"]["name"] == next(
            r["metadata"]["name"] for r in old_rss if util.spec_replicas(r) > 0)


# -- proportional scaling --------------------------------------------------------------------


def test_get_replica_set_fraction_and_proportion() -> None:
    d = deployment(20, 3, 2)                      # allowed 23
    old = rs("old", 8, max_replicas=13)
    assert util.get_replica_set_fraction(old, d) == 6            # 8 * 23 / 13 = 14.15 → 14
    assert util.get_proportion(old, d, 10, 0) == 6
    assert util.get_proportion(old, d, 10, 7) == 3               # never past what is left
    assert util.get_proportion(old, d, 10, 10) == 0
    assert util.get_proportion(rs("empty", 0), d, 10, 0) == 0    # never up from zero
    # Scaling to zero: the whole ReplicaSet goes.
    assert util.get_replica_set_fraction(old, deployment(0, 3, 2)) == -8
    # Scaling down takes the max of fraction and what is left (both negative).
    small = deployment(5, 3, 2)                   # allowed 8
    assert util.get_proportion(old, small, -5, 0) == -3          # 8 * 8 / 13 = 4.9 → 5
    assert util.get_proportion(old, small, -5, -4) == -1
    # No max-replicas annotation: the Deployment's current size stands in.
    d2 = deployment(20, 3, 2)
    d2["status"] = {"replicas": 13}
    assert util.get_replica_set_fraction(rs("old", 8), d2) == 6
    # max-replicas "0" is no size to scale from either (upstream falls back the same way).
    assert util.get_replica_set_fraction(rs("old", 8, max_replicas=0), d2) == 6
    d2["status"] = {"replicas": 0}
    assert util.get_replica_set_fraction(rs("old", 8, max_replicas=0), d2) == 0


def test_proportional_sizes_scale_up_mid_rollout() -> None:
    # 10 replicas, maxSurge 3, stuck with old 8 / new 5; scaled to 20 → 23 allowed.
    d = deployment(20, 3, 2)
    old = rs("old", 8, max_replicas=13, created="2026-01-01T00:00:00Z")
    new = rs("new", 5, max_replicas=13, created="2026-01-02T00:00:00Z")
    ordered = util.sort_by_size_newer([old, new])
    assert [r["metadata"]["name"] for r in ordered] == ["old", "new"]
    assert proportional_sizes(ordered, d, 10) == {"old": 14, "new": 9}


def test_proportional_sizes_leftover_goes_to_largest() -> None:
    # Three equal ReplicaSets of 1, annotated 3 allowed, scaled to 4 (allowed 4): each
    # fraction rounds 1*4/3 = 1.33 → 1 - 1 = 0, so the whole +1 is leftover for the first.
    d = deployment(4, 0, 1)
    rss = [rs(n, 1, max_replicas=3, created=f"2026-01-0{i + 1}T00:00:00Z")
           for i, n in enumerate(["a", "b", "c"])]
    ordered = util.sort_by_size_newer(rss)        # equal sizes: newest first
    assert [r["metadata"]["name"] for r in ordered] == ["c", "b", "a"]
    assert proportional_sizes(ordered, d, 1) == {"c": 2, "b": 1, "a": 1}


def test_proportional_sizes_scale_down() -> None:
    d = deployment(5, 3, 2)                       # allowed 8, from 23
    old = rs("old", 14, max_replicas=23, created="2026-01-01T00:00:00Z")
    new = rs("new", 9, max_replicas=23, created="2026-01-02T00:00:00Z")
    ordered = util.sort_by_size_older([new, old])
    assert [r["metadata"]["name"] for r in ordered] == ["old", "new"]
    sizes = proportional_sizes(ordered, d, -15)
    assert sizes == {"old": 5, "new": 3}          # 14*8/23 = 4.87 → 5; 9*8/23 = 3.13 → 3
    assert sum(sizes.values()) == 8


def test_sort_orders_break_ties_by_age() -> None:
    a = rs("a", 3, created="2026-01-01T00:00:00Z")
    b = rs("b", 3, created="2026-01-02T00:00:00Z")
    c = rs("c", 5, created="2026-01-03T00:00:00Z")
    assert [r["metadata"]["name"] for r in util.sort_by_size_older([b, a, c])] == ["c", "a", "b"]
    assert [r["metadata"]["name"] for r in util.sort_by_size_newer([a, b, c])] == ["c", "b", "a"]
    same_time = [rs("z", 1), rs("y", 1)]
    assert [r["metadata"]["name"] for r in util.sort_by_creation_timestamp(same_time)] == [
        "y", "z"]


def test_find_active_or_latest() -> None:
    new = rs("new", 0, created="2026-01-03T00:00:00Z")
    old1 = rs("old1", 0, created="2026-01-01T00:00:00Z")
    old2 = rs("old2", 0, created="2026-01-02T00:00:00Z")
    assert util.find_active_or_latest(None, []) is None
    assert util.find_active_or_latest(new, [old1, old2]) is new          # none active: new
    assert util.find_active_or_latest(None, [old1, old2]) is old2        # else the newest
    active = rs("old1", 3, created="2026-01-01T00:00:00Z")
    assert util.find_active_or_latest(new, [active, old2]) is active     # the only active
    assert util.find_active_or_latest(rs("new", 1), [active]) is None    # several active


def test_is_saturated() -> None:
    d = deployment(3)
    assert util.is_saturated(d, rs("new", 3, 3, desired=3))
    assert not util.is_saturated(d, rs("new", 3, 2, desired=3))          # not all available
    assert not util.is_saturated(d, rs("new", 3, 3, desired=2))          # scaled since
    assert not util.is_saturated(d, rs("new", 3, 3))                     # no annotation
    assert not util.is_saturated(d, None)


# -- templates, revisions, annotations -------------------------------------------------------


def test_equal_ignore_hash() -> None:
    a = template("nginx:1")
    b = template("nginx:1", **{util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: "abc"})
    assert util.equal_ignore_hash(a, b)
    assert util.equal_ignore_hash(b, a)
    assert not util.equal_ignore_hash(a, template("nginx:2"))
    assert not util.equal_ignore_hash(a, template("nginx:1", tier="x"))
    # Semantic equality: absent and empty are the same.
    c = template("nginx:1")
    c["metadata"]["annotations"] = {}
    c["spec"]["volumes"] = []
    assert util.equal_ignore_hash(a, c)
    # Only the hash label is ignored, and inputs are untouched.
    assert b["metadata"]["labels"][util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] == "abc"
    only_hash = {"metadata": {"labels": {util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: "x"}},
                 "spec": {}}
    assert util.equal_ignore_hash(only_hash, {"spec": {}})


def test_equal_ignore_hash_memo_is_keyed_by_the_template(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The normalised templates are memoised by their JSON: a template changed in place is
    a new key (never a stale answer), and a full table starts over."""
    monkeypatch.setattr(util, "_normalised", {})
    monkeypatch.setattr(util, "_NORMALISED_MAX", 3)
    a = template("nginx:1")
    b = template("nginx:1", **{util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: "abc"})
    assert util.equal_ignore_hash(a, b) and util.equal_ignore_hash(a, b)
    assert len(util._normalised) == 2
    b["spec"]["containers"][0]["image"] = "nginx:2"       # the same dict, changed
    assert not util.equal_ignore_hash(a, b)
    assert len(util._normalised) == 3
    c = template("nginx:3")
    assert not util.equal_ignore_hash(c, a)               # full: emptied, then c and a added
    assert len(util._normalised) == 2
    rs_new = {"metadata": {"name": "n", "uid": "u2", "creationTimestamp": "2024-01-02T00:00:00Z"},
              "spec": {"template": b}}
    rs_old = {"metadata": {"name": "o", "uid": "u1", "creationTimestamp": "2024-01-01T00:00:00Z"},
              "spec": {"template": a}}
    d = {"spec": {"template": template("nginx:2")}}
    assert util.find_new_replica_set(d, [rs_old, rs_new]) is rs_new
    assert util.find_old_replica_sets(d, [rs_old, rs_new]) == ([rs_old], [rs_old])


def test_equal_ignore_hash_compares_as_go_structs() -> None:
    """A value field's zero value is its absence (Go decodes both to false/0/""); a pointer
    field's is not (nil is not &false, nor &{}): EqualIgnoreHash on the decoded structs.
    An API server that keeps an explicit ``hostNetwork: false`` (pykcm's does) must not
    make a Deployment roll out again when it is added."""
    a = template("nginx:1")
    zeros = template("nginx:1")
    zeros["spec"].update({"hostNetwork": False, "nodeName": "", "hostname": ""})
    zeros["spec"]["containers"][0].update({"stdin": False, "workingDir": "", "resources": {}})
    zeros["metadata"]["name"] = ""
    assert util.equal_ignore_hash(a, zeros) and util.equal_ignore_hash(zeros, a)
    for field, value in [("automountServiceAccountToken", False),   # *bool
                         ("terminationGracePeriodSeconds", 0),        # *int64
                         ("securityContext", {}),                     # *PodSecurityContext
                         ("hostNetwork", True)]:
        other = template("nginx:1")
        other["spec"][field] = value
        assert not util.equal_ignore_hash(a, other), field
    # the zero value inside a list element counts too; a field the table lacks keeps its value
    init = template("nginx:1")
    init["spec"]["initContainers"] = [{"name": "i", "image": "x", "tty": False}]
    init2 = template("nginx:1")
    init2["spec"]["initContainers"] = [{"name": "i", "image": "x"}]
    assert util.equal_ignore_hash(init, init2)
    future = template("nginx:1")
    future["spec"]["someFutureField"] = False
    assert not util.equal_ignore_hash(a, future)


def test_find_new_and_old_replica_sets() -> None:
    d = deployment(3)
    d["spec"]["template"] = template("nginx:2")
    old = rs("old", 2, image="nginx:1", created="2026-01-01T00:00:00Z")
    new = rs("new", 1, image="nginx:2", created="2026-01-02T00:00:00Z")
    dup = rs("dup", 0, image="nginx:2", created="2026-01-03T00:00:00Z")
    empty_old = rs("older", 0, image="nginx:0", created="2025-01-01T00:00:00Z")
    assert util.find_new_replica_set(d, [dup, old, new]) is new        # the oldest equal one
    required, all_old = util.find_old_replica_sets(d, [old, new, dup, empty_old])
    assert [r["metadata"]["name"] for r in required] == ["old"]
    assert [r["metadata"]["name"] for r in all_old] == ["old", "dup", "older"]
    assert util.find_new_replica_set(deployment(3, image="x"), []) is None


def test_revisions() -> None:
    rss = [rs("a", 0, revision="1"), rs("b", 0, revision="4"), rs("c", 0, revision="x"),
           rs("d", 0), rs("e", 0, revision="3")]
    assert util.max_revision(rss) == 4
    assert util.last_revision(rss) == 3
    assert util.revision(rss[3]) == 0
    with pytest.raises(ValueError):
        util.revision(rss[2])
    by_rev = util.sort_by_revision([rss[1], rss[0], rss[4]])
    assert [r["metadata"]["name"] for r in by_rev] == ["a", "e", "b"]


def test_revisions_parse_as_go_strconv() -> None:
    # strconv.ParseInt: what Python's int() would also take is not a revision.
    for bad in (" 5", "5 ", "1_0", "٣", "9223372036854775808"):
        with pytest.raises(ValueError):
            util.revision(rs("r", 0, revision=bad))
    assert util.revision(rs("r", 0, revision="+7")) == 7
    assert util.max_revision([rs("a", 0, revision="2"), rs("b", 0, revision="1_0")]) == 2


def test_unparsable_revisions_sort_by_creation_as_upstream() -> None:
    # ReplicaSetsByRevision.Less: a pair with an unparsable revision compares by creation,
    # so such a ReplicaSet sits among the others by its age (it was sorted first before).
    old = rs("old", 0, revision="1", created="2026-01-01T00:00:00Z")
    odd = rs("odd", 0, revision="x", created="2026-01-02T00:00:00Z")
    new = rs("new", 0, revision="2", created="2026-01-03T00:00:00Z")
    by_rev = util.sort_by_revision([new, odd, old])
    assert [r["metadata"]["name"] for r in by_rev] == ["old", "odd", "new"]
    # Equal revisions: by creation, then name.
    twin = rs("twin", 0, revision="1", created="2026-01-01T00:00:00Z")
    assert [r["metadata"]["name"] for r in util.sort_by_revision([twin, old])] == [
        "old", "twin"]


def test_max_replicas_annotation_parses_as_upstream() -> None:
    # getNonNegativeInt32FromAnnotation: ParseUint, at most MaxInt32.
    for bad in ("-1", "+3", " 3", "2147483648", "abc"):
        r = rs("r", 1)
        r["metadata"].setdefault("annotations", {})[util.MAX_REPLICAS_ANNOTATION] = bad
        assert util.get_max_replicas_annotation(r) == (0, False), bad
    assert util.get_max_replicas_annotation(rs("r", 1, max_replicas=2147483647)) == (
        2147483647, True)


def test_set_new_replica_set_annotations_copies_and_bumps() -> None:
    d = deployment(10, 3, 2)
    d["metadata"]["annotations"] = {"team": "x", util.LAST_APPLIED_CONFIG_ANNOTATION: "{...}",
                                    util.REVISION_ANNOTATION: "9"}
    new = rs("new", 0)
    assert util.set_new_replica_set_annotations(d, new, "1", False, 2000)
    ann = new["metadata"]["annotations"]
    assert ann == {"team": "x", util.REVISION_ANNOTATION: "1",
                   util.DESIRED_REPLICAS_ANNOTATION: "10", util.MAX_REPLICAS_ANNOTATION: "13"}
    # Nothing new: no change.
    assert not util.set_new_replica_set_annotations(d, new, "1", True, 2000)
    # A lower revision never replaces a higher one.
    assert not util.set_new_replica_set_annotations(d, new, "0", True, 2000)


def test_rollback_to_existing_replica_set_records_revision_history() -> None:
    d = deployment(3)
    back = rs("back", 0, revision="1")
    assert util.set_new_replica_set_annotations(d, back, "3", True, 2000)
    assert back["metadata"]["annotations"][util.REVISION_ANNOTATION] == "3"
    assert back["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1"
    util.set_new_replica_set_annotations(d, back, "5", True, 2000)
    assert back["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "1,3"
    # The history is cut from its oldest end to fit the limit.
    util.set_new_replica_set_annotations(d, back, "7", True, 4)
    assert back["metadata"]["annotations"][util.REVISION_HISTORY_ANNOTATION] == "3,5"


def test_replicas_annotations() -> None:
    r = rs("a", 1)
    assert util.replicas_annotations_need_update(r, 3, 4)
    assert util.set_replicas_annotations(r, 3, 4)
    assert not util.replicas_annotations_need_update(r, 3, 4)
    assert not util.set_replicas_annotations(r, 3, 4)
    assert util.get_desired_replicas_annotation(r) == (3, True)
    assert util.get_max_replicas_annotation(r) == (4, True)
    assert util.get_desired_replicas_annotation(rs("b", 1)) == (0, False)


def test_set_deployment_annotations_to_keeps_managed_ones() -> None:
    d = deployment()
    d["metadata"]["annotations"] = {util.REVISION_ANNOTATION: "3", "team": "new"}
    back = rs("back", 0, revision="1")
    back["metadata"]["annotations"]["team"] = "old"
    util.set_deployment_annotations_to(d, back)
    assert d["metadata"]["annotations"] == {util.REVISION_ANNOTATION: "3", "team": "old"}


# -- hash -------------------------------------------------------------------------------------


def test_fnv32a_known_values() -> None:
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968


def test_safe_encode_string_alphabet() -> None:
    assert SAFE_ALPHANUMS == "bcdfghjklmnpqrstvwxz2456789"
    # '0' is byte 48: 48 % 27 = 21 → '4'.
    assert safe_encode_string("0123456789") == "456789bcdf"


def test_hash_stable_and_sensitive() -> None:
    t = template("nginx:1")
    h = compute_hash(t, None)
    assert h and set(h) <= set(SAFE_ALPHANUMS)
    # Key order does not matter; a copy hashes the same.
    reordered = {"spec": t["spec"], "metadata": t["metadata"]}
    assert compute_hash(reordered, None) == h
    assert compute_hash(util.deep_copy(t), None) == h
    # Any change of the template changes it.
    assert compute_hash(template("nginx:2"), None) != h
    assert compute_hash(template("nginx:1", tier="x"), None) != h
    # The collision count changes it; 0 differs from unset.
    assert compute_hash(t, 0) != h
    assert compute_hash(t, 1) != compute_hash(t, 0)


def test_hash_same_in_another_process() -> None:
    code = ("from pykcm.controllers.deployment.hashing import compute_hash;"
            "print(compute_hash({'metadata': {'labels': {'app': 'web'}}, 'spec': {'containers':"
            " [{'name': 'c', 'image': 'nginx:1'}]}}, 2))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env={"PYTHONHASHSEED": "123"}).stdout.strip()
    assert out == compute_hash(template("nginx:1"), 2)


def test_new_replica_set_name_labels_selector_owner() -> None:
    d = deployment(4, 1, 1)
    d["metadata"]["annotations"] = {"team": "x"}
    d["spec"]["minReadySeconds"] = 5
    created = new_replica_set(d, [rs("old", 4)], "1")
    h = compute_hash(d["spec"]["template"], None)
    assert created["metadata"]["name"] == f"web-{h}"
    assert created["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "web",
                                                                 "pod-template-hash": h}
    assert created["spec"]["selector"] == {"matchLabels": {"app": "web",
                                                           "pod-template-hash": h}}
    assert created["spec"]["replicas"] == 1          # maxSurge 1 beside 4 old ones
    assert new_replica_set(d, [], "1")["spec"]["replicas"] == 4
    assert created["spec"]["minReadySeconds"] == 5
    assert created["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid",
        "controller": True, "blockOwnerDeletion": True}]
    assert created["metadata"]["annotations"] == {
        "team": "x", util.REVISION_ANNOTATION: "1", util.DESIRED_REPLICAS_ANNOTATION: "4",
        util.MAX_REPLICAS_ANNOTATION: "5"}
    # The Deployment is untouched, and a collision count gives another name.
    assert "pod-template-hash" not in d["spec"]["template"]["metadata"]["labels"]
    d["status"]["collisionCount"] = 1
    assert new_replica_set(d, [], "1")["metadata"]["name"] == (
        f"web-{compute_hash(d['spec']['template'], 1)}")
    assert compute_hash(d["spec"]["template"], 1) != h


# -- status and conditions --------------------------------------------------------------------


def test_calculate_status_counts_and_available() -> None:
    d = deployment(10, 3, 2)
    d["metadata"]["generation"] = 4
    d["status"] = {"collisionCount": 2}
    old = rs("old", 6, 6, readyReplicas=6, observedGeneration=1, terminatingReplicas=1)
    new = rs("new", 5, 2, readyReplicas=3, observedGeneration=1, terminatingReplicas=0)
    st = calculate_status([old, new], new, d)
    assert {k: v for k, v in st.items() if k != "conditions"} == {
        "observedGeneration": 4, "replicas": 11, "updatedReplicas": 5, "readyReplicas": 9,
        "availableReplicas": 8, "unavailableReplicas": 3, "terminatingReplicas": 1,
        "collisionCount": 2}
    cond = util.get_deployment_condition(st, util.AVAILABLE)
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "True", util.MINIMUM_REPLICAS_AVAILABLE)          # 8 >= 10 - 2
    # The feature gate off: no terminatingReplicas.
    assert "terminatingReplicas" not in calculate_status([old, new], new, d, False)
    new["status"]["availableReplicas"] = 1
    st = calculate_status([old, new], new, d)
    cond = util.get_deployment_condition(st, util.AVAILABLE)
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False", util.MINIMUM_REPLICAS_UNAVAILABLE)
    # A synced ReplicaSet without terminatingReplicas makes the sum unknown.
    del old["status"]["terminatingReplicas"]
    assert "terminatingReplicas" not in calculate_status([old, new], new, d)
    # More available than desired is not negative unavailability; zeros are omitted.
    st = calculate_status([rs("x", 2, 5)], None, deployment(2))
    assert "unavailableReplicas" not in st and "updatedReplicas" not in st


def test_set_deployment_condition_transitions() -> None:
    status: dict[str, Any] = {}
    first = util.new_deployment_condition(util.PROGRESSING, "True", util.NEW_RS_REASON, "m",
                                          now=T0)
    util.set_deployment_condition(status, first)
    # Same status and reason: nothing changes, not even lastUpdateTime.
    util.set_deployment_condition(status, util.new_deployment_condition(
        util.PROGRESSING, "True", util.NEW_RS_REASON, "other", now=T0 + 60))
    assert status["conditions"] == [first]
    # Same status, new reason: transition time kept, update time moves.
    util.set_deployment_condition(status, util.new_deployment_condition(
        util.PROGRESSING, "True", util.REPLICA_SET_UPDATED_REASON, "m", now=T0 + 60))
    (c,) = status["conditions"]
    assert c["lastTransitionTime"] == first["lastTransitionTime"]
    assert c["lastUpdateTime"] == util.now_rfc3339(T0 + 60)
    # New status: both move.
    util.set_deployment_condition(status, util.new_deployment_condition(
        util.PROGRESSING, "False", util.TIMED_OUT_REASON, "m", now=T0 + 120))
    (c,) = status["conditions"]
    assert c["lastTransitionTime"] == util.now_rfc3339(T0 + 120)
    util.remove_deployment_condition(status, util.PROGRESSING)
    assert "conditions" not in status


def _progressing(d: dict[str, Any], status: dict[str, Any]) -> tuple[str, str]:
    c = util.get_deployment_condition(status, util.PROGRESSING)
    assert c is not None
    return c["status"], c["reason"]


def test_rollout_status_progress_complete_and_timeout() -> None:
    d = deployment(3, 1, 0, progressDeadlineSeconds=60)
    d["status"] = {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
                   "availableReplicas": 3, "conditions": [util.new_deployment_condition(
                       util.PROGRESSING, "True", util.NEW_RS_REASON, "created", now=T0)]}
    old = rs("old", 2, 2)
    new = rs("new", 2, 1, created="2026-02-01T00:00:00Z")
    # One more updated replica: progress; transition time kept, update time now.
    st = rollout_status([old, new], new, d, now=T0 + 30)
    assert _progressing(d, st) == ("True", util.REPLICA_SET_UPDATED_REASON)
    c = util.get_deployment_condition(st, util.PROGRESSING)
    assert c is not None and c["message"] == 'ReplicaSet "new" is progressing.'
    assert c["lastTransitionTime"] == util.now_rfc3339(T0)
    assert c["lastUpdateTime"] == util.now_rfc3339(T0 + 30)
    # No progress within the deadline: still the old condition; after it: timed out.
    d["status"]["updatedReplicas"] = 2
    d["status"]["replicas"] = 4
    st = rollout_status([old, new], new, d, now=T0 + 30)
    assert _progressing(d, st) == ("True", util.NEW_RS_REASON)
    assert stuck_deployment_delay(d, st, now=T0 + 30) == 30
    st = rollout_status([old, new], new, d, now=T0 + 61)
    assert _progressing(d, st) == ("False", util.TIMED_OUT_REASON)
    c = util.get_deployment_condition(st, util.PROGRESSING)
    assert c is not None and c["message"] == 'ReplicaSet "new" has timed out progressing.'
    # Complete: NewReplicaSetAvailable, and nothing left to re-check.
    done = rs("new", 3, 3, created="2026-02-01T00:00:00Z")
    st = rollout_status([rs("old", 0, 0), done], done, d, now=T0 + 90)
    assert _progressing(d, st) == ("True", util.NEW_RS_AVAILABLE_REASON)
    assert stuck_deployment_delay(d, st, now=T0 + 90) is None


def test_rollout_status_without_deadline_has_no_progressing() -> None:
    d = deployment(1)
    del d["spec"]["progressDeadlineSeconds"]
    d["status"] = {"conditions": [util.new_deployment_condition(
        util.PROGRESSING, "True", util.NEW_RS_REASON, "m", now=T0)]}
    st = rollout_status([rs("new", 1, 1)], rs("new", 1, 1), d)
    assert util.get_deployment_condition(st, util.PROGRESSING) is None
    assert util.get_deployment_condition(st, util.AVAILABLE) is not None


def test_rollout_status_copies_replica_failure() -> None:
    d = deployment(1)
    failure = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
               "message": "quota", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    new = rs("new", 1, 0, conditions=[failure])
    st = rollout_status([new], new, d)
    c = util.get_deployment_condition(st, util.REPLICA_FAILURE)
    assert c is not None and (c["reason"], c["lastUpdateTime"]) == (
        "FailedCreate", "2026-01-01T00:00:00Z")
    d["status"] = st
    st = rollout_status([rs("new", 1, 1)], rs("new", 1, 1), d)
    assert util.get_deployment_condition(st, util.REPLICA_FAILURE) is None


def test_deployment_timed_out_rules() -> None:
    d = deployment(1, progressDeadlineSeconds=10)
    status: dict[str, Any] = {}
    assert not util.deployment_timed_out(d, status, now=T0)           # no condition
    util.set_deployment_condition(status, util.new_deployment_condition(
        util.PROGRESSING, "True", util.NEW_RS_AVAILABLE_REASON, "m", now=T0))
    assert not util.deployment_timed_out(d, status, now=T0 + 100)     # complete never times out
    status = {}
    util.set_deployment_condition(status, util.new_deployment_condition(
        util.PROGRESSING, "True", util.REPLICA_SET_UPDATED_REASON, "m", now=T0))
    assert not util.deployment_timed_out(d, status, now=T0 + 10)
    assert util.deployment_timed_out(d, status, now=T0 + 11)
    d["spec"]["progressDeadlineSeconds"] = 2**31 - 1                  # MaxInt32: no deadline
    assert not util.deployment_timed_out(d, status, now=T0 + 10**6)


def test_deployment_complete_and_progressing() -> None:
    d = deployment(3)
    d["metadata"]["generation"] = 2
    full = {"updatedReplicas": 3, "replicas": 3, "availableReplicas": 3}
    assert not util.deployment_complete(d, {**full, "observedGeneration": 1})
    assert util.deployment_complete(d, {**full, "observedGeneration": 2})
    d["status"] = {"replicas": 4, "updatedReplicas": 1, "readyReplicas": 3,
                   "availableReplicas": 3}
    same = dict(d["status"])
    assert not util.deployment_progressing(d, same)
    assert util.deployment_progressing(d, {**same, "updatedReplicas": 2})
    assert util.deployment_progressing(d, {**same, "replicas": 3})       # fewer old
    assert util.deployment_progressing(d, {**same, "readyReplicas": 4})
    assert util.deployment_progressing(d, {**same, "availableReplicas": 4})


def test_old_pods_running() -> None:
    new = rs("new", 0)
    old = rs("old", 0)
    assert not old_pods_running(new, [old], {})
    assert old_pods_running(new, [rs("old", 0, actual=1)], {})         # status says so
    running = {"status": {"phase": "Running"}}
    done = {"status": {"phase": "Succeeded"}}
    unknown = {"status": {"phase": "Unknown"}}
    assert not old_pods_running(new, [old], {"new-uid": [running]})      # the new one's pods
    assert not old_pods_running(new, [old], {"old-uid": [done]})         # terminal
    assert old_pods_running(new, [old], {"old-uid": [done, unknown]})
    assert old_pods_running(None, [old], {"old-uid": [running]})


def test_get_deployments_for_replica_set() -> None:
    d1 = deployment()
    d2 = deployment()
    d2["metadata"]["namespace"] = "other"
    d3 = deployment()
    d3["spec"]["selector"] = {}
    assert util.get_deployments_for_replica_set([d1, d2, d3], rs("a", 1)) == [d1]
    no_labels = rs("a", 1)
    no_labels["metadata"]["labels"] = {}
    assert util.get_deployments_for_replica_set([d1], no_labels) == []
