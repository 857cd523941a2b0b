"""Kubernetes: Pod objects and Events (JSON or YAML), ``kubectl describe pod``, CRI log files,
and the node's kubelet and container-runtime journal lines (read through the journal parsers,
:mod:`postmortem.parsers.kubernetes.node`).

Every parser of this package registers here (the registry imports
``postmortem.parsers.kubernetes``). A pod's container is the unit
``k8s:<namespace>/<pod>/<container>`` (:mod:`postmortem.parsers.kubernetes.names`);
docs/inputs.md (Kubernetes) documents the inputs and docs/schema.md the tables.
"""

from __future__ import annotations

from .cri import CriLog
from .describe import KubectlDescribe
from .objects import KubernetesObjects

__all__ = ["CriLog", "KubectlDescribe", "KubernetesObjects"]
