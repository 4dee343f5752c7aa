"""The differential runner: one corpus of request sequences, two API servers, one verdict.

Data flow::

    cases/*.yaml + generators.py ──load──► Case(steps)          (corpus.py)
        │ per case and per server, independently (a thread pool):
        ▼
    run_case(case, target) ── placeholders expanded ({ns}, {name}, {saved.path})
        │  a fresh namespace (+ its `default` ServiceAccount) when the case uses {ns};
        │  each step: one HTTP request, or a WATCH read for N events
        ▼
    StepResult(code, content type, warnings, body | events)
        │  normalize(): masks what legitimately differs between two servers
        ▼
    diff(kube, pykcm) ──► [Diff(path, kube, pykcm)] ── allowlist.yaml ──► unexplained ones fail

The two servers never run a case in lockstep: each gets its own namespace
and its own run, and the references a case makes to earlier responses
(``{created.metadata.resourceVersion}``) resolve against that server's own
answers. After both runs the results are compared step by step.

What is masked (not a difference, so not in the allowlist): uids (each
distinct uid of a case becomes ``<uid:N>`` in order of first appearance, so
references between objects still compare), resourceVersion values and
continue tokens, timestamps, the random suffix of generated names, cluster
IPs and node ports, ``Age``-like Table cells (the type ``date`` columns),
numbers in Status messages that are resource versions, the random suffix of
a pod's ``kube-api-access-*`` token volume, and signed tokens (JWTs: each
server signs with its own key): a token is compared as its decoded header
and claims, with the key id masked and times relative to ``iat``. Everything else is
compared; differences that are known and accepted are in allowlist.yaml, each
with its reason. The real control plane must be quiet (its support
controller manager stopped): a controller writing beside a case would race it.

After a case, the objects it created that a controller could act on (pods,
workloads, services, nodes, namespaces, CRDs) are deleted again (finalizers
cleared), so that the session servers other tests share are left usable.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

HERE = Path(__file__).resolve().parent
ALLOWLIST = HERE / "allowlist.yaml"

CONTENT_TYPES = {
    "json": "application/json",
    "json-patch": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
    "yaml": "application/yaml",
}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
ACCEPTS = {"table": TABLE, "json": "application/json"}

STEP_KEYS = {"req", "body", "raw", "type", "query", "headers", "accept", "save", "watch",
             "status", "compare", "doc", "timeout", "retry"}
CASE_KEYS = {"name", "doc", "steps", "namespace"}


class CorpusError(ValueError):
    """A malformed case (the message names the file and the case)."""


# -- the corpus ------------------------------------------------------------------------------

@dataclass
class Step:
    method: str
    path: str
    body: Any = None
    raw: str | None = None
    content_type: str | None = None
    query: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    save: str | None = None
    watch: int | None = None
    status: int | None = None
    compare: bool = True
    timeout: float = 5.0
    retry: float = 0.0  # seconds to repeat the request until it answers `status`

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class Case:
    group: str   # the corpus file (without .yaml) or the generator family
    name: str
    steps: list[Step]
    doc: str = ""
    # None: a fresh namespace when some step uses {ns}; False: none; a string: a namespace
    # shared by the cases that name the same one (they must not see each other's objects:
    # generated families share one per family and resource storage)
    namespace: bool | str | None = None

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"

    def uses_namespace(self) -> bool:
        if self.namespace is not None:
            return bool(self.namespace)
        return "{ns}" in json.dumps([_step_text(s) for s in self.steps])


def _step_text(s: Step) -> Any:
    return [s.path, s.body, s.raw, s.query, s.headers]


def parse_step(d: Any, where: str) -> Step:
    if not isinstance(d, dict):
        raise CorpusError(f"{where}: a step must be a mapping, not {d!r}")
    unknown = set(d) - STEP_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown step keys {sorted(unknown)}")
    req = d.get("req")
    if not isinstance(req, str) or " " not in req:
        raise CorpusError(f"{where}: `req` must be 'METHOD /path', not {req!r}")
    method, _, path = req.partition(" ")
    if "body" in d and "raw" in d:
        raise CorpusError(f"{where}: `body` and `raw` exclude each other")
    ctype = d.get("type")
    if ctype is not None:
        ctype = CONTENT_TYPES.get(ctype, ctype)
    headers = {str(k): str(v) for k, v in (d.get("headers") or {}).items()}
    if d.get("accept"):
        headers["Accept"] = ACCEPTS.get(d["accept"], d["accept"])
    return Step(method=method.upper(), path=path.strip(), body=d.get("body"), raw=d.get("raw"),
                content_type=ctype, query=dict(d.get("query") or {}), headers=headers,
                save=d.get("save"), watch=d.get("watch"), status=d.get("status"),
                compare=d.get("compare", True), timeout=float(d.get("timeout", 5.0)),
                retry=float(d.get("retry", 0.0)))


def parse_case(group: str, d: Any, where: str) -> Case:
    if not isinstance(d, dict) or "name" not in d or "steps" not in d:
        raise CorpusError(f"{where}: a case needs `name` and `steps`")
    unknown = set(d) - CASE_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown case keys {sorted(unknown)}")
    steps = [parse_step(s, f"{where} step {i + 1}") for i, s in enumerate(d["steps"])]
    return Case(group=group, name=str(d["name"]), steps=steps, doc=str(d.get("doc") or ""),
                namespace=d.get("namespace"))


def load_file(path: Path) -> list[Case]:
    data = yaml.safe_load(path.read_text())
    group = path.stem
    cases = [parse_case(group, c, f"{path.name}: case {i + 1} ({c.get('name', '?')})")
             for i, c in enumerate(data.get("cases") or [])]
    _check_unique(cases, path.name)
    return cases


def _check_unique(cases: list[Case], where: str) -> None:
    seen: set[str] = set()
    for c in cases:
        if c.name in seen:
            raise CorpusError(f"{where}: duplicate case name {c.name!r}")
        seen.add(c.name)


# -- placeholders ----------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_./~-]+|\[\d+\])*)\}")


def _lookup(root: Any, path: str) -> Any:
    cur = root
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            cur = cur[int(part[1:-1])]
        elif isinstance(cur, dict):
            cur = cur[part.replace("~1", "/").replace("~0", "~")]
        else:
            raise KeyError(part)
    return cur


class Vars:
    """The values a case's placeholders resolve to on one server."""

    def __init__(self, ns: str, name: str, run: str) -> None:
        self.plain = {"ns": ns, "name": name, "run": run}
        self.saved: dict[str, Any] = {}

    def resolve(self, expr: str) -> Any:
        if expr in self.plain:
            return self.plain[expr]
        head, _, rest = expr.partition(".")
        if head not in self.saved:
            raise CorpusError(f"unknown placeholder {{{expr}}}")
        try:
            return _lookup(self.saved[head], rest) if rest else self.saved[head]
        except (KeyError, IndexError, TypeError):
            # The saved response lacks the field (e.g. the write failed on this server):
            # the request goes out with a marker, and the difference shows up in the answers.
            return f"<missing {expr}>"

    def expand(self, v: Any) -> Any:
        if isinstance(v, dict) and "$saved" in v:
            # {$saved: NAME, $merge: PATCH}: a saved answer with a merge patch applied
            base = copy.deepcopy(self.resolve(str(v["$saved"])))
            return merge_patch(base, self.expand(v.get("$merge") or {}))
        if isinstance(v, str):
            m = _PLACEHOLDER.fullmatch(v)
            if m:  # the whole string: keep the referenced value's type
                return self.resolve(m.group(1))
            return _PLACEHOLDER.sub(lambda m: str(self.resolve(m.group(1))), v)
        if isinstance(v, list):
            return [self.expand(x) for x in v]
        if isinstance(v, dict):
            return {self.expand(k): self.expand(x) for k, x in v.items()}
        return v


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (for `$merge` in case bodies)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# -- running ---------------------------------------------------------------------------------

