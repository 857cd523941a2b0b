"""A Kubernetes node's own journal lines: the kubelet's (klog, structured ``key=value`` or the
older sentences) and the container runtime's (containerd's and CRI-O's logrus lines).

The journal sink hands every entry of a ``kubelet``, ``containerd``, ``crio`` or ``k3s``/
``rke2`` process to :class:`NodeStream`, which turns the lines that matter to a postmortem
into ``k8s_events`` rows (probe failures and probe kills, container deaths and starts, back-off,
evictions, the runtime's ``TaskOOM``/``TaskExit``) and, from the runtime's ``CreateContainer``
lines, which container id is which pod's container. Everything else is left as the journal
entry it already is. The formats are in docs/inputs.md (Kubernetes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from ...lazyre import lazy_re
from ...records import Container, K8sEvent
from .names import unit_name

#: journal identifiers whose lines are the node's Kubernetes components
NODE_IDENTS = frozenset({"kubelet", "containerd", "crio", "k3s", "k3s-agent", "rke2", "rke2-agent"})

_KLOG = lazy_re(r"(?:^|(?<=: ))[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [^:\s]+:\d+\] (?P<msg>.*)$", re.S)
_LOGRUS = lazy_re(r'(?:^|(?<=: ))time="[^"]+" level=\w+ msg="(?P<msg>(?:[^"\\]|\\.)*)"(?P<fields>.*)$', re.S)
_KV = lazy_re(r' (?P<k>[A-Za-z][\w.]*)=(?P<v>"(?:[^"\\]|\\.)*"|\S+)')
_POD = lazy_re(r'^(?P<ns>[^/"]+)/(?P<pod>[^/"]+)$')

_PROBE = lazy_re(r'^"Probe (?P<what>failed|errored)" ')
_SYNC_PROBE = lazy_re(r'^"SyncLoop \(probe\)" ')
_PLEG = lazy_re(
    r'^"SyncLoop \(PLEG\): event for pod" .*?event=(?:&\{ID:(?P<uid1>[\w-]+) Type:(?P<t1>\w+) Data:(?P<d1>[^}\s]*)\}'
    r'|\{"ID":"(?P<uid2>[\w-]+)","Type":"(?P<t2>\w+)","Data":"?(?P<d2>[^"}]*)"?\})'
)
_KILL = lazy_re(r'^"Killing container with a grace period(?: override)?" ')
_MESSAGE = lazy_re(r'^"Message for Container of pod" ')
_BACKOFF = lazy_re(r'^"Back-off restarting failed container" ')
_CRASHLOOP = lazy_re(r"container=(?P<c>\S+) pod=(?P<pod>[^_\s]+)_(?P<ns>[^(\s]+)(?:\((?P<uid>[0-9a-f-]+)\))?")
_EVICT = lazy_re(
    r'^"?[Ee]viction manager: (?P<what>attempting to reclaim|must evict pod\(s\) to reclaim'
    r"|pod is evicted successfully|pods evicted, waiting for pod to be cleaned up)"
)
_SYS_OOM = lazy_re(r'^"Got sys oom event"|^System OOM encountered')
_OLD_PROBE = lazy_re(
    r'^(?P<probe>Liveness|Readiness|Startup) probe for "(?P<pod>[^_"]+)_(?P<ns>[^(_"]+)\((?P<uid>[^)]+)\):(?P<ctr>[^"]+)" failed'
)
_TASK_OOM = lazy_re(
    r'^TaskOOM event (?:&TaskOOM\{ContainerID:(?P<c1>[0-9a-f]{64})|container_id:\s*"(?P<c2>[0-9a-f]{64})")'
)
_TASK_EXIT = lazy_re(
    r"^TaskExit event (?:&TaskExit\{ContainerID:(?P<c1>[0-9a-f]{64}),ID:(?P<i1>[0-9a-f]+),Pid:\d+,ExitStatus:(?P<s1>\d+)"
    r'|container_id:\s*"(?P<c2>[0-9a-f]{64})"\s+id:\s*"(?P<i2>[0-9a-f]+)"(?:\s+pid:\s*\d+)?(?:\s+exit_status:\s*(?P<s2>\d+))?)'
)
_CREATE = lazy_re(
    r'^CreateContainer within sandbox "(?P<sb>[0-9a-f]+)" for (?:container )?'
    r'(?:&ContainerMetadata\{Name:(?P<n1>[^,]+),Attempt:(?P<a1>\d+),\}|name:\s*"(?P<n2>[^"]+)"(?:\s+attempt:\s*(?P<a2>\d+))?)'
    r' returns container id "(?P<cid>[0-9a-f]{64})"'
)
_SANDBOX = lazy_re(
    r"^RunPodSandbox for &PodSandboxMetadata\{Name:(?P<pod>[^,]+),Uid:(?P<uid>[^,]+),Namespace:(?P<ns>[^,]+),"
    r'Attempt:\d+,\} returns sandbox id "(?P<sb>[0-9a-f]+)"'
)
_CRIO_DESC = lazy_re(r"^(?P<ns>[^/]+)/(?P<pod>[^/]+)/(?P<ctr>[^/]+)$")
#: at most this many sandboxes remembered per source
MAX_SANDBOXES = 10_000


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return re.sub(r"\\(.)", r"\1", v[1:-1])
    return v


def fields_of(text: str) -> dict[str, str]:
    """The ``key=value`` pairs after a structured message (values unquoted).

    >>> fields_of(' pod="default/v-0" containerName="vllm" gracePeriod=30')
    {'pod': 'default/v-0', 'containerName': 'vllm', 'gracePeriod': '30'}
    """
    return {m.group("k"): _unquote(m.group("v")) for m in _KV.finditer(text)}


@dataclass(slots=True)
class NodeFact:
    """One line's meaning (a ``k8s_events`` row without its place)."""

    origin: str
    kind: str
    message: str
    namespace: str | None = None
    pod: str | None = None
    pod_uid: str | None = None
    container: str | None = None
    container_id: str | None = None
    reason: str | None = None
    probe: str | None = None
    exit_code: int | None = None


