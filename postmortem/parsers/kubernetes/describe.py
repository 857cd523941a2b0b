"""``kubectl describe pod`` (one pod or several): the Pod's fields as kubectl renders them and
its Events table.

The same rows as a Pod object (:mod:`~postmortem.parsers.kubernetes.objects`): one
``k8s_containers`` row per container, ``containers`` rows for its ids, ``k8s_events`` for its
terminations and for each row of the Events table. The table's ages (``5m``, ``2m (x12 over
4m)``) count back from when describe ran: the capture's time when a bundle says it, else the
file's modification time (noted on the source; ``ts_raw`` keeps the age as printed). Times of
the fields are RFC 1123 (``Thu, 15 Jan 2026 10:00:00 +0000``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ...lazyre import lazy_re
from ...records import Container, K8sContainer, K8sEvent
from ...timeutil import UTC
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .names import container_id, quantity_bytes, unit_name
from .objects import classify_event

_KV = lazy_re(r"^(?P<indent> *)(?P<key>[A-Za-z][A-Za-z0-9 /._-]*?):(?:\s+(?P<value>.*?))?\s*$")
_TIME = lazy_re(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$")
_EVENT = lazy_re(
    r"^\s{2}(?P<type>Normal|Warning)\s+(?P<reason>\S+)\s+(?P<age>\S+(?: \(x(?P<count>\d+) over (?P<first>\S+)\))?)"
    r"\s+(?P<source>[\w.-]+(?:, [\w.-]+)?)\s+(?P<message>.*)$"
)
#: kubectl ≤ 1.7: FirstSeen LastSeen Count From SubObjectPath Type Reason Message
_EVENT_OLD = lazy_re(
    r"^\s{2}(?P<first>\S+)\s+(?P<age>\S+)\s+(?P<count>\d+)\s+(?P<source>[\w.-]+(?:, [\w.-]+)?)\s+"
    r"(?:(?P<subpath>spec\.\S+)\s+)?(?P<type>Normal|Warning)\s+(?P<reason>\S+)\s+(?P<message>.*)$"
)
_AGE = lazy_re(r"^(?:(?P<y>\d+)y)?(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$")
_PROBE = lazy_re(
    r"^(?P<type>http-get|tcp-socket|exec|grpc)\s*(?P<target>\S*).*?delay=(?P<delay>\d+)s timeout=(?P<timeout>\d+)s "
    r"period=(?P<period>\d+)s (?:#success=\d+ #failure=(?P<f1>\d+)|successThreshold=\d+ failureThreshold=(?P<f2>\d+))"
)
_MOUNT = lazy_re(r"^\s*/dev/shm from (?P<vol>\S+)")
_SUBPATH = lazy_re(r"^spec\.(?:containers|initContainers)\{([^}]+)\}$")
_FIELD_PREFIX = lazy_re(r"^spec\.containers\{[^}]+\}: ")
_PROBE_TYPES = {"http-get": "httpGet", "tcp-socket": "tcpSocket", "exec": "exec", "grpc": "grpc"}


def rfc1123(text: str | None) -> datetime | None:
    """A describe time in UTC; kubectl's zero time is None.

    >>> rfc1123("Thu, 15 Jan 2026 10:00:00 +0100")
    datetime.datetime(2026, 1, 15, 9, 0, tzinfo=datetime.timezone.utc)
    """
    if not text or not _TIME.match(text):
        return None
    ts = datetime.strptime(text, "%a, %d %b %Y %H:%M:%S %z").astimezone(UTC)
    return None if ts.year < 1970 else ts


def age_s(text: str) -> float | None:
    """Seconds in a describe age (``3m2s``, ``2d3h``, ``65m``); None for ``<unknown>``.

    >>> age_s("3m2s"), age_s("2d3h"), age_s("<unknown>")
    (182.0, 183600.0, None)
    """
    m = _AGE.match(text)
    if not m or not text:
        return None
    units = {"y": 31536000, "d": 86400, "h": 3600, "m": 60, "s": 1}
    return float(sum(int(v) * units[k] for k, v in m.groupdict().items() if v))


def probe_from_text(text: str) -> str | None:
    """A describe probe line as the JSON ``objects.probe_json`` writes.

    >>> probe_from_text("http-get http://:8000/health delay=0s timeout=1s period=10s #success=1 #failure=60")
    '{"type": "httpGet", "target": "http://:8000/health", "delay": 0, "period": 10, "timeout": 1, "failure": 60}'
    """
    m = _PROBE.match(text)
    if m is None:
        return None
    return json.dumps(
        {
            "type": _PROBE_TYPES[m.group("type")],
            "target": m.group("target"),
            "delay": int(m.group("delay")),
            "period": int(m.group("period")),
            "timeout": int(m.group("timeout")),
            "failure": int(m.group("f1") or m.group("f2")),
        }
    )


@dataclass
class _Ctr:
    name: str
    line_no: int
    fields: dict[str, str] = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    shm_volume: str | None = None


@dataclass
class _Pod:
    line_no: int
    fields: dict[str, str] = field(default_factory=dict)
    containers: list[_Ctr] = field(default_factory=list)
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    events: list[tuple[int, re.Match[str]]] = field(default_factory=list)


class _Reader:
    """Reads one file's pods line by line (a small state machine on indentation)."""

    def __init__(self) -> None:
        self.pods: list[_Pod] = []
        self.section = ""
        self.sub = ""
        self.ctr: _Ctr | None = None
        self.volume: str | None = None

    def line(self, line_no: int, line: str) -> bool:
        if not line.strip():
            return False
        if line.startswith("Name:") or not self.pods:
            if not line.startswith("Name:"):
                return False
            self.pods.append(_Pod(line_no))
            self.section = ""
        pod = self.pods[-1]
        if self.section == "Events" and (m := _EVENT.match(line) or _EVENT_OLD.match(line)):
            pod.events.append((line_no, m))
            return True
        m = _KV.match(line)
        if m is None:
            return self._continued(line)
        return self._key(pod, line_no, len(m.group("indent")), m.group("key"), m.group("value") or "")

    def _continued(self, line: str) -> bool:
        if self.ctr is not None and self.sub == "Mounts" and (mm := _MOUNT.match(line)):
            self.ctr.shm_volume = mm.group("vol")
            return True
        return self.section in ("Events", "Containers", "Volumes", "Conditions", "Tolerations")

    def _key(self, pod: _Pod, line_no: int, indent: int, key: str, value: str) -> bool:
        if indent == 0:
            self.section, self.sub, self.ctr = key, "", None
            pod.fields.setdefault(key, value)
            return True
        if self.section in ("Containers", "Init Containers") and indent == 2 and not value:
            self.ctr = _Ctr(key, line_no)
            if self.section == "Containers":
                pod.containers.append(self.ctr)
            return True
        if self.section == "Volumes" and indent == 2 and not value:
            self.volume = key
            pod.volumes[key] = {}
            return True
        if self.section == "Volumes" and self.volume is not None:
            pod.volumes[self.volume][key] = value
            return True
        ctr = self.ctr
        if ctr is None:
            return True
        if indent == 4:
            self.sub = key
            ctr.fields[key] = value
        elif indent >= 6 and self.sub in ("State", "Last State", "Limits", "Requests"):
            target = {
                "State": ctr.state,
                "Last State": ctr.last,
                "Limits": ctr.limits,
                "Requests": ctr.requests,
            }
            target[self.sub][key] = value
        return True


