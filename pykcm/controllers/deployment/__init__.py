"""The Deployment controller (kube-controller-manager ``pkg/controller/deployment``).

Modules mirror upstream's files: ``deployment_controller`` (handlers, the
sync's dispatch), ``sync`` (new ReplicaSet, proportional scaling, cleanup,
status), ``rolling`` and ``recreate`` (the strategies), ``rollback``,
``progress`` (conditions, deadline re-checks), ``util`` (deploymentutil's
pure logic) and ``hashing`` (the pod-template-hash).
"""

from pykcm.controllers.deployment.deployment_controller import DeploymentController

__all__ = ["DeploymentController"]
