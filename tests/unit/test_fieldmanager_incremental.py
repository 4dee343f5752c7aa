"""The shortcuts of FieldManager.update give the general path's result.

An Update edits the live object's fieldsV1 entries path by path (fields_v1_edit), a
create builds its one entry in place; these tests run random creates and write
sequences through both paths and compare the objects byte for byte, and check the
edits against PathSet algebra.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from pykcm.apiserver.fieldmanager import FieldManager, fields_v1, fields_v1_edit
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.reset_fields import reset_fields
from pykcm.apiserver.fieldmanager.schema import for_builtin
from pykcm.apiserver.registry.defaults import zero_object_fields

T = "2026-12-02T03:00:00Z"


class _General(FieldManager):
    """The same manager with the shortcut off: every Update decodes and re-encodes."""

    def _update_entries(self, live: dict[str, Any], new: dict[str, Any], manager: str
                        ) -> dict[str, Any] | None:
        return None

    def _create_entry(self, new: dict[str, Any], manager: str) -> dict[str, Any] | None:
        return None


def _managers(sub: str = "") -> tuple[FieldManager, FieldManager]:
    s = for_builtin("apps", "v1", "Deployment")
    assert s is not None
    kw: dict[str, Any] = {"subresource": sub, "reset_fields": reset_fields("apps", "deployments",
                                                                          sub),
                          "zero_fields": zero_object_fields("apps", "Deployment")[0],
                          "now": lambda: T}
    return (FieldManager(s, "apps", "v1", "Deployment", **kw),
            _General(s, "apps", "v1", "Deployment", **kw))


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u",
                         "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [
                                      {"name": "web", "image": "nginx:1",
                                       "env": [{"name": "A", "value": "1"}],
                                       "ports": [{"containerPort": 80,
                                                  "protocol": "TCP"}]}]}}}}


def _mutate(rng: random.Random, obj: dict[str, Any]) -> None:
    meta, spec = obj["metadata"], obj["spec"]
    containers = spec["template"]["spec"]["containers"]
    choice = rng.randrange(9)
    if choice == 0:
        meta.setdefault("labels", {})[f"l{rng.randrange(4)}"] = str(rng.randrange(3))
    elif choice == 1 and meta.get("labels"):
        meta["labels"].pop(rng.choice(sorted(meta["labels"])))
        if not meta["labels"]:
            del meta["labels"]
    elif choice == 2:
        spec["replicas"] = rng.randrange(5)
    elif choice == 3:
        containers.append({"name": f"c{rng.randrange(100)}", "image": "busybox"})
        names = [c["name"] for c in containers]
        if len(set(names)) != len(names):
            containers.pop()
    elif choice == 4 and len(containers) > 1:
        containers.pop(rng.randrange(len(containers)))
    elif choice == 5:
        c = rng.choice(containers)
        c["image"] = f"nginx:{rng.randrange(4)}"
    elif choice == 6:
        c = rng.choice(containers)
        env = c.setdefault("env", [])
        env.append({"name": f"E{rng.randrange(50)}", "value": "x"})
        if len({e["name"] for e in env}) != len(env):
            env.pop()
    elif choice == 7:
        obj["status"] = {"replicas": rng.randrange(3), "observedGeneration": 1}
    else:
        ann = meta.setdefault("annotations", {})
        ann["a"] = str(rng.randrange(3))


def test_random_updates_give_the_general_path_s_entries() -> None:
    for sub in ("", "status"):
        fast, general = _managers(sub)
        creator = _managers()[1]
        for seed in range(40):
            rng = random.Random(seed)
            live = creator.update(None, _deployment(), "creator")
            for _ in range(12):
                new = copy.deepcopy(live)
                for _ in range(rng.randrange(1, 4)):
                    _mutate(rng, new)
                manager = rng.choice(["a", "b", "kube-controller-manager", "creator"])
                got = fast.update(copy.deepcopy(live), copy.deepcopy(new), manager)
                want = general.update(copy.deepcopy(live), copy.deepcopy(new), manager)
                assert json.dumps(got) == json.dumps(want), (sub, seed)
                live = want


def test_creates_give_the_general_path_s_entry() -> None:
    for sub in ("", "status"):
        fast, general = _managers(sub)
        for seed in range(40):
            rng = random.Random(seed)
            obj = _deployment()
            del obj["metadata"]["uid"]
            for _ in range(rng.randrange(6)):
                _mutate(rng, obj)
            got = fast.update(None, copy.deepcopy(obj), "creator")
            assert json.dumps(got) == json.dumps(general.update(None, obj, "creator")), seed


def test_an_update_that_changes_nothing_keeps_the_entries() -> None:
    fast, general = _managers()
    live = general.update(None, _deployment(), "creator")
    out = fast.update(copy.deepcopy(live), copy.deepcopy(live), "other")
    assert out["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_eleventh_updater_takes_the_general_path_s_ancient_changes() -> None:
    fast, general = _managers()
    live = general.update(None, _deployment(), "m0")
    for i in range(1, 12):
        new = copy.deepcopy(live)
        new["metadata"]["labels"][f"k{i}"] = "v"
        got = fast.update(copy.deepcopy(live), copy.deepcopy(new), f"m{i}")
        live = general.update(copy.deepcopy(live), new, f"m{i}")
        assert json.dumps(got) == json.dumps(live), i
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert "ancient-changes" in managers
    assert len(managers) == 10


def _set(*paths: tuple[str, ...]) -> PathSet:
    from pykcm.apiserver.fieldmanager.path import field
    return PathSet.of(*[[field(p) for p in path] for path in paths])


def test_insert_and_remove_match_the_set_algebra() -> None:
    rng = random.Random(7)
    universe = [("a",), ("a", "b"), ("a", "c"), ("a", "b", "d"), ("e",), ("e", "f"), ("g",)]
    for _ in range(300):
        members = [p for p in universe if rng.random() < 0.5]
        s = _set(*members)
        tree = fields_v1.to_json(s)
        p = rng.choice(universe)
        keys = tuple("f:" + x for x in p)
        before = json.dumps(tree)
        assert json.dumps(fields_v1_edit.insert(tree, keys)) == json.dumps(
            fields_v1.to_json(s.union(_set(p))))
        assert json.dumps(fields_v1_edit.remove(tree, keys)) == json.dumps(
            fields_v1.to_json(s.difference(_set(p))))
        assert json.dumps(tree) == before       # never mutated