@dataclass
class Target:
    """One API server: base URL, bearer token, CA bundle file."""

    name: str
    url: str
    token: str
    ca_file: str
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def session(self) -> requests.Session:
        s: requests.Session | None = getattr(self._local, "session", None)
        if s is None:
            s = requests.Session()
            s.trust_env = False  # REQUESTS_CA_BUNDLE etc. would override verify=
            s.verify = self.ca_file
            s.headers["Authorization"] = f"Bearer {self.token}"
            s.headers["User-Agent"] = "pykcm-differential"
            self._local.session = s
        return s


@dataclass
class StepResult:
    code: int
    content_type: str
    warnings: list[str]
    body: Any  # parsed JSON, text, or for a watch the list of events read
    error: str = ""  # a transport error instead of an answer
    generate_names: list[str] = field(default_factory=list)  # generateName values sent

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code, "contentType": self.content_type,
                             "warnings": self.warnings, "body": self.body}
        if self.error:
            d["error"] = self.error
        return d


def _content_type(h: str | None) -> str:
    if not h:
        return ""
    parts = [p.strip() for p in h.split(";")]
    return ";".join(p for p in parts if p and not p.lower().startswith("charset"))


def _warnings(r: requests.Response) -> list[str]:
    raw = r.raw.headers.getlist("Warning") if hasattr(r.raw.headers, "getlist") else []
    return sorted(raw)


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