def _pod_fields(fact: NodeFact, kv: dict[str, str]) -> NodeFact:
    m = _POD.match(kv.get("pod", ""))
    if m:
        fact.namespace, fact.pod = m.group("ns"), m.group("pod")
    fact.pod_uid = kv.get("podUID") or fact.pod_uid
    fact.container = kv.get("containerName") or fact.container
    cid = kv.get("containerID", "")
    fact.container_id = cid.rpartition("://")[2] or fact.container_id
    return fact


def kubelet_fact(msg: str) -> NodeFact | None:
    """The meaning of a kubelet message (after its klog header), or None.

    >>> f = kubelet_fact('"Probe failed" probeType="Startup" pod="default/v-0" podUID="u" '
    ...                  'containerName="vllm" probeResult="failure" output="connection refused"')
    >>> f.kind, f.probe, f.namespace, f.pod, f.container
    ('probe_failed', 'Startup', 'default', 'v-0', 'vllm')
    >>> kubelet_fact('"Message for Container of pod" containerName="vllm" pod="default/v-0" '
    ...              'containerMessage="Container vllm failed startup probe, will be restarted"').kind
    'probe_kill'
    >>> kubelet_fact('"Eviction manager: pod is evicted successfully" pod="default/v-0"').kind
    'evicted'
    """
    _, _, rest = msg.partition('" ')
    kv = fields_of(" " + rest) if msg.startswith('"') else {}
    if _PROBE.match(msg):
        probe = kv.get("probeType")
        return _pod_fields(NodeFact("kubelet", "probe_failed", msg, probe=probe, reason="Unhealthy"), kv)
    if _SYNC_PROBE.match(msg):
        if kv.get("probe") == "readiness" and kv.get("status") == "ready":
            return _pod_fields(NodeFact("kubelet", "ready", msg, probe="Readiness"), kv)
        return None
    if (m := _PLEG.match(msg)) is not None:
        kind = {"ContainerDied": "container_died", "ContainerStarted": "container_started"}.get(
            m.group("t1") or m.group("t2") or ""
        )
        if kind is None:
            return None
        fact = _pod_fields(NodeFact("kubelet", kind, msg), kv)
        fact.pod_uid = m.group("uid1") or m.group("uid2")
        fact.container_id = (m.group("d1") or m.group("d2") or "") or None
        return fact
    if _KILL.match(msg):
        return _pod_fields(NodeFact("kubelet", "killing", msg, reason="Killing"), kv)
    if _MESSAGE.match(msg):
        text = kv.get("containerMessage", "")
        kind = "probe_kill" if "probe, will be restarted" in text else "killing"
        probe = "Startup" if "startup probe" in text else "Liveness" if "liveness probe" in text else None
        return _pod_fields(NodeFact("kubelet", kind, msg, reason="Killing", probe=probe), kv)
    if _BACKOFF.match(msg):
        fact = _pod_fields(NodeFact("kubelet", "backoff", msg, reason="BackOff"), kv)
        if (cm := _CRASHLOOP.search(kv.get("err", ""))) is not None:
            fact.namespace, fact.pod, fact.container = cm.group("ns"), cm.group("pod"), cm.group("c")
            fact.pod_uid = cm.group("uid") or fact.pod_uid
        return fact
    if (m := _EVICT.match(msg)) is not None:
        kind = "evicted" if "evicted" in m.group("what") else "eviction_pressure"
        return _pod_fields(
            NodeFact("kubelet", kind, msg, reason="Evicted" if kind == "evicted" else None), kv
        )
    if _SYS_OOM.match(msg):
        return NodeFact("kubelet", "system_oom", msg, reason="SystemOOM")
    if (m := _OLD_PROBE.match(msg)) is not None:
        return NodeFact(
            "kubelet", "probe_failed", msg, m.group("ns"), m.group("pod"), m.group("uid"), m.group("ctr"),
            reason="Unhealthy", probe=m.group("probe"),
        )  # fmt: skip
    return None


