"""The randomness seam: pykcm draws random numbers only through :mod:`pykcm.api.randomness`
(issue 21, "Determinism").

Nothing in ``pykcm/`` but that module imports ``random`` or ``secrets``, calls
``uuid.uuid4``/``uuid.uuid1`` or reads ``os.urandom``: a component gets a
:class:`~pykcm.api.randomness.RandomSource` (default the unseeded ``REAL_RANDOM``) with its
clock and draws from its own stream of it, so ``--seed`` reproduces every draw. The
allowlist below is small and each entry says why it stays outside: cryptographic material
(keys, tokens, certificate serials) must stay unpredictable whatever the seed.
Deterministic ``uuid.uuid5`` (the simulated nodes' machine IDs) is not a draw and is
allowed everywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pykcm
from tests.unit.seam_check import dotted, unneeded_allowances, violations

ROOT = Path(pykcm.__file__).parent

#: The one home of randomness: it alone wraps the generators.
HOME = "api/randomness.py"

#: (file relative to pykcm/, what) -> why it does not draw from a RandomSource.
ALLOWED: dict[tuple[str, str], str] = {
    ("controllers/certificates/signer.py", "secrets"):
        "a signed certificate's serial number: unpredictable by design (cryptographic)",
    ("apiserver/auth/authentication.py", "secrets"):
        "the admin bearer token: a credential, cryptographically random whatever the seed",
    ("apiserver/auth/service_accounts.py", "uuid.uuid4"):
        "the jti of a signed service-account token: part of a credential (signed with a "
        "random key anyway), never written into an object",
    ("cli/identities.py", "secrets"):
        "the components' bearer tokens: credentials",
    ("testing/fault_proxy.py", "random"):
        "a test tool's fault injection, seeded by its own seed= argument: the faults are "
        "not the cluster's behaviour",
}


def _findings(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("random", "secrets"):
                    out.append((node.lineno, a.name))
        elif isinstance(node, ast.ImportFrom):
            if node.module in ("random", "secrets"):
                out.append((node.lineno, node.module))
            elif node.module == "uuid":
                out.extend((node.lineno, f"uuid.{a.name}") for a in node.names
                           if a.name in ("uuid1", "uuid4"))
            elif node.module == "os":
                out.extend((node.lineno, "os.urandom") for a in node.names
                           if a.name == "urandom")
        elif isinstance(node, ast.Attribute):
            name = dotted(node)
            if name in ("uuid.uuid1", "uuid.uuid4", "os.urandom"):
                out.append((node.lineno, name))
    return out


def _violations() -> list[str]:
    files = [f for f in sorted(ROOT.rglob("*.py"))
             if f.relative_to(ROOT).as_posix() != HOME]
    return violations(ROOT, files, _findings, ALLOWED)


def test_pykcm_draws_randomness_only_through_a_random_source() -> None:
    assert _violations() == []


def test_every_allowlist_entry_is_still_needed() -> None:
    assert unneeded_allowances(ROOT, _findings, ALLOWED) == set()


def test_the_home_is_where_the_generators_are() -> None:
    kinds = {what for _, what in _findings(ast.parse((ROOT / HOME).read_text()))}
    assert kinds == {"random", "os.urandom"}


def test_the_checker_sees_each_kind_of_direct_draw() -> None:
    src = """
import random, secrets, uuid, os
from random import choice
from secrets import token_hex
from uuid import uuid4, uuid5
from os import urandom, path
a = uuid.uuid4()
b = uuid.uuid1()
c = os.urandom(4)
d = uuid.uuid5(uuid.NAMESPACE_DNS, "x")
"""
    found = sorted(what for _, what in _findings(ast.parse(src)))
    assert found == ["os.urandom", "os.urandom", "random", "random", "secrets", "secrets",
                     "uuid.uuid1", "uuid.uuid4", "uuid.uuid4"]