def send(target: Target, step: Step, v: Vars) -> StepResult:
    path = v.expand(step.path)
    query = {k: v.expand(x) for k, x in step.query.items()}
    headers = {k: str(v.expand(x)) for k, x in step.headers.items()}
    data: bytes | None = None
    if step.raw is not None:
        data = str(v.expand(step.raw)).encode()
    elif step.body is not None:
        data = json.dumps(v.expand(step.body), separators=(",", ":")).encode()  # as clients
    if data is not None:
        headers.setdefault("Content-Type", step.content_type or "application/json")
    elif step.content_type:
        headers["Content-Type"] = step.content_type
    s = target.session()
    url = target.url + path
    if step.watch is not None:
        return _watch(s, url, query, headers, step)
    try:
        r = s.request(step.method, url, params=query, data=data, headers=headers, timeout=30)
    except requests.RequestException as e:
        return StepResult(0, "", [], None, error=type(e).__name__)
    return StepResult(r.status_code, _content_type(r.headers.get("Content-Type")), _warnings(r),
                      _parse(r.text))


def _watch(s: requests.Session, url: str, query: dict[str, Any], headers: dict[str, str],
           step: Step) -> StepResult:
    """Read up to `step.watch` events (or until the stream ends or `step.timeout` passes)."""
    q = {"watch": "true", **query}
    want = step.watch or 0
    events: list[Any] = []
    try:
        with s.get(url, params=q, headers=headers, stream=True,
                   timeout=(10, step.timeout)) as r:
            ctype = _content_type(r.headers.get("Content-Type"))
            if r.status_code != 200:
                return StepResult(r.status_code, ctype, _warnings(r), _parse(r.text))
            deadline = time.monotonic() + step.timeout
            buf = b""
            try:
                for chunk in r.iter_content(chunk_size=None):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            events.append(_parse(line.decode()))
                    if len(events) >= want or time.monotonic() > deadline:
                        break
            except requests.exceptions.ConnectionError:  # read timeout: fewer events came
                pass
            if buf.strip() and len(events) < want:  # a last line without its newline
                events.append(_parse(buf.decode()))
            return StepResult(200, ctype, _warnings(r), events[:want] if want else events)
    except requests.RequestException as e:
        return StepResult(0, "", [], events, error=type(e).__name__)


