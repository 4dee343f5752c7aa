"""pykcm's field manager against the real kube-apiserver: the apply/update corpus.

Every step of every sequence (corpus.py) runs on the real server and through
``pykcm.apiserver.fieldmanager`` from the same live object; outcomes, conflict
bodies, managedFields and applied objects must agree (runner.py). No difference
is allowed: the list of explained differences is empty.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qs

import pytest

from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager.apply_options import check_applied_name, validate_patch_options
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


# (query, patch content type, body) of PATCH requests refused before the field manager runs
_BAD_OPTIONS = [
    ("", "application/apply-patch+yaml", {"data": {"a": "1"}}),
    ("?fieldManager=a&force=true", "application/merge-patch+json", {"data": {"b": "1"}}),
    ("?fieldManager=" + "a" * 129, "application/apply-patch+yaml", {"data": {"a": "1"}}),
    ("?force=true", "application/merge-patch+json", {"data": {"b": "1"}}),
    ("?fieldManager=a", "application/apply-patch+yaml", {"metadata": {"name": "other"}}),
]


@pytest.mark.parametrize("query,ctype,body", _BAD_OPTIONS)
def test_refused_patch_options_as_kube_apiserver(kube_control_plane: ControlPlane, query: str,
                                                 ctype: str, body: dict[str, Any]) -> None:
    cp = kube_control_plane
    server = Server(cp.url, cp.token, cp.ca_file)
    ns = f"ssa-opt-{uuid.uuid4().hex[:6]}"
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    full = {"apiVersion": "v1", "kind": "ConfigMap", **body}
    code, real = server.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/cm{query}", full,
                                ctype)
    params = parse_qs(query.lstrip("?"))
    with pytest.raises(StatusError) as e:
        validate_patch_options(ctype.startswith("application/apply-patch"),
                               params.get("fieldManager", [""])[0],
                               params.get("force", [""])[0] == "true")
        check_applied_name(full, "cm")
    assert (code, real) == (e.value.code, e.value.status())
