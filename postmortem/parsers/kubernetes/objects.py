"""``kubectl get pod -o json|yaml`` and ``kubectl get events -o json|yaml`` (core/v1 and
events.k8s.io/v1): one object, a ``List``, or several YAML documents.

A Pod gives one ``k8s_containers`` row per container (spec and status joined by name), a
``containers`` row per container id it names (so a kernel record's cgroup maps to the
container), and ``k8s_events`` rows for what its status says happened: the previous and current
terminations (``lastState``/``state.terminated``), the current run's start, a pod-level eviction.
An Event gives one ``k8s_events`` row with a normalised ``kind``.

Safety: JSON by the standard library; YAML by PyYAML's safe loader after a scan that refuses
anchors, aliases and tags (kubectl prints none; an alias bomb cannot be built). Files over
:data:`MAX_BYTES` are refused with a parse issue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from ...lazyre import lazy_re
from ...records import Container, K8sContainer, K8sEvent
from ...timeutil import UTC
from .. import register
from ..base import Head, LineChunk, Output, ParseContext, Parser
from .names import container_id, quantity_bytes, unit_name

#: the largest object file read (a namespace's pods with their statuses is a few MB)
MAX_BYTES = 128 << 20
_KIND = lazy_re(
    r'"kind"\s*:\s*"(?:Pod|PodList|List|Event|EventList)"|^\s*(?:- )?kind:\s*(?:Pod|PodList|List|Event|EventList)\s*$',
    re.M,
)
_API = lazy_re(
    r'"apiVersion"\s*:\s*"(?:v1|events\.k8s\.io/v1(?:beta1)?)"|^\s*(?:- )?apiVersion:\s*(?:v1|events\.k8s\.io/v1(?:beta1)?)\s*$',
    re.M,
)
_TIME = lazy_re(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$")
_PROBE_EV = lazy_re(
    r"^(?:\(combined from similar events\): )?(Liveness|Readiness|Startup) probe (?:failed|errored)"
)
_PROBE_KILL = lazy_re(r"failed (liveness|startup) probe, will be restarted")
_FIELD_PATH = lazy_re(r"^spec\.(?:containers|initContainers)\{(?P<c>[^}]+)\}$")
_EVENT_KINDS = {
    "BackOff": "backoff",
    "Evicted": "evicted",
    "EvictionThresholdMet": "eviction_pressure",
    "SystemOOM": "system_oom",
    "OOMKilling": "oom_killing",
    "Started": "container_started",
    "Created": "container_created",
    "Preempting": "preempted",
    "Preempted": "preempted",
    "NodeNotReady": "node_not_ready",
}


class _Refused(ValueError):
    pass


#: the deepest YAML nesting read (a Pod is about 10 levels deep)
MAX_DEPTH = 64
_FLOW = lazy_re(r"[\[\]{}]")


def nesting(text: str) -> int:
    """An upper bound of a YAML document's nesting: indentation (a level is at least one column)
    plus flow brackets, counted on the raw text (quoted brackets count too: only a bound).

    >>> nesting("  - b: [1, {c: 2}]"), nesting("[" * 500)
    (4, 500)
    """
    deepest = depth = 0
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" -"))
        for m in _FLOW.finditer(line):
            depth += 1 if m.group(0) in "[{" else -1
            deepest = max(deepest, depth + indent // 2)
        deepest = max(deepest, max(depth, 0) + indent // 2)
    return deepest


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time of the API (seconds or micro/nanoseconds), in UTC; None otherwise.

    >>> parse_time("2026-01-15T10:00:05Z"), parse_time("2026-01-15T10:00:05.123456789Z").microsecond
    (datetime.datetime(2026, 1, 15, 10, 0, 5, tzinfo=datetime.timezone.utc), 123456)
    >>> parse_time("0001-01-01T00:00:00Z") is None, parse_time(None)
    (True, None)
    """
    if not isinstance(value, str) or not _TIME.match(value):
        if isinstance(value, datetime):  # YAML's loader makes datetimes of unquoted times
            return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:
        head, _, rest = text.partition(".")
        digits = re.match(r"\d+", rest)
        frac = digits.group(0) if digits else ""
        text = f"{head}.{frac[:6].ljust(6, '0')}{rest[len(frac) :]}"
    try:
        ts = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None
    return None if ts.year < 1970 else ts