def _hash(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()[:7]


def case_ids(case: Case, run: str) -> tuple[str, str]:
    """The case's namespace and name: the same on both servers, unique in the session."""
    h = _hash(case.id)
    slug = re.sub(r"[^a-z0-9]+", "-", case.name.lower()).strip("-")[:30].strip("-")
    ns = f"s-{_hash(case.namespace)}{run}" if isinstance(case.namespace, str) else f"d-{h}{run}"
    return ns, f"{slug}-{h}{run}" if slug else f"x-{h}{run}"


_shared_lock = threading.Lock()
_shared: dict[tuple[str, str], threading.Event] = {}


def _ensure_namespace(target: Target, ns: str, shared: bool) -> None:
    if not shared:
        _setup_namespace(target, ns)
        return
    key = (target.url, ns)
    with _shared_lock:
        ready = _shared.get(key)
        mine = ready is None
        if mine:
            ready = _shared[key] = threading.Event()
    assert ready is not None
    if mine:
        try:
            _setup_namespace(target, ns)
        finally:
            ready.set()
    else:
        ready.wait(60)


def _setup_namespace(target: Target, ns: str) -> None:
    s = target.session()
    r = s.post(f"{target.url}/api/v1/namespaces", json={"metadata": {"name": ns}}, timeout=30)
    if r.status_code != 201:
        raise RuntimeError(f"{target.name}: creating namespace {ns}: {r.status_code} {r.text}")
    # The real server's ServiceAccount admission needs `default` before pods; its service
    # account controller may create it first (409 then).
    r = s.post(f"{target.url}/api/v1/namespaces/{ns}/serviceaccounts",
               json={"metadata": {"name": "default"}}, timeout=30)
    if r.status_code not in (201, 409):
        raise RuntimeError(f"{target.name}: creating {ns}/default: {r.status_code} {r.text}")


# What a case leaves behind is deleted when some controller of another test could act on it
# (the session servers are shared); inert objects (config maps, secrets, leases, events, ...)
# stay, which saves a request each.
_CLEANED = frozenset({"pods", "deployments", "replicasets", "statefulsets", "daemonsets",
                      "jobs", "cronjobs", "services", "nodes", "namespaces",
                      "customresourcedefinitions"})


def _created_path(step: Step, path: str, res: StepResult) -> str | None:
    if step.method != "POST" or res.code != 201 or not isinstance(res.body, dict):
        return None
    if path.split("?")[0].rstrip("/").rsplit("/", 1)[-1] not in _CLEANED:
        return None
    name = (res.body.get("metadata") or {}).get("name")
    if not name or "/binding" in path or path.rstrip("/").endswith("/eviction"):
        return None
    return path.split("?")[0].rstrip("/") + "/" + name


def _cleanup(target: Target, paths: list[str]) -> None:
    """Delete what a case created (newest first), clearing finalizers that would keep it."""
    s = target.session()
    for p in reversed(paths):
        try:
            r = s.delete(target.url + p, params={"gracePeriodSeconds": "0",
                                                 "propagationPolicy": "Background"}, timeout=30)
            if r.status_code == 200 and (r.json().get("metadata") or {}).get("finalizers"):
                s.patch(target.url + p, data=b'{"metadata":{"finalizers":null}}',
                        headers={"Content-Type": "application/merge-patch+json"}, timeout=30)
        except (requests.RequestException, ValueError):
            pass


def _generate_names(body: Any) -> list[str]:
    out: list[str] = []
    if isinstance(body, dict):
        meta = body.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("generateName"), str):
            out.append(meta["generateName"])
        for x in body.values():
            out.extend(_generate_names(x))
    elif isinstance(body, list):
        for x in body:
            out.extend(_generate_names(x))
    return out


def run_case(case: Case, target: Target, run: str) -> list[StepResult]:
    t0 = time.monotonic()
    try:
        return _run_case(case, target, run)
    finally:
        with _timing_lock:
            TIMINGS[(case.id, target.name)] = time.monotonic() - t0


TIMINGS: dict[tuple[str, str], float] = {}  # (case id, server) -> seconds, for the CLI
_timing_lock = threading.Lock()