def _pod_rows(pod: _Pod, ctx: ParseContext, captured: datetime | None) -> Iterator[Output]:
    f = pod.fields
    name, ns = f.get("Name"), f.get("Namespace") or "default"
    if not name:
        return
    node = (f.get("Node") or "").split("/", 1)[0] or ctx.host
    if node == "<none>":
        node = ctx.host
    uid = None  # describe does not print the UID
    for c in pod.containers:
        yield from _container_rows(pod, c, ns, name, node, uid)
    for line_no, m in pod.events:
        yield _event(m, line_no, ns, name, node, captured, pod)


def _container_rows(
    pod: _Pod, c: _Ctr, ns: str, name: str, node: str | None, uid: str | None
) -> Iterator[Output]:
    unit = unit_name(ns, name, c.name)
    cid = container_id(c.fields.get("Container ID"))
    state = (c.fields.get("State") or "").lower() or None
    started = rfc1123(c.state.get("Started"))
    last_finished = rfc1123(c.last.get("Finished"))
    vol = pod.volumes.get(c.shm_volume or "", {})
    shm = (vol.get("Medium") == "Memory") if c.shm_volume else None
    restarts = c.fields.get("Restart Count", "")
    code = c.last.get("Exit Code", "")
    times = [t for t in (started, last_finished) if t]
    yield K8sContainer(
        c.line_no, max(times, default=None), node, ns, name, uid, c.name, cid, unit,
        pod.fields.get("Controlled By") or None, pod.fields.get("QoS Class") or None,
        pod.fields.get("Status") or None, pod.fields.get("Reason") or None,
        int(restarts) if restarts.isdigit() else None,
        {"True": True, "False": False}.get(c.fields.get("Ready", "")), state, c.state.get("Reason"), started,
        c.last.get("Reason"), int(code) if code.lstrip("-").isdigit() else None, rfc1123(c.last.get("Started")),
        last_finished, None, c.last.get("Message"), quantity_bytes(c.limits.get("memory")),
        quantity_bytes(c.requests.get("memory")), _int(quantity_bytes(c.limits.get("nvidia.com/gpu"))),
        probe_from_text(c.fields.get("Startup", "")), probe_from_text(c.fields.get("Liveness", "")),
        probe_from_text(c.fields.get("Readiness", "")), shm, quantity_bytes(vol.get("SizeLimit")) if shm else None,
    )  # fmt: skip
    if cid:
        yield Container(c.line_no, None, node, "kubernetes", cid, c.name, c.fields.get("Image") or None, unit)
    if c.last.get("Reason") or state == "terminated":
        term = c.last if c.last.get("Reason") else c.state
        tcode = term.get("Exit Code", "")
        code_i = int(tcode) if tcode.lstrip("-").isdigit() else None
        words = f"{c.name} terminated: {term.get('Reason')}, exit code {code_i}"
        yield K8sEvent(
            c.line_no, rfc1123(term.get("Finished")), term.get("Finished"), rfc1123(term.get("Started")), node,
            "pod", "terminated", ns, name, uid, c.name, None if term is c.last else cid, unit, term.get("Reason"),
            None, code_i, None, words,
        )  # fmt: skip
    if started is not None and state == "running":
        yield K8sEvent(
            c.line_no, started, c.state.get("Started"), None, node, "pod", "container_started", ns, name, uid,
            c.name, cid, unit, "Started", None, None, None, f"{c.name} running since its restart {restarts}",
        )  # fmt: skip