def load_documents(text: str) -> list[Any]:
    """The documents of a JSON or YAML file (YAML only with the safe loader, no aliases)."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except ValueError as e:
            raise _Refused(f"not valid JSON: {e}") from None
        except RecursionError:
            raise _Refused("JSON nested too deep: refused") from None
    if nesting(text) > MAX_DEPTH:
        # libyaml's parser recurses on the C stack: a deep enough document crashes the process
        raise _Refused(f"YAML nested more than {MAX_DEPTH} levels: refused")
    import yaml

    try:
        for token in yaml.scan(text, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):
            if isinstance(token, yaml.AliasToken | yaml.AnchorToken | yaml.TagToken):
                raise _Refused("YAML with anchors, aliases or tags: refused (kubectl writes none)")
        loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
        return [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as e:
        raise _Refused(f"not valid YAML: {str(e).splitlines()[0]}") from None


def objects_of(doc: Any) -> Iterator[dict[str, Any]]:
    """Pods and Events in a document (a ``List``'s items flattened)."""
    if isinstance(doc, list):
        for d in doc:
            yield from objects_of(d)
    elif isinstance(doc, dict):
        if isinstance(doc.get("items"), list):
            yield from objects_of(doc["items"])
        elif doc.get("kind") in ("Pod", "Event"):
            yield doc


def _d(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _i(value: Any) -> int | None:
    return (
        value
        if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31
        else None
    )


def probe_json(probe: Any) -> str | None:
    """A probe's settings as compact JSON (Kubernetes' defaults filled in).

    >>> probe_json({"httpGet": {"path": "/health", "port": 8000}, "failureThreshold": 60})
    '{"type": "httpGet", "target": "/health:8000", "delay": 0, "period": 10, "timeout": 1, "failure": 60}'
    """
    if not isinstance(probe, dict):
        return None
    kind = next((k for k in ("httpGet", "tcpSocket", "exec", "grpc") if k in probe), "unknown")
    found = probe.get(kind)
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    target = f"{spec.get('path', '')}:{spec.get('port', '')}" if kind != "exec" else "command"
    return json.dumps(
        {
            "type": kind,
            "target": target,
            "delay": _i(probe.get("initialDelaySeconds")) or 0,
            "period": _i(probe.get("periodSeconds")) or 10,
            "timeout": _i(probe.get("timeoutSeconds")) or 1,
            "failure": _i(probe.get("failureThreshold")) or 3,
        }
    )


def _shm(pod: dict[str, Any], spec: dict[str, Any]) -> tuple[bool | None, int | None]:
    vols = {v.get("name"): v for v in (_d(pod, "spec", "volumes") or []) if isinstance(v, dict)}
    for mount in spec.get("volumeMounts") or []:
        if not isinstance(mount, dict) or mount.get("mountPath") != "/dev/shm":
            continue
        empty = _d(vols.get(mount.get("name")), "emptyDir")
        if isinstance(empty, dict) and empty.get("medium") == "Memory":
            return True, quantity_bytes(empty.get("sizeLimit"))
        return False, None
    return None, None


def _pod_rows(pod: dict[str, Any], line_no: int, ctx: ParseContext) -> Iterator[Output]:
    meta = pod.get("metadata") or {}
    ns, name = _s(meta.get("namespace")) or "default", _s(meta.get("name"))
    if name is None:
        yield ctx.issue(line_no, "Pod without metadata.name", json.dumps(meta)[:200])
        return
    uid = _s(meta.get("uid"))
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = f"{owners[0].get('kind')}/{owners[0].get('name')}" if owners else None
    status = pod.get("status") or {}
    node = _s(_d(pod, "spec", "nodeName")) or ctx.host
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or [] if isinstance(s, dict)}
    for spec in _d(pod, "spec", "containers") or []:
        if not isinstance(spec, dict) or not _s(spec.get("name")):
            continue
        st = statuses.get(spec["name"]) or {}
        yield from _container_rows(pod, spec, st, line_no, (ns, name, uid, owner, node))
    for cond in status.get("conditions") or []:
        # the pod became ready (its readiness probes passing): when a restart served again
        if isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("status") == "True":
            ts = parse_time(cond.get("lastTransitionTime"))
            if ts is not None:
                yield K8sEvent(
                    line_no, ts, _s(cond.get("lastTransitionTime")), None, node, "pod", "ready", ns, name, uid,
                    None, None, None, "Ready", "Readiness", None, None, f"pod {ns}/{name} ready",
                )  # fmt: skip
    if status.get("reason") == "Evicted" or status.get("reason") == "Preempting":
        times = [
            parse_time(c.get("lastTransitionTime"))
            for c in status.get("conditions") or []
            if isinstance(c, dict)
        ]
        ts = max((t for t in times if t), default=None)
        kind = "evicted" if status["reason"] == "Evicted" else "preempted"
        yield K8sEvent(
            line_no, ts, None, None, node, "pod", kind, ns, name, uid, None, None, None,
            status["reason"], None, None, None, str(status.get("message") or status["reason"]),
        )  # fmt: skip


def _container_rows(
    pod: dict[str, Any], spec: dict[str, Any], st: dict[str, Any], line_no: int, who: tuple[Any, ...]
) -> Iterator[Output]:
    ns, name, uid, owner, node = who
    cname = spec["name"]
    unit = unit_name(ns, name, cname)
    state_kind, state = next(iter((st.get("state") or {}).items()), (None, {}))
    last = _d(st, "lastState", "terminated") or {}
    cid, last_cid = container_id(st.get("containerID")), container_id(last.get("containerID"))
    limits, requests = _d(spec, "resources", "limits") or {}, _d(spec, "resources", "requests") or {}
    shm, shm_size = _shm(pod, spec)
    started = parse_time(_d(state, "startedAt"))
    times = [
        t for t in (started, parse_time(last.get("finishedAt")), parse_time(_d(state, "finishedAt"))) if t
    ]
    yield K8sContainer(
        line_no, max(times, default=None), node, ns, name, uid, cname, cid, unit, owner,
        _s(_d(pod, "status", "qosClass")), _s(_d(pod, "status", "phase")), _s(_d(pod, "status", "reason")),
        _i(st.get("restartCount")), st.get("ready") if isinstance(st.get("ready"), bool) else None,
        state_kind, _s(_d(state, "reason")), started, _s(last.get("reason")), _i(last.get("exitCode")),
        parse_time(last.get("startedAt")), parse_time(last.get("finishedAt")), last_cid,
        _s(last.get("message")), quantity_bytes(limits.get("memory")), quantity_bytes(requests.get("memory")),
        _i(quantity_bytes(limits.get("nvidia.com/gpu"))), probe_json(spec.get("startupProbe")),
        probe_json(spec.get("livenessProbe")), probe_json(spec.get("readinessProbe")), shm, shm_size,
    )  # fmt: skip
    for c in dict.fromkeys(x for x in (cid, last_cid) if x):  # in order, once each
        yield Container(line_no, None, node, "kubernetes", c, cname, _s(spec.get("image")), unit)
    for which, term in (("last", last), ("current", state if state_kind == "terminated" else {})):
        if not term:
            continue
        tcid = container_id(term.get("containerID")) or (last_cid if which == "last" else cid)
        code = _i(term.get("exitCode"))
        reason = _s(term.get("reason")) or "Unknown"
        words = f"{cname} terminated: {reason}, exit code {code}"
        if _s(term.get("message")):
            words += f" — {term['message']}"
        yield K8sEvent(
            line_no, parse_time(term.get("finishedAt")), _s(term.get("finishedAt")), parse_time(term.get("startedAt")),
            node, "pod", "terminated", ns, name, uid, cname, tcid, unit, reason, None, code, None, words,
        )  # fmt: skip
    if started is not None:
        yield K8sEvent(
            line_no, started, _s(_d(state, "startedAt")), None, node, "pod", "container_started", ns, name, uid,
            cname, cid, unit, "Started", None, None, None, f"{cname} running since its restart {st.get('restartCount')}",
        )  # fmt: skip


def _event_row(ev: dict[str, Any], line_no: int, ctx: ParseContext) -> K8sEvent | None:
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    series = ev.get("series") or {}
    ts = next(
        (t for t in map(parse_time, (ev.get("eventTime"), series.get("lastObservedTime"), ev.get("lastTimestamp"),
                                     ev.get("deprecatedLastTimestamp"), ev.get("firstTimestamp"))) if t),
        None,
    )  # fmt: skip
    first = parse_time(ev.get("firstTimestamp")) or parse_time(ev.get("deprecatedFirstTimestamp"))
    reason = _s(ev.get("reason"))
    message = str(ev.get("message") or ev.get("note") or "")
    kind = classify_event(reason, message)
    ns = _s(obj.get("namespace")) or _s(_d(ev, "metadata", "namespace"))
    host = _s(_d(ev, "source", "host")) or _s(ev.get("reportingInstance")) or ctx.host
    pod = container = uid = unit = None
    if obj.get("kind") == "Pod":
        pod, uid = _s(obj.get("name")), _s(obj.get("uid"))
        fm = _FIELD_PATH.match(str(obj.get("fieldPath") or ""))
        container = fm.group("c") if fm else None
        if ns and pod and container:
            unit = unit_name(ns, pod, container)
    elif obj.get("kind") == "Node":
        host = _s(obj.get("name")) or host
    else:
        return None
    count = _i(ev.get("count")) or _i(series.get("count")) or _i(ev.get("deprecatedCount"))
    probe = m.group(1) if (m := _PROBE_EV.match(message)) or (m := _PROBE_KILL.search(message)) else None
    return K8sEvent(
        line_no, ts, None, first, host, "event", kind, ns, pod, uid, container, None, unit, reason,
        probe.capitalize() if probe else None, None, count, message,
    )  # fmt: skip


def classify_event(reason: str | None, message: str) -> str:
    """The normalised kind of an Event.

    >>> classify_event("Unhealthy", "Startup probe failed: connection refused")
    'probe_failed'
    >>> classify_event("Killing", "Container vllm failed startup probe, will be restarted")
    'probe_kill'
    >>> classify_event("Killing", "Stopping container vllm"), classify_event("Pulled", "x")
    ('killing', 'other')
    """
    if reason == "Unhealthy" and _PROBE_EV.match(message):
        return "probe_failed"
    if reason == "Killing":
        return "probe_kill" if _PROBE_KILL.search(message) else "killing"
    return _EVENT_KINDS.get(reason or "", "other")


def _line_finder(text: str) -> Any:
    """A function from an object's name to the line it is first named on (after the last)."""
    lines = text.count("\n")
    pos = [0]

    def find(name: str) -> int:
        for pattern in (f'"name": "{name}"', f"name: {name}", f'"name":"{name}"'):
            at = text.find(pattern, pos[0])
            if at >= 0:
                pos[0] = at + 1
                return text.count("\n", 0, at) + 1
        return min(lines, 1) or 1

    return find


@register
class KubernetesObjects(Parser):
    name = "k8s-objects"
    description = "kubectl get pod/events -o json|yaml (Pods, Events, Lists)"
    tables = ("k8s_containers", "k8s_events", "containers")
    priority = 40

    def sniff(self, head: Head) -> int:
        text = head.text
        if not _KIND.search(text) or not _API.search(text):
            return 0
        return 92 if re.search(r'"?(metadata|items)"?\s*:', text) else 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        parts: list[str] = []
        size = 0
        lines = 0
        for chunk in chunks:
            lines += len(chunk)
            size += len(chunk.text)
            if size > MAX_BYTES:
                ctx.ignored(lines)
                yield ctx.issue(1, f"object file over {MAX_BYTES >> 20} MB: not read", "", unparsed=False)
                return
            parts.append(chunk.text)
        text = "\n".join(parts)
        try:
            docs = load_documents(text)
        except _Refused as e:
            ctx.ignored(lines)
            yield ctx.issue(1, str(e), text[:200], unparsed=False)
            return
        find = _line_finder(text)
        found = False
        for obj in objects_of(docs):
            found = True
            name = str(_d(obj, "metadata", "name") or "")
            line_no = find(name) if name else 1
            if obj.get("kind") == "Pod":
                yield from _pod_rows(obj, line_no, ctx)
            elif (row := _event_row(obj, line_no, ctx)) is not None:
                yield row
        empty = any(
            isinstance(d, dict) and str(d.get("kind", "")).endswith("List") and d.get("items") == []
            for d in docs
        )
        if found or empty:
            ctx.parsed(lines)
            if not found:
                ctx.note("an empty list: no objects (none matched, or the events had expired)")
        else:
            ctx.ignored(lines)
            yield ctx.issue(1, "no Pod or Event objects in this document", text[:200], unparsed=False)