def _run_case(case: Case, target: Target, run: str) -> list[StepResult]:
    ns, name = case_ids(case, run)
    v = Vars(ns, name, run)
    if case.uses_namespace():
        _ensure_namespace(target, ns, isinstance(case.namespace, str))
    out: list[StepResult] = []
    created: list[str] = []
    try:
        for step in case.steps:
            res = send(target, step, v)
            res.generate_names = _generate_names(v.expand(step.body))
            deadline = time.monotonic() + step.retry
            # e.g. a new CRD's resources: served a moment after it is Established
            while step.retry and res.code != step.status and time.monotonic() < deadline:
                time.sleep(0.1)
                res = send(target, step, v)
            out.append(res)
            if step.save:
                v.saved[step.save] = res.body
            p = _created_path(step, str(v.expand(step.path)), res)
            if p:
                created.append(p)
    finally:
        _cleanup(target, created)
    return out


# -- normalization ---------------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
# "too old resource version: 1 (245)", "Too large resource version: 9, current: 4",
# "ResourceVersion in precondition: 12, ResourceVersion in object meta: 13", ...
_RV_IN_MESSAGE = re.compile(
    r"(?i)(resource ?version|requested|current)([^0-9]{0,40}?)\d+(\s*\(\d+\))?")
_DURATION = re.compile(r"^(?:\d+[smhdy])+$")
_NODE_PORT_CELL = re.compile(r"(\d+):(3[0-2]\d{3})/")
_CLUSTER_IP = re.compile(r"^10\.(?:9[6-9]|10[0-9]|11[01])\.\d{1,3}\.\d{1,3}$")
_TOKEN_VOLUME = re.compile(r"\bkube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}\b")
_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$")


@dataclass
class Masks:
    """The per-case, per-server substitutions (uids and generated names)."""

    uids: dict[str, str] = field(default_factory=dict)
    generated: dict[str, str] = field(default_factory=dict)
    prefixes: re.Pattern[str] | None = None  # generateName values the case sent

    def uid(self, u: str) -> str:
        if u not in self.uids:
            self.uids[u] = f"<uid:{len(self.uids) + 1}>"
        return self.uids[u]

    def text(self, s: str) -> str:
        if _TIME.fullmatch(s):
            return "<time>"
        if _JWT.match(s):
            return self.jwt(s)
        if "kube-api-access-" in s:
            s = _TOKEN_VOLUME.sub("kube-api-access-<rand>", s)
        for real, masked in self.generated.items():
            if real in s:
                s = s.replace(real, masked)
        if self.prefixes is not None:
            s = self.prefixes.sub(lambda mm: mm.group(1) + "<rand>", s)
        if _UUID.search(s):
            s = _UUID.sub(lambda m: self.uid(m.group(0)), s)
        return s


    def jwt(self, token: str) -> str:
        """A signed token as its header and claims: key id masked, times relative to iat,
        the rest masked as any text (uids, jti)."""
        import base64

        def part(p: str) -> Any:
            return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))

        try:
            header, claims = part(token.split(".")[0]), part(token.split(".")[1])
        except ValueError:
            return "<undecodable jwt>"
        header = {k: ("<kid>" if k == "kid" else v) for k, v in header.items()}
        iat = claims.get("iat")

        def rel(v: Any) -> Any:
            return f"<iat{v - iat:+d}>" if isinstance(v, int) and isinstance(iat, int) else v

        def walk(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: (rel(x) if k in ("iat", "nbf", "exp", "warnafter") else walk(x))
                        for k, x in v.items()}
            if isinstance(v, list):
                return [walk(x) for x in v]
            return self.text(v) if isinstance(v, str) else v

        return "<jwt " + json.dumps({"header": header, "claims": walk(claims)},
                                    sort_keys=True) + ">"


