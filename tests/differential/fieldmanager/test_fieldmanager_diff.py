"""pykcm's field manager against the real kube-apiserver: the apply/update corpus.

Every step of every sequence (corpus.py) runs on the real server and through
``pykcm.apiserver.fieldmanager`` from the same live object; outcomes, conflict
bodies, managedFields and applied objects must agree (runner.py). No difference
is allowed: the list of explained differences is empty.
"""

from __future__ import annotations

import uuid

import pytest

from pykcm.testing.upstream import ControlPlane
from tests.differential.fieldmanager.corpus import FAMILIES, sequences
from tests.differential.fieldmanager.runner import Server, run

pytestmark = pytest.mark.upstream


def test_the_corpus_has_the_issue_s_200_sequences() -> None:
    seqs = sequences()
    assert len(seqs) >= 200
    assert {s["name"].rsplit("-", 1)[0] for s in seqs} == set(FAMILIES)


def test_field_manager_agrees_with_kube_apiserver(kube_control_plane: ControlPlane) -> None:
    cp = kube_control_plane
    server = Server(cp.url, cp.token, cp.ca_file)
    result = run(server, sequences(), f"ssa-{uuid.uuid4().hex[:6]}")
    assert result.sequences >= 200
    assert result.differences == []