class NodeStream:
    """The Kubernetes lines of one source's journal: facts, and container ids' names."""

    def __init__(self) -> None:
        self._sandboxes: dict[str, tuple[str, str, str]] = {}

    def feed(
        self, line_no: int, ts: datetime | None, ts_raw: str | None, host: str | None, message: str
    ) -> Iterator[K8sEvent | Container]:
        """Records for one entry (nothing for most of them)."""
        m = _KLOG.match(message)
        fact: NodeFact | None = None
        if m is not None:
            fact = kubelet_fact(m.group("msg"))
        elif (lm := _LOGRUS.match(message)) is not None:
            yield from self._runtime(
                line_no, ts, host, _unquote('"' + lm.group("msg") + '"'), lm.group("fields")
            )
            fact = runtime_fact(_unquote('"' + lm.group("msg") + '"'), fields_of(lm.group("fields")))
        if fact is None:
            return
        unit = (
            unit_name(fact.namespace, fact.pod, fact.container)
            if fact.namespace and fact.pod and fact.container
            else None
        )
        yield K8sEvent(
            line_no, ts, ts_raw, None, host, fact.origin, fact.kind, fact.namespace, fact.pod, fact.pod_uid,
            fact.container, fact.container_id, unit, fact.reason, fact.probe, fact.exit_code, None, message,
        )  # fmt: skip

    def _runtime(
        self, line_no: int, ts: datetime | None, host: str | None, msg: str, fields: str
    ) -> Iterator[Container]:
        if (m := _SANDBOX.match(msg)) is not None:
            if len(self._sandboxes) < MAX_SANDBOXES:
                self._sandboxes[m.group("sb")] = (m.group("ns"), m.group("pod"), m.group("uid"))
            return
        if (m := _CREATE.match(msg)) is not None:
            pod = self._sandboxes.get(m.group("sb"))
            if pod is not None:
                name = m.group("n1") or m.group("n2")
                yield Container(
                    line_no,
                    ts,
                    host,
                    "containerd",
                    m.group("cid"),
                    name,
                    None,
                    unit_name(pod[0], pod[1], name),
                )
            return
        if msg == "Started container":
            kv = fields_of(fields)
            d = _CRIO_DESC.match(kv.get("description", ""))
            cid = kv.get("containerID", "")
            if d and re.fullmatch(r"[0-9a-f]{64}", cid):
                unit = unit_name(d.group("ns"), d.group("pod"), d.group("ctr"))
                yield Container(line_no, ts, host, "cri-o", cid, d.group("ctr"), None, unit)


def runtime_fact(msg: str, kv: dict[str, str]) -> NodeFact | None:
    """The meaning of a containerd/CRI-O message (``msg="…"`` unescaped), or None.

    >>> runtime_fact('TaskOOM event container_id:"' + "ab" * 32 + '"', {}).kind
    'task_oom'
    >>> f = runtime_fact('TaskExit event container_id:"' + "ab" * 32 + '" id:"' + "ab" * 32 +
    ...                  '" pid:4241 exit_status:137 exited_at:{seconds:1 nanos:2}', {})
    >>> f.kind, f.exit_code
    ('task_exit', 137)
    """
    if (m := _TASK_OOM.match(msg)) is not None:
        return NodeFact(
            "containerd", "task_oom", msg, container_id=m.group("c1") or m.group("c2"), reason="TaskOOM"
        )
    if (m := _TASK_EXIT.match(msg)) is not None:
        cid = m.group("c1") or m.group("c2")
        if (m.group("i1") or m.group("i2")) != cid:
            return None  # an exec'd process's exit, not the container's
        status = m.group("s1") or m.group("s2") or "0"
        return NodeFact(
            "containerd", "task_exit", msg, container_id=cid, exit_code=int(status), reason="TaskExit"
        )
    return None


_SHOWN_FIELDS = (
    "probe",
    "status",
    "probeType",
    "containerName",
    "containerMessage",
    "output",
    "err",
    "resourceName",
)


def readable(text: str) -> str:
    """A kubelet or runtime line as a timeline shows it: its message and the fields that say
    what happened, without the klog or logrus header (other text is returned as it is).

    >>> readable('Unhealthy: I0320 02:10:03.000000    1500 prober.go:107] "Probe failed" '
    ...          'probeType="Startup" pod="a/b" podUID="u" containerName="vllm" output="refused"')
    'Unhealthy: Probe failed (probeType Startup, containerName vllm, output refused)'
    >>> readable('TaskOOM: time="2026-03-20T02:30:00Z" level=info msg="TaskOOM event"')
    'TaskOOM event'
    """
    m = _KLOG.search(text)
    if m is not None:
        head = text[: m.start()].rstrip(": ")
        msg = m.group("msg")
        if msg.startswith('"'):
            quoted, _, rest = msg[1:].partition('" ')
            kv = fields_of(" " + rest)
            shown = ", ".join(f"{k} {kv[k]}" for k in _SHOWN_FIELDS if k in kv)
            msg = f"{quoted} ({shown})" if shown else quoted.rstrip('"')
        return f"{head}: {msg}" if head else msg
    lm = _LOGRUS.search(text)
    if lm is not None:
        return _unquote('"' + lm.group("msg") + '"')
    return text