def _collect_generated(v: Any, out: dict[str, str]) -> None:
    if isinstance(v, dict):
        meta = v.get("metadata")
        if isinstance(meta, dict):
            gen, name = meta.get("generateName"), meta.get("name")
            if (isinstance(gen, str) and isinstance(name, str) and gen and name != gen
                    and name.startswith(gen) and len(name) == len(gen) + 5):
                out[name] = gen + "<rand>"
        for x in v.values():
            _collect_generated(x, out)
    elif isinstance(v, list):
        for x in v:
            _collect_generated(x, out)


def _norm(v: Any, m: Masks, key: str = "") -> Any:
    if isinstance(v, dict):
        out: dict[str, Any] = {}
        for k, x in v.items():
            if k in ("resourceVersion", "continue") and isinstance(x, str) and x:
                out[k] = "<rv>" if k == "resourceVersion" else "<continue>"
            elif k in ("clusterIP",) and isinstance(x, str) and _CLUSTER_IP.match(x):
                out[k] = "<clusterIP>"
            elif k == "clusterIPs" and isinstance(x, list):
                out[k] = ["<clusterIP>" if isinstance(i, str) and _CLUSTER_IP.match(i) else i
                          for i in x]
            elif k in ("nodePort", "healthCheckNodePort") and isinstance(x, int) and x:
                out[k] = "<nodePort>"
            elif k == "message" and isinstance(x, str):
                out[k] = _norm_message(m.text(x))
            else:
                out[k] = _norm(x, m, k)
        if out.get("kind") == "Table":
            _mask_table_dates(out)
        return out
    if isinstance(v, list):
        return [_norm(x, m, key) for x in v]
    if isinstance(v, str):
        return m.text(v)
    return v


_CLUSTER_IP_IN_TEXT = re.compile(r"\b10\.(?:9[6-9]|10[0-9]|11[01])\.\d{1,3}\.\d{1,3}\b")


# An object quoted inside a message (a patched object that does not decode): its times and
# resourceVersion are the server's own.
_RV_IN_QUOTED_JSON = re.compile(r'(resourceVersion\\*":\\*")\d+')


def _norm_message(s: str) -> str:
    s = _CLUSTER_IP_IN_TEXT.sub("<clusterIP>", s)
    if "resourceVersion" in s:
        s = _TIME.sub("<time>", _RV_IN_QUOTED_JSON.sub(r"\1<rv>", s))
    return _RV_IN_MESSAGE.sub(
        lambda mm: mm.group(1) + mm.group(2) + "<rv>" + (" (<rv>)" if mm.group(3) else ""), s)


def _mask_table_dates(t: dict[str, Any]) -> None:
    cols = t.get("columnDefinitions") or []
    date_cols = [i for i, c in enumerate(cols) if isinstance(c, dict) and c.get("type") == "date"]
    for row in t.get("rows") or []:
        cells = row.get("cells") if isinstance(row, dict) else None
        if not isinstance(cells, list):
            continue
        for i, cell in enumerate(cells):
            if (i in date_cols or isinstance(cell, str)) and isinstance(cell, str) and (
                    _DURATION.match(cell)):
                cells[i] = "<age>"
            elif isinstance(cell, str) and _CLUSTER_IP.match(cell):
                cells[i] = "<clusterIP>"
            elif isinstance(cell, str) and _NODE_PORT_CELL.search(cell):
                cells[i] = _NODE_PORT_CELL.sub(r"\1:<nodePort>/", cell)


def normalize(results: list[StepResult]) -> list[dict[str, Any]]:
    m = Masks()
    raw = [r.as_dict() for r in results]
    gen: dict[str, str] = {}
    _collect_generated([r["body"] for r in raw], gen)
    m.generated = dict(sorted(gen.items(), key=lambda kv: -len(kv[0])))
    prefixes = sorted({p[:58] for r in results for p in r.generate_names if p}, key=len,
                      reverse=True)
    if prefixes:
        m.prefixes = re.compile("(" + "|".join(re.escape(p) for p in prefixes)
                                + ")[bcdfghjklmnpqrstvwxz2456789]{5}")
    out = []
    for r, res in zip(raw, results, strict=True):
        body = r["body"]
        r = dict(r)
        r["body"] = _norm(copy.deepcopy(body), m)
        r["warnings"] = [m.text(w) for w in res.warnings]
        out.append(r)
    return out


