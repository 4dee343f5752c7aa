"""The reviewed differences between kube-controller-manager v1.36 and pykcm's controllers.

test_differential_controllers.py compares what users observe under each
manager; a difference fails its test unless an entry here covers it. Each
entry names the scenarios and the paths in the scenario's observation
(fnmatch patterns, as printed in a failure) and says why the difference is
legitimate. Keep the list short: a behaviour difference is a bug to fix in
pykcm, not an entry.
"""

from __future__ import annotations

from tests.e2e.differential import Allowed

ALLOWLIST: list[Allowed] = [
    Allowed("*", "*managedFields*.manager",
            "The field manager is the writer's name, taken by the API server from the first "
            "word of its User-Agent: kube-controller-manager's is 'kube-controller-manager/"
            "v1.36.2 ...', pykcm's 'pykcm/<version> ...' (pykcm.client.default_user_agent). "
            "Which fields each controller owns, and through which operation and subresource, "
            "is compared and the same."),
]
