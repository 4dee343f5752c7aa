"""Run the corpus outside pytest and report: ``python -m tests.differential.apiserver``.

    --env FILE     targets from a JSON file {"kube": {url, token, ca}, "pykcm": {...}}
                   (default: start the real control plane and pykcm's server here)
    -k PATTERN     only cases whose id ("group/case") matches (fnmatch; repeatable)
    --show         print every failing case with its diffs
    --allowed      also print the allowed differences, grouped by allowlist entry
    --dump         print the expanded corpus (cases and steps) and exit

Prints the counts the README keeps: cases, steps, differences found (before the
allowlist), allowed per entry, unexplained, and allowlist entries never used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import difflib
import fnmatch
import json
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.differential.apiserver.corpus import load_corpus
from tests.differential.apiserver.runner import Allowlist, Target, run_cases


@contextlib.contextmanager
def _servers(env: str | None) -> Iterator[tuple[Target, Target]]:
    if env:
        e = json.loads(Path(env).read_text())
        yield (Target("kube", e["kube"]["url"], e["kube"]["token"], e["kube"]["ca"]),
               Target("pykcm", e["pykcm"]["url"], e["pykcm"]["token"], e["pykcm"]["ca"]))
        return
    from pykcm.testing.server_thread import ServerThread
    from pykcm.testing.upstream import find_kit

    kit = find_kit()
    if kit is None:
        sys.exit("no kube-v1.36 kit found (PYKCM_KUBE_KIT)")
    with tempfile.TemporaryDirectory() as d:
        cp = kit.control_plane(Path(d) / "kube").start()
        try:
            # no support controller manager: the real server stays quiet (see runner.py)
            with ServerThread() as st:
                ca = Path(d) / "pykcm-ca.crt"
                ca.write_bytes(st.ca_pem or b"")
                yield (Target("kube", cp.url, cp.token, cp.ca_file),
                       Target("pykcm", st.url, st.token, str(ca)))
        finally:
            cp.stop()


def _drop_managed(v: object) -> object:
    if isinstance(v, dict):
        return {k: _drop_managed(x) for k, x in v.items() if k != "managedFields"}
    if isinstance(v, list):
        return [_drop_managed(x) for x in v]
    return v


def _lines(v: object) -> list[str]:
    return json.dumps(_drop_managed(v), indent=1, sort_keys=True).splitlines()


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.differential.apiserver")
    ap.add_argument("--env")
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--allowed", action="store_true")
    ap.add_argument("--dump", action="store_true")
    ap.add_argument("--full", action="store_true",
                    help="unified diffs of the normalized answers of differing steps")
    ap.add_argument("--summary", action="store_true",
                    help="unexplained differences grouped by path, with counts")
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--slowest", type=int, default=0, help="print the N slowest case runs")
    a = ap.parse_args()
    groups = load_corpus()
    cases = [c for cs in groups.values() for c in cs
             if not a.k or any(fnmatch.fnmatchcase(c.id, k) or k in c.id for k in a.k)]
    if a.dump:
        for c in cases:
            print(c.id, "-", c.doc)
            for s in c.steps:
                print("   ", s.label, json.dumps(s.body) if s.body is not None else "")
        return
    allow = Allowlist.load()
    t0 = time.monotonic()
    with _servers(a.env) as (kube, pykcm):
        outcomes = run_cases(cases, kube, pykcm, allow, secrets.token_hex(2),
                             workers=a.workers)
    took = time.monotonic() - t0
    failed = [o for o in outcomes if o.failed]
    if a.show:
        for o in failed:
            print(o.render(), "\n")
    if a.full:
        for o in failed:
            print("=" * 30, o.case.id)
            for s in o.steps:
                if s.unexplained or s.expected_status_error:
                    k = _lines(o.normalized[0][s.index])
                    p = _lines(o.normalized[1][s.index])
                    print(f"--- step {s.index + 1}: {s.step.label}")
                    if s.expected_status_error:
                        print("    " + s.expected_status_error)
                    print("\n".join(difflib.unified_diff(k, p, "kube", "pykcm", lineterm="",
                                                         n=3)))
    if a.summary:
        sig: collections.Counter[str] = collections.Counter()
        example: dict[str, str] = {}
        for o in outcomes:
            for s in o.steps:
                for d in s.unexplained:
                    k = re.sub(r"\[\d+\]", "[*]", d.path) + "  " + d.render(70).split(": ", 1)[1]
                    sig[k] += 1
                    example.setdefault(k, f"{o.case.id} step {s.index + 1} {s.step.label}")
        for k, n in sig.most_common():
            print(f"{n:5d}  {k}\n        e.g. {example[k]}")
    if a.allowed:
        by: dict[int, list[str]] = collections.defaultdict(list)
        for o in outcomes:
            for s in o.steps:
                for d, e in s.allowed:
                    by[e.index].append(f"{o.case.id} step {s.index + 1}: {d.render(100)}")
        for e in allow.entries:
            print(f"--- allow #{e.index}: {e.reason}")
            for line in by.get(e.index, [])[:20]:
                print("   ", line)
    if a.slowest:
        from tests.differential.apiserver.runner import TIMINGS

        for (cid, server), secs in sorted(TIMINGS.items(), key=lambda kv: -kv[1])[:a.slowest]:
            print(f"{secs:6.2f} s  {server:6s} {cid}")
    steps = sum(len(c.steps) for c in cases)
    found = sum(o.n_found for o in outcomes)
    print(f"{len(cases)} cases, {steps} steps in {took:.1f} s; differences found {found}, "
          f"allowed {sum(o.n_allowed for o in outcomes)}, cases failing {len(failed)}")
    for e in allow.entries:
        if e.used == 0:
            print(f"allowlist entry {e.index} never used: {e.reason}")
    for o in failed:
        print("FAIL", o.case.id)


if __name__ == "__main__":
    main()