# -- comparing -------------------------------------------------------------------------------

ABSENT = "<absent>"
_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Diff:
    path: str
    kube: Any
    pykcm: Any

    def render(self, width: int = 160) -> str:
        return f"{self.path}: kube={_short(self.kube, width)}  pykcm={_short(self.pykcm, width)}"


def _short(v: Any, width: int) -> str:
    s = v if v is ABSENT else json.dumps(v, sort_keys=True)
    return s if len(s) <= width else s[:width - 3] + "..."


def _child(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _SIMPLE_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def diff(a: Any, b: Any, path: str = "") -> list[Diff]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[Diff] = []
        for k in list(a) + [k for k in b if k not in a]:
            p = _child(path, k)
            if k not in b:
                out.append(Diff(p, a[k], ABSENT))
            elif k not in a:
                out.append(Diff(p, ABSENT, b[k]))
            else:
                out.extend(diff(a[k], b[k], p))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            p = _child(path, i)
            if i >= len(b):
                out.append(Diff(p, a[i], ABSENT))
            elif i >= len(a):
                out.append(Diff(p, ABSENT, b[i]))
            else:
                out.extend(diff(a[i], b[i], p))
        return out
    if a == b and type(a) is type(b):
        return []
    return [Diff(path, a, b)]


# -- the allowlist ---------------------------------------------------------------------------

@dataclass
class AllowEntry:
    cases: list[str]
    paths: list[str]
    reason: str
    req: list[str]
    index: int
    used: int = 0
    # a regex both differing values must contain (string values only)
    match: re.Pattern[str] | None = None

    def matches(self, case_id: str, step: Step, d: Diff) -> bool:
        if not any(_glob(c).match(case_id) for c in self.cases):
            return False
        if self.match is not None and not (
                isinstance(d.kube, str) and isinstance(d.pykcm, str)
                and self.match.search(d.kube) and self.match.search(d.pykcm)):
            return False
        if self.req and not any(_glob(r).match(step.label) for r in self.req):
            return False
        return any(_path_match(d.path, p) for p in self.paths)


def _ancestors(path: str) -> Iterator[str]:
    yield path
    while True:
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            return
        path = path[:cut]
        yield path


@functools.lru_cache(maxsize=4096)
def _glob(pattern: str) -> re.Pattern[str]:
    """`[*]` matches one list index, `*` any text (dots and brackets too); the rest is
    literal."""
    parts = [".*".join(re.escape(p) for p in chunk.split("*"))
             for chunk in pattern.split("[*]")]
    return re.compile(r"\[\d+\]".join(parts) + r"\Z", re.DOTALL)


def _path_match(path: str, pattern: str) -> bool:
    rx = _glob(pattern)
    return any(rx.match(p) for p in _ancestors(path))


# Where an object sits in an answer: the object itself, a list item, a watch event, a Table row.
_OBJECT_ROOTS = ("body", "body.items[*]", "body[*].object", "body.rows[*].object")


class Allowlist:
    def __init__(self, entries: list[AllowEntry]) -> None:
        self.entries = entries
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path = ALLOWLIST) -> Allowlist:
        data = yaml.safe_load(path.read_text()) or {}
        entries = []
        for i, e in enumerate(data.get("allow") or []):
            if not e.get("reason") or not e.get("paths"):
                raise CorpusError(f"{path.name}: entry {i + 1} needs `paths` and a `reason`")
            paths = [p.replace("{obj}", root) if "{obj}" in p else p
                     for p in _strs(e["paths"]) for root in _OBJECT_ROOTS
                     if "{obj}" in p or root == _OBJECT_ROOTS[0]]
            entries.append(AllowEntry(cases=_strs(e.get("cases", ["*"])), paths=paths,
                                      reason=str(e["reason"]).strip(), req=_strs(e.get("req", [])),
                                      index=i + 1,
                                      match=re.compile(e["match"]) if e.get("match") else None))
        return cls(entries)

    def explain(self, case_id: str, step: Step, d: Diff) -> AllowEntry | None:
        for e in self.entries:
            if e.matches(case_id, step, d):
                with self._lock:
                    e.used += 1
                return e
        return None


