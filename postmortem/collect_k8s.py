"""``postmortem collect --kubernetes``: the Kubernetes evidence of an inference pod's death.

With ``kubectl`` (its context and credentials as the user has them): the pods as JSON (one pod
with ``--pod``, else every pod of ``--namespace``, else of all namespaces), their Events as
core/v1 and events.k8s.io/v1 JSON (kept one hour by the API server: the reason to collect at
once), for each pod ``kubectl describe pod`` and each container's current and previous logs with
their timestamps. On a node, the pods' CRI log files (``/var/log/pods/<ns>_<pod>_<uid>/``) and the
kubelet's, containerd's and CRI-O's journal. Layout (docs/collect.md, "Kubernetes"):
``kubernetes/pods.json``, ``kubernetes/events.json``, ``kubernetes/events.k8s.io.json``,
``kubernetes/describe/<ns>_<pod>.txt``, ``kubernetes/logs/<ns>_<pod>_<container>[.previous].log``,
``kubernetes/pods/<ns>_<pod>_<uid>/<container>/<n>.log``, ``kubernetes/node-journal.export``.
Standard library only (the single-file collector runs it too).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .lazyre import lazy_re

if TYPE_CHECKING:
    from .collect import _Collector

#: pods whose describe and logs are saved (a namespace of thousands keeps the first)
MAX_PODS = 64
#: the largest pods.json read back to find the pods' containers
MAX_LIST_BYTES = 64 << 20
_NAME = lazy_re(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
NODE_UNITS = ("kubelet.service", "containerd.service", "crio.service", "k3s.service", "k3s-agent.service")


def collect(c: _Collector, namespace: str | None, pod: str | None) -> None:
    """Save the Kubernetes objects, logs and node files of the selected pods into ``c``'s bundle."""
    where = ["-n", namespace] if namespace else ["--all-namespaces"]
    pods = c.run(
        "kubectl-pods",
        ["kubectl", "get", "pods", *([pod] if pod else []), *where, "-o", "json"],
        "kubernetes/pods.json",
        fmt="k8s-objects",
        ingest=True,
        purpose="the pods: limits, probes, states, the previous termination, restarts",
        missing_why="not found on PATH: no Kubernetes objects (run on a machine with kubectl and credentials)",
    )
    selector = ["--field-selector", f"involvedObject.name={pod}"] if pod else []
    c.run(
        "kubectl-events",
        ["kubectl", "get", "events", *where, *selector, "-o", "json"],
        "kubernetes/events.json",
        fmt="k8s-objects",
        ingest=True,
        purpose="the events (probe failures, kills, evictions, back-off): the API server keeps them an hour",
        quiet_missing=True,
    )
    c.run(
        "kubectl-events-k8s-io",
        ["kubectl", "get", "events.v1.events.k8s.io", *where, "-o", "json"],
        "kubernetes/events.k8s.io.json",
        fmt="k8s-objects",
        ingest=True,
        purpose="the same events through events.k8s.io/v1 (the scheduler's, with microsecond times)",
        quiet_missing=True,
        warn_failure=False,
    )
    if pods["status"] == "ok":
        for ns, name, uid, containers in pods_of(c.work / "kubernetes/pods.json")[:MAX_PODS]:
            _pod(c, ns, name, uid, containers)
    _node_journal(c)