def _int(v: int | None) -> int | None:
    return v if v is not None and v < 2**31 else None


def _event(
    m: re.Match[str], line_no: int, ns: str, pod: str, node: str | None, captured: datetime | None, p: _Pod
) -> K8sEvent:
    message = _FIELD_PREFIX.sub("", m.group("message"))
    reason = m.group("reason")
    last_age = age_s(m.group("age").split(" ", 1)[0])
    first_age = age_s(m.group("first")) if m.group("first") else None
    ts = captured - timedelta(seconds=last_age) if captured and last_age is not None else None
    first = captured - timedelta(seconds=first_age) if captured and first_age is not None else None
    kind = classify_event(reason, message)
    probe = next(
        (
            w
            for w in ("Startup", "Liveness", "Readiness")
            if message.startswith(w) or f"failed {w.lower()} probe" in message
        ),
        None,
    )
    sub = m.groupdict().get("subpath")
    named = _SUBPATH.match(sub) if sub else None
    container = named.group(1) if named else (p.containers[0].name if len(p.containers) == 1 else None)
    unit = unit_name(ns, pod, container) if container else None
    count = int(m.group("count")) if m.group("count") else 1
    return K8sEvent(
        line_no, ts, m.group("age"), first, node, "event", kind, ns, pod, None, container, None, unit, reason,
        probe, None, count, message,
    )  # fmt: skip


@register
class KubectlDescribe(Parser):
    name = "k8s-describe"
    description = "kubectl describe pod (one or several pods, with the Events table)"
    tables = ("k8s_containers", "k8s_events", "containers")
    priority = 40

    def sniff(self, head: Head) -> int:
        lines = head.lines[:40]
        if not lines or not lines[0].startswith("Name:"):
            return 0
        keys = {ln.split(":", 1)[0] for ln in lines if ln[:1].isalpha()}
        return 90 if {"Namespace", "Node"} <= keys or {"Namespace", "Containers"} <= keys else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        reader = _Reader()
        for chunk in chunks:
            for line_no, line in chunk:
                if reader.line(line_no, line):
                    ctx.parsed()
                else:
                    ctx.ignored()
        captured = ctx.at or ctx.mtime
        if any(p.events for p in reader.pods):
            ctx.note(
                "describe's event ages are counted back from "
                + ("the capture's time" if ctx.at else "the file's modification time")
            )
        for pod in reader.pods:
            yield from _pod_rows(pod, ctx, captured)
