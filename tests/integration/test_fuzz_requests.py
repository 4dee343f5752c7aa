"""A seeded fuzz corpus of malformed requests over every served resource and verb (issue 17).

Each request is built from a resource's minimal valid object (the differential suite's
generators.RESOURCES) by a few random mutations: a value of another JSON type anywhere in
the body (metadata, labels, finalizers, ownerReferences, spec), odd numbers (fractions,
2**64, 1e999), deep nesting, unknown keys; YAML bodies with anchors and tags; garbage
bodies and content types (text/plain, protobuf garbage, gzip claims); patches of every type
with wrong shapes; DeleteOptions of the wrong types; query parameters that do not parse;
names and paths no route or key allows; unknown methods. What must hold, for every answer:

- no 5xx but the bare 500s kube-apiserver itself answers (storage key errors,
  unparsable resourceVersions): never an InternalError with a Python exception's text;
- every error body is a metav1.Status whose code is the HTTP status; a NotFound carries
  `details` (kubectl debug dereferences it);
- whatever a write stored decodes into its kind's Go struct (go_types.py): nothing of
  the wrong JSON type is ever stored;
- the server answers /readyz throughout (probed from another thread every 50 ms; the
  slowest answer is printed, not asserted: timings are not deterministic).

PYKCM_FUZZ_REQUESTS (default 700) sets the number of requests, PYKCM_FUZZ_SEED the seed.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from pykcm.apiserver.serializer.go_types import GoDecodeError, check_object
from pykcm.testing.server_thread import ServerThread
from tests.conftest import Api
from tests.differential.apiserver.generators import RESOURCES, Res

N_REQUESTS = int(os.environ.get("PYKCM_FUZZ_REQUESTS", "700"))
SEED = int(os.environ.get("PYKCM_FUZZ_SEED", "17"))

# kube-apiserver's own bare 500s (no reason): an error the storage or a parser returns as is
UPSTREAM_BARE_500 = ("invalid key: ", "etcdserver: request is too large",
                     "rpc error: code = ResourceExhausted", 'resourceVersion: Invalid value: ',
                     "strconv.ParseUint: ", "target.name: Required value")

_ODD_VALUES: list[Any] = [
    5, -1, 1.5, 2**63, 2**64, 1e300, True, False, None, "", "x", "0", "1e999999999", "1Gi",
    [], [1], ["x"], [None], [{}], {}, {"a": 1}, {"a": "b"}, {"": ""}, "\u2028\x00",
    "2020-13-01T00:00:00Z", "2026-01-02T03:04:05Z", "a" * 300, {"$patch": "delete"},
    [[[[[[[[]]]]]]]],
]
_CONTENT_TYPES = ["application/json", "application/yaml", "text/plain", "",
                  "application/vnd.kubernetes.protobuf", "application/json; charset=utf-8",
                  "application/merge-patch+json", "multipart/form-data; boundary=x"]
_PATCH_TYPES = ["application/merge-patch+json", "application/json-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml",
                "application/json"]
_QUERY_NOISE = [
    {"resourceVersion": "abc"}, {"resourceVersion": "-1"}, {"resourceVersion": "1" * 30},
    {"limit": "x"}, {"limit": "-3"}, {"continue": "%%%"}, {"continue": "e30"},
    {"labelSelector": "a in (b"}, {"labelSelector": "!!"}, {"fieldSelector": "x==y==z"},
    {"fieldSelector": "metadata.name=a,spec.nope=b"}, {"dryRun": "Yes"}, {"dryRun": "All"},
    {"gracePeriodSeconds": "ten"}, {"propagationPolicy": "Sideways"},
    {"fieldValidation": "Loose"}, {"fieldValidation": "Strict"},
    {"resourceVersionMatch": "Exact"}, {"timeoutSeconds": "z"}, {"watch": "maybe"},
]
_YAML_BODIES = [
    "a: &a [1, 2]\nb: *a\nmetadata: {name: y1}\n",
    "metadata:\n  name: y2\n  labels: !!binary aGVsbG8=\n",
    "metadata:\n  name: y3\n  creationTimestamp: 2001-12-14t21:59:43.10-05:00\n",
    "metadata: {name: y4}\nspec: !!float .nan\n",
    "metadata: {name: y5}\n? [a]\n: b\n",
    "metadata: {name: y6}\nx: !unknown tag\n",
    "- just\n- a list\n",
    "metadata: {name: y7}\n---\nmetadata: {name: y8}\n",
    "metadata:\n  name: y9\n  annotations: &a {k: v}\n  labels: *a\n",
    "\t\tmetadata: {",
]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value in a JSON document (dict keys and list indices)."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _mutate(rnd: random.Random, body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    for _ in range(rnd.randint(1, 3)):
        kind = rnd.random()
        if kind < 0.5:
            paths = [p for p in _paths(body) if p and p[0] not in ("apiVersion", "kind")]
            if paths:
                _set(body, rnd.choice(paths), copy.deepcopy(rnd.choice(_ODD_VALUES)))
        elif kind < 0.8:
            meta = body.setdefault("metadata", {})
            if isinstance(meta, dict):
                meta[rnd.choice(["labels", "annotations", "finalizers", "ownerReferences",
                                 "generation", "uid", "resourceVersion", "deletionTimestamp",
                                 "managedFields", "namespace", "generateName"])] = copy.deepcopy(
                    rnd.choice(_ODD_VALUES))
        else:
            target: Any = body
            for _ in range(rnd.randint(1, 3)):
                if not isinstance(target, dict):
                    break
                key = rnd.choice([*target.keys(), "spec", "status", "unknown"])
                target = target.setdefault(key, {}) if isinstance(target.get(key, {}),
                                                                  dict) else target[key]
            if isinstance(target, dict):
                target[rnd.choice(["x", "replicas", "data", "items", "0"])] = copy.deepcopy(
                    rnd.choice(_ODD_VALUES))
    return body


class _Fuzzer:
    def __init__(self, api: Api, ns: str, rnd: random.Random) -> None:
        self.api = api
        self.ns = ns
        self.rnd = rnd
        self.seen: list[tuple[str, str, int]] = []

    def base(self, res: Res, name: str) -> dict[str, Any]:
        body = json.loads(json.dumps(res.new(name=name)).replace("{ns}", self.ns))
        return body  # type: ignore[no-any-return]

    def one(self) -> tuple[str, str, requests.Response, Res]:
        rnd = self.rnd
        res = rnd.choice(RESOURCES)
        coll = res.coll.replace("{ns}", self.ns)
        name = rnd.choice(["f-" + str(rnd.randrange(40)), "%2e%2e", "a%25b", "UPPER", "x" * 300,
                           "a%0ab", "fuzz"])
        verb = rnd.choice(["create", "create", "create", "update", "patch", "patch", "delete",
                           "deletecollection", "get", "list", "watch", "odd"])
        query: dict[str, str] = {}
        if rnd.random() < 0.3:
            query.update(rnd.choice(_QUERY_NOISE))
        headers: dict[str, str] = {}
        data: bytes | None = None
        method, path = "GET", coll
        body = _mutate(rnd, self.base(res, name)) if rnd.random() < 0.8 else self.base(res, name)
        if verb in ("create", "update"):
            method = "POST" if verb == "create" else "PUT"
            path = coll if verb == "create" else f"{coll}/{name}"
            r = rnd.random()
            if r < 0.7:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            elif r < 0.85:
                data = rnd.choice(_YAML_BODIES).encode()
                headers["Content-Type"] = "application/yaml"
            else:
                data = rnd.choice([b"garbage", b"\x00\x01\x02", b"[1,2]", b"null", b"{",
                                   gzip.compress(json.dumps(body).encode()), b"k8s\x00\x0a\x05"])
                headers["Content-Type"] = rnd.choice(_CONTENT_TYPES)
                if rnd.random() < 0.5:
                    headers["Content-Encoding"] = "gzip"
        elif verb == "patch":
            method, path = "PATCH", f"{coll}/{name}" + rnd.choice(["", "", "/status", "/scale"])
            ctype = rnd.choice(_PATCH_TYPES)
            headers["Content-Type"] = ctype
            if ctype == "application/json-patch+json":
                ops = [{"op": rnd.choice(["add", "replace", "remove", "copy", "move", "test",
                                          "nope", 5]),
                        "path": rnd.choice(["/metadata/labels", "/spec", "/data", "/x/y", "",
                                            "/metadata/finalizers/-", 7]),
                        "from": rnd.choice(["/metadata", "/spec", "/nope"]),
                        "value": copy.deepcopy(rnd.choice(_ODD_VALUES))}
                       for _ in range(rnd.randint(0, 4))]
                data = json.dumps(rnd.choice([ops, ops, {"op": "add"}, "x"])).encode()
            else:
                patch = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
                data = json.dumps(rnd.choice([patch, patch, [1], "x", None])).encode()
        elif verb == "delete":
            method, path = "DELETE", f"{coll}/{name}"
            if rnd.random() < 0.7:
                opts = {rnd.choice(["gracePeriodSeconds", "propagationPolicy", "preconditions",
                                    "orphanDependents", "dryRun", "kind", "apiVersion"]):
                        copy.deepcopy(rnd.choice(_ODD_VALUES))}
                data = json.dumps(rnd.choice([opts, opts, [1], "x"])).encode()
                headers["Content-Type"] = "application/json"
        elif verb == "deletecollection":
            method = "DELETE"
            # a selector nothing of the corpus carries: the fuzz must not empty collections
            query.setdefault("labelSelector", "fuzz-never=set")
        elif verb == "get":
            path = f"{coll}/{name}"
        elif verb == "watch":
            query.update({"watch": "1", "timeoutSeconds": "1"})
        else:
            method = rnd.choice(["PROPFIND", "OPTIONS", "TRACE", "CONNECT", "PUT", "POST"])
            path = rnd.choice([coll.replace("/v1/", "//v1/", 1), coll + "//" + name,
                               coll.replace("/namespaces/", "/namespaces/%2e%2e/", 1),
                               "/api/v1/" + res.family, coll + "/" + name + "/nope/more"])
        # a watch is answered by its headers: read no further (its stream would last 1 s)
        resp = self.api.session.request(method, self.api.base + path, params=query,
                                        data=data, headers=headers, timeout=30,
                                        stream=verb == "watch")
        if verb == "watch" and resp.status_code == 200:
            resp.close()
        return method, path, resp, res

    def check(self, method: str, path: str, resp: requests.Response, res: Res) -> None:
        sent = resp.request.body
        sent_text = sent[:2000] if isinstance(sent, (bytes, str)) else sent
        where = (f"{method} {path} ({resp.request.headers.get('Content-Type')}: {sent_text!r}) "
                 f"-> {resp.status_code} {resp.text[:300]!r}")
        if resp.status_code == 404 and resp.text == "404 page not found\n":
            return  # the mux of an unserved group path: plain text upstream too
        if "watch=1" in resp.url and resp.status_code == 200:
            return
        try:
            body = resp.json()
        except ValueError:
            pytest.fail(f"not JSON: {where}")
        if resp.status_code >= 400:
            assert isinstance(body, dict) and body.get("kind") == "Status", where
            assert body.get("code") == resp.status_code, where
            if resp.status_code >= 500:
                assert body.get("reason", "") == "" and str(body.get("message", "")).startswith(
                    UPSTREAM_BARE_500), f"a server error: {where}"
            if resp.status_code == 404:
                assert isinstance(body.get("details"), dict), f"NotFound without details: {where}"
            return
        if resp.status_code in (200, 201) and method in ("POST", "PUT", "PATCH") and isinstance(
                body, dict) and body.get("kind") not in ("Status", "Scale", None):
            self.check_stored(res, body, where)

    def check_stored(self, res: Res, obj: dict[str, Any], where: str) -> None:
        group, _, version = res.api_version.rpartition("/")
        try:
            check_object(group, version, res.kind, obj)
        except GoDecodeError as exc:
            pytest.fail(f"stored an object Go could not decode ({exc}): {where}")


def _readyz_probe(api: Api, stop: threading.Event, out: dict[str, Any]) -> None:
    s = requests.Session()
    s.trust_env = False
    s.verify = api.ca_path
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            r = s.get(api.base + "/readyz", timeout=30)
            out["codes"].append(r.status_code)
        except requests.RequestException as exc:
            out["codes"].append(repr(exc))
        out["max"] = max(out["max"], time.monotonic() - t0)
        stop.wait(0.05)


def test_fuzz_every_resource_and_verb(
        pykcm_apiserver_factory: Callable[..., ServerThread]) -> None:
    st = pykcm_apiserver_factory()
    api = Api(st)
    ns = api.ns()
    code, sa = api.post(f"/api/v1/namespaces/{ns}/serviceaccounts",
                        {"metadata": {"name": "default"}})
    assert code in (201, 409), sa
    rnd = random.Random(SEED)
    fz = _Fuzzer(api, ns, rnd)
    probe: dict[str, Any] = {"codes": [], "max": 0.0}
    stop = threading.Event()
    t = threading.Thread(target=_readyz_probe, args=(api, stop, probe), daemon=True)
    t.start()
    codes: dict[int, int] = {}
    try:
        for _ in range(N_REQUESTS):
            method, path, resp, res = fz.one()
            codes[resp.status_code] = codes.get(resp.status_code, 0) + 1
            fz.check(method, path, resp, res)
    finally:
        stop.set()
        t.join()
    # whatever the fuzz left stored still decodes as its kind
    for res in RESOURCES:
        code, lst = api.get(res.coll.replace("{ns}", ns))
        if code == 200:
            for item in lst.get("items") or []:
                fz.check_stored(res, item, f"listed {res.coll}")
    assert probe["codes"] and set(probe["codes"]) == {200}, probe["codes"]
    print(f"\nfuzz: {N_REQUESTS} requests (seed {SEED}), answers {dict(sorted(codes.items()))}; "
          f"/readyz answered {len(probe['codes'])} times, slowest {probe['max'] * 1000:.0f} ms")
