"""The components' own identities under ``pykcm up``, as a real cluster gives them.

kubeadm writes one kubeconfig per control-plane component (controller-manager.conf as
``system:kube-controller-manager``, scheduler.conf as ``system:kube-scheduler``) and each
kubelet authenticates as ``system:node:<name>`` in ``system:nodes``; the bootstrap
policy's roles then grant each what it needs. ``pykcm up`` does the same with static
tokens (kube-apiserver's ``--token-auth-file``):

    DIR/pki/tokens.csv (0600, kept across restarts) ─► pykcm apiserver --token-auth-file
    DIR/controller-manager.kubeconfig  system:kube-controller-manager (no groups);
        the manager runs with --use-service-account-credentials: each controller then
        acts as its ServiceAccount kube-system/<name> with its system:controller:* role
    DIR/sim.kubeconfig                 system:pykcm-sim in system:nodes
    DIR/kubeconfig                     the admin (system:masters), unchanged

Deliberate deviation (the simulator): its kubelets, scheduler and volume provisioner
share one client, so they share one identity, ``system:pykcm-sim`` in ``system:nodes``.
Its rights are the upstream roles bound by ClusterRoleBindings this module creates
(labelled ``app.kubernetes.io/managed-by=pykcm``): ``system:node`` to the group
``system:nodes`` (an RBAC approximation of the Node authorizer and NodeRestriction:
any simulated node may do what any node may, not only to its own objects), and
``system:kube-scheduler``, ``system:volume-scheduler``,
``system:persistent-volume-provisioner`` to the user. The default StorageClass the
simulator's provisioner serves is created here as the admin (an installer's job).
"""

from __future__ import annotations

import contextlib
import csv
import os
import secrets
from typing import Any, Final

import yaml

__all__ = ["COMPONENTS", "SIM_BINDINGS", "bind_simulator", "ensure_tokens",
           "write_component_kubeconfigs"]

# component -> (user, groups): the identities' names
COMPONENTS: Final = {
    "controller-manager": ("system:kube-controller-manager", ()),
    "sim": ("system:pykcm-sim", ("system:nodes",)),
}
SIM_USER: Final = COMPONENTS["sim"][0]
# (binding name, ClusterRole, subject kind, subject name)
SIM_BINDINGS: Final = (
    ("pykcm:sim:nodes", "system:node", "Group", "system:nodes"),
    ("pykcm:sim:kube-scheduler", "system:kube-scheduler", "User", SIM_USER),
    ("pykcm:sim:volume-scheduler", "system:volume-scheduler", "User", SIM_USER),
    ("pykcm:sim:persistent-volume-provisioner", "system:persistent-volume-provisioner",
     "User", SIM_USER),
)


def tokens_path(data_dir: str) -> str:
    return os.path.join(data_dir, "pki", "tokens.csv")


def ensure_tokens(data_dir: str) -> dict[str, str]:
    """The components' tokens (component -> token), made once and kept in
    DIR/pki/tokens.csv; the file is the API server's --token-auth-file."""
    path = tokens_path(data_dir)
    by_user = {user: comp for comp, (user, _) in COMPONENTS.items()}
    tokens: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError), open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[1] in by_user:
                tokens[by_user[row[1]]] = row[0]
    if set(tokens) == set(COMPONENTS):
        return tokens
    tokens = {comp: secrets.token_hex(24) for comp in COMPONENTS}
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.writer(f)
        for comp, (user, groups) in COMPONENTS.items():
            w.writerow([tokens[comp], user, user, ",".join(groups)])
    os.replace(tmp, path)
    return tokens


def kubeconfig_path(data_dir: str, component: str) -> str:
    return os.path.join(data_dir, f"{component}.kubeconfig")


def write_component_kubeconfigs(data_dir: str, admin_kubeconfig: str,
                                tokens: dict[str, str]) -> None:
    """DIR/<component>.kubeconfig: the admin's with the component's token."""
    from pykcm.apiserver.auth.kubeconfig import write_kubeconfig

    with open(admin_kubeconfig) as f:
        admin: dict[str, Any] = yaml.safe_load(f)
    for comp, token in tokens.items():
        cfg = dict(admin)
        user = COMPONENTS[comp][0]
        cfg["users"] = [{"name": user, "user": {"token": token}}]
        cfg["contexts"] = [{**c, "context": {**c["context"], "user": user}}
                           for c in admin.get("contexts") or []]
        write_kubeconfig(kubeconfig_path(data_dir, comp), cfg)


async def bind_simulator(admin_kubeconfig: str) -> None:
    """Create the simulator's ClusterRoleBindings (SIM_BINDINGS) unless they exist, and
    the default StorageClass its provisioner serves (an installer's job: a node may not
    create classes)."""
    from pykcm.client import Client, load_kube_config
    from pykcm.client.errors import AlreadyExists
    from pykcm.sim.volumes import DEFAULT_STORAGE_CLASS, default_storage_class

    async with Client(load_kube_config(admin_kubeconfig)) as client:
        with contextlib.suppress(AlreadyExists):
            await client.create("storageclasses", default_storage_class(DEFAULT_STORAGE_CLASS))
        for name, role, kind, subject in SIM_BINDINGS:
            with contextlib.suppress(AlreadyExists):
                await client.create("clusterrolebindings", {
                    "metadata": {"name": name,
                                 "labels": {"app.kubernetes.io/managed-by": "pykcm"}},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                "kind": "ClusterRole", "name": role},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind,
                                  "name": subject}]})