def _strs(v: Any) -> list[str]:
    return [str(x) for x in (v if isinstance(v, list) else [v])]


# -- a case's verdict ------------------------------------------------------------------------

@dataclass
class StepDiffs:
    index: int
    step: Step
    unexplained: list[Diff]
    allowed: list[tuple[Diff, AllowEntry]]
    expected_status_error: str = ""


@dataclass
class Outcome:
    case: Case
    steps: list[StepDiffs]
    error: str = ""
    normalized: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(s.unexplained or s.expected_status_error
                                       for s in self.steps)

    @property
    def n_allowed(self) -> int:
        return sum(len(s.allowed) for s in self.steps)

    @property
    def n_found(self) -> int:
        return sum(len(s.allowed) + len(s.unexplained) for s in self.steps)

    def render(self, max_diffs: int = 12) -> str:
        lines = [f"case {self.case.id}" + (f"  ({self.case.doc})" if self.case.doc else "")]
        if self.error:
            lines.append(f"  error: {self.error}")
        for s in self.steps:
            if not (s.unexplained or s.expected_status_error):
                continue
            lines.append(f"  step {s.index + 1}: {s.step.label}")
            if s.expected_status_error:
                lines.append(f"    {s.expected_status_error}")
            for d in s.unexplained[:max_diffs]:
                lines.append("    " + d.render())
            if len(s.unexplained) > max_diffs:
                lines.append(f"    ... {len(s.unexplained) - max_diffs} more")
        return "\n".join(lines)


def compare(case: Case, kube: list[StepResult], pykcm: list[StepResult],
            allow: Allowlist) -> Outcome:
    nk, npy = normalize(kube), normalize(pykcm)
    steps = []
    for i, step in enumerate(case.steps):
        a, b = nk[i], npy[i]
        if not step.compare:
            a, b = {"code": a["code"]}, {"code": b["code"]}
        unexplained, allowed = [], []
        for d in diff(a, b):
            e = allow.explain(case.id, step, d)
            if e is None:
                unexplained.append(d)
            else:
                allowed.append((d, e))
        exp = ""
        if step.status is not None and (a["code"] != step.status or b["code"] != step.status):
            exp = (f"expected status {step.status}: kube answered {a['code']}, "
                   f"pykcm {b['code']}" + _status_hint(a, b))
        steps.append(StepDiffs(i, step, unexplained, allowed, exp))
    return Outcome(case, steps, normalized=(nk, npy))


def _status_hint(a: dict[str, Any], b: dict[str, Any]) -> str:
    for name, r in (("kube", a), ("pykcm", b)):
        body = r.get("body")
        if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
            return f" ({name}: {body['message'][:200]})"
    return ""


def run_cases(cases: Iterable[Case], kube: Target, pykcm: Target, allow: Allowlist, run: str,
              workers: int = 6,
              on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case on both servers (cases and servers in parallel), compared."""
    cases = list(cases)
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futs = [(c, pool.submit(run_case, c, kube, run), pool.submit(run_case, c, pykcm, run))
                for c in cases]
        for c, fk, fp in futs:
            try:
                o = compare(c, fk.result(), fp.result(), allow)
            except Exception as e:  # noqa: BLE001 - reported as the case's failure
                o = Outcome(c, [], error=f"{type(e).__name__}: {e}")
            outcomes.append(o)
            if on_outcome is not None:
                on_outcome(o)
    return outcomes