def pods_of(path: Path) -> list[tuple[str, str, str | None, list[str]]]:
    """(namespace, pod, uid, containers) of a ``kubectl get pods -o json`` output; names that are
    not Kubernetes names are skipped (they become file names and kubectl arguments).

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    >>> _ = f.write('{"kind": "List", "items": [{"metadata": {"name": "v-0", "namespace": "ml", "uid": "u/.."},'
    ...             ' "spec": {"containers": [{"name": "vllm"}, {"name": "../x"}]}}]}'); f.close()
    >>> pods_of(Path(f.name)); os.unlink(f.name)
    [('ml', 'v-0', None, ['vllm'])]
    """
    try:
        if path.stat().st_size > MAX_LIST_BYTES:
            return []
        doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    items = doc.get("items", [doc]) if isinstance(doc, dict) else []
    out = []
    for item in items:
        meta = item.get("metadata") or {} if isinstance(item, dict) else {}
        ns, name, uid = meta.get("namespace") or "default", meta.get("name"), meta.get("uid")
        if not (isinstance(name, str) and _NAME.match(name) and isinstance(ns, str) and _NAME.match(ns)):
            continue
        spec = item.get("spec") or {}
        names = [x.get("name") for x in spec.get("containers") or [] if isinstance(x, dict)]
        out.append((ns, name, uid if isinstance(uid, str) and re.fullmatch(r"[0-9a-f-]{32,36}", uid) else None,
                    [n for n in names if isinstance(n, str) and _NAME.match(n)]))  # fmt: skip
    return out


def _pod(c: _Collector, ns: str, name: str, uid: str | None, containers: list[str]) -> None:
    c.run(
        f"kubectl-describe-{ns}-{name}",
        ["kubectl", "describe", "pod", "-n", ns, name],
        f"kubernetes/describe/{ns}_{name}.txt",
        fmt="k8s-describe",
        ingest=True,
        purpose=f"kubectl describe of pod {ns}/{name} (its Events table's ages count back from now)",
        warn_failure=False,
    )
    for container in containers:
        for previous in (True, False):
            suffix = ".previous" if previous else ""
            argv = ["kubectl", "logs", "-n", ns, name, "-c", container, "--timestamps"]
            c.run(
                f"kubectl-logs-{ns}-{name}-{container}{suffix}",
                [*argv, "--previous"] if previous else argv,
                f"kubernetes/logs/{ns}_{name}_{container}{suffix}.log",
                keep="tail",
                ingest=True,
                purpose=f"{'the previous run' if previous else 'the current run'} of container {container}",
                warn_failure=False,
            )
        if uid is not None:
            _node_logs(c, ns, name, uid, container)


def _node_logs(c: _Collector, ns: str, name: str, uid: str, container: str) -> None:
    """On the pod's node: its CRI log files (every restart's that kubelet kept)."""
    base = f"/var/log/pods/{ns}_{name}_{uid}/{container}"
    real = c.machine_path(base)
    if not real.is_dir():
        return
    for log in sorted(real.iterdir())[:16]:
        if log.is_file() and re.fullmatch(r"\d+\.log(\.\d{8}-\d{6})?", log.name):
            c.copy(
                f"pod-log:{base}/{log.name}",
                f"{base}/{log.name}",
                f"kubernetes/pods/{ns}_{name}_{uid}/{container}/{log.name}",
                keep="tail",
                ingest=True,
                purpose=f"the CRI log file of container {container} (restart {log.name.split('.')[0]})",
            )


def _node_journal(c: _Collector) -> None:
    if c.which("journalctl") is None or (
        c.which("kubelet") is None and not c.machine_path("/var/lib/kubelet").is_dir()
    ):
        return  # not a node
    argv = ["journalctl", "--no-pager", "-o", "export"]
    for unit in NODE_UNITS:
        argv += ["-u", unit]
    if c.opts.since:
        argv += ["--since", c.opts.since]
    if c.opts.until:
        argv += ["--until", c.opts.until]
    c.run(
        "node-journal",
        argv,
        "kubernetes/node-journal.export",
        keep="tail",
        boundary=b"\n\n",
        fmt="journal-export",
        ingest=True,
        purpose="the node's kubelet, containerd and CRI-O lines (probe kills, TaskOOM, container ids)",
        warn_failure=False,
    )


def manifest_part(namespace: str | None, pod: str | None) -> dict[str, Any]:
    return {"namespace": namespace, "pod": pod}
