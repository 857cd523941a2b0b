"""Kubernetes names: the unit a pod's container is, cgroup paths, log paths, quantities.

A pod's container is the unit ``k8s:<namespace>/<pod>/<container>`` (``k8s:default/vllm-0/vllm``):
what restarts is the container, and namespace and pod name make it unique on a cluster. A
kernel OOM record names a container only by its cgroup (pod UID and container id); until a Pod
object, an event or a runtime line maps the id to a name, the unit is ``k8s:pod-<uid 8>/<id 12>``
(short, and still joinable). docs/inputs.md (Kubernetes) lists every form read here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lazyre import lazy_re

#: the prefix of every Kubernetes unit
UNIT_PREFIX = "k8s:"

_KUBEPODS = lazy_re(
    r"(?:^|/)(?:[\w.-]+-)?kubepods(?:\.slice)?"
    r"(?:/(?:[\w.-]+-)?kubepods-(?P<qos_sd>burstable|besteffort)\.slice|/(?P<qos_fs>burstable|besteffort))?"
    r"(?:/(?:[\w.-]+-)?pod(?P<uid>[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})"
    r"(?:\.slice)?(?:/(?P<leaf>[^/,\s]+))?)?"
)
_LEAF = lazy_re(r"^(?:(?P<rt>cri-containerd|crio|docker|crio-conmon)-)?(?P<cid>[0-9a-f]{64})(?:\.scope)?$")
_QUANTITY = lazy_re(r"^(?P<num>[+-]?\d+(?:\.\d+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m|e[+-]?\d+)?$")
_FACTORS = {
    "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "m": 1e-3,
}  # fmt: skip
_POD_LOG = lazy_re(
    r"(?:^|/)(?P<ns>[a-z0-9][a-z0-9-]{0,62})_(?P<pod>[a-z0-9][a-z0-9.-]{0,252})_"
    r"(?P<uid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})/"
    r"(?P<container>[a-z0-9][a-z0-9-]{0,62})/(?P<restart>\d+)\.log(?:\.\d{8}-\d{6})?(?:\.gz)?$"
)
_CTR_LINK = lazy_re(
    r"(?:^|/)(?P<pod>[a-z0-9][a-z0-9.-]{0,252})_(?P<ns>[a-z0-9][a-z0-9-]{0,62})_"
    r"(?P<container>[a-z0-9][a-z0-9-]{0,62})-(?P<cid>[0-9a-f]{64})\.log$"
)
_KUBECTL_LOG = lazy_re(
    r"(?:^|/)kubernetes/logs/(?P<ns>[a-z0-9][a-z0-9-]{0,62})_(?P<pod>[a-z0-9][a-z0-9.-]{0,252})_"
    r"(?P<container>[a-z0-9][a-z0-9-]{0,62})(?:\.previous)?\.log$"
)
_CONTAINER_ID = lazy_re(r"^(?:(?:containerd|cri-o|docker|cri-containerd)://)?(?P<id>[0-9a-f]{64})$")


def unit_name(namespace: str, pod: str, container: str) -> str:
    """The unit of a pod's container.

    >>> unit_name("default", "vllm-demo-0", "vllm")
    'k8s:default/vllm-demo-0/vllm'
    """
    return f"{UNIT_PREFIX}{namespace}/{pod}/{container}"


def unnamed_unit(pod_uid: str | None, container_id: str | None) -> str:
    """The unit of a container known only from its cgroup (no Pod object or event named it).

    >>> unnamed_unit("8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f", "ab" * 32)
    'k8s:pod-8f14e45f/abababababab'
    >>> unnamed_unit("8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f", None)
    'k8s:pod-8f14e45f'
    """
    pod = f"pod-{(pod_uid or 'unknown')[:8]}"
    return f"{UNIT_PREFIX}{pod}/{container_id[:12]}" if container_id else f"{UNIT_PREFIX}{pod}"


def is_k8s_unit(unit: str | None) -> bool:
    """Whether ``unit`` is a pod's container.

    >>> is_k8s_unit("k8s:default/p/c"), is_k8s_unit("docker:x"), is_k8s_unit(None)
    (True, False, False)
    """
    return unit is not None and unit.startswith(UNIT_PREFIX)


@dataclass(frozen=True, slots=True)
class PodCgroup:
    """What a kubepods cgroup path says: the pod, the container (its leaf), the QoS level."""

    pod_uid: str | None
    container_id: str | None
    qos: str | None  # guaranteed | burstable | besteffort (None: not a pod's path)
    level: str  # container | pod | qos | node (the kubepods root)

    @property
    def unit(self) -> str | None:
        return unnamed_unit(self.pod_uid, self.container_id) if self.pod_uid else None


def pod_cgroup(path: str | None) -> PodCgroup | None:
    """Read a cgroup path of the kubelet's (both drivers, every QoS class, any prefix).

    >>> c = pod_cgroup("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f14e45f_ceea_"
    ...                "467f_a0e6_1b1a2c3d4e5f.slice/cri-containerd-" + "ab" * 32 + ".scope")
    >>> c.pod_uid, c.container_id[:4], c.qos, c.level
    ('8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f', 'abab', 'burstable', 'container')
    >>> pod_cgroup("/kubepods/pod8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f").level
    'pod'
    >>> pod_cgroup("/kubepods.slice").level, pod_cgroup("/system.slice/a.service")
    ('node', None)
    """
    if not path or "kubepods" not in path:
        return None
    m = _KUBEPODS.search(path)
    if m is None:
        return None
    qos = m.group("qos_sd") or m.group("qos_fs")
    uid = m.group("uid")
    if uid is None:
        return PodCgroup(None, None, qos, "qos" if qos else "node")
    uid = uid.replace("_", "-")
    leaf = m.group("leaf")
    lm = _LEAF.match(leaf) if leaf else None
    cid = lm.group("cid") if lm else None
    return PodCgroup(uid, cid, qos or "guaranteed", "container" if leaf else "pod")


def container_id(text: str | None) -> str | None:
    """A 64-hex container id from the API's ``containerd://…`` form or a bare one.

    >>> container_id("containerd://" + "0a" * 32)[:6], container_id("docker://x"), container_id(None)
    ('0a0a0a', None, None)
    """
    if not text:
        return None
    m = _CONTAINER_ID.match(text.strip())
    return m.group("id") if m else None


def quantity_bytes(text: object) -> int | None:
    """A Kubernetes quantity (``64Gi``, ``500M``, ``1e9``, plain bytes) in bytes; None if not one.

    >>> quantity_bytes("64Gi"), quantity_bytes("500M"), quantity_bytes(1024), quantity_bytes("x")
    (68719476736, 500000000, 1024, None)
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return int(text)
    if not isinstance(text, str):
        return None
    m = _QUANTITY.match(text.strip())
    if m is None:
        return None
    num = float(m.group("num"))
    suffix = m.group("suffix")
    if suffix is None:
        value = num
    elif suffix.startswith("e"):
        value = num * 10 ** int(suffix[1:])
    else:
        value = num * _FACTORS[suffix]
    if not 0 <= value < 2**63:
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class PodLog:
    """What a CRI log file's path says about whose output it is."""

    namespace: str
    pod: str
    container: str
    pod_uid: str | None = None
    restart: int | None = None
    container_id: str | None = None

    @property
    def unit(self) -> str:
        return unit_name(self.namespace, self.pod, self.container)


def pod_log(path: str) -> PodLog | None:
    """The pod, container and restart of ``/var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log``,
    of a ``/var/log/containers/<pod>_<ns>_<container>-<id>.log`` link's name, or of the
    ``kubernetes/logs/<ns>_<pod>_<container>[.previous].log`` a collect bundle holds.

    >>> pod_log("/var/log/pods/default_vllm-0_8f14e45f-ceea-467f-a0e6-1b1a2c3d4e5f/vllm/3.log").restart
    3
    >>> pod_log("containers/vllm-0_default_vllm-" + "ab" * 32 + ".log").unit
    'k8s:default/vllm-0/vllm'
    >>> pod_log("bundle/kubernetes/logs/default_vllm-0_vllm.previous.log").unit
    'k8s:default/vllm-0/vllm'
    >>> pod_log("server.log") is None
    True
    """
    path = path.replace("\\", "/")
    m = _POD_LOG.search(path)
    if m:
        return PodLog(
            m.group("ns"), m.group("pod"), m.group("container"), m.group("uid"), int(m.group("restart"))
        )
    m = _KUBECTL_LOG.search(path)
    if m:
        return PodLog(m.group("ns"), m.group("pod"), m.group("container"))
    m = _CTR_LINK.search(path)
    if m:
        return PodLog(m.group("ns"), m.group("pod"), m.group("container"), container_id=m.group("cid"))
    return None


def qos_from_adj(adj: int | None) -> str | None:
    """The QoS class an ``oom_score_adj`` implies (kubelet's policy).

    >>> [qos_from_adj(a) for a in (-997, 1000, 500, 0, None)]
    ['Guaranteed', 'BestEffort', 'Burstable', None, None]
    """
    if adj is None:
        return None
    if adj in (-997, -998):
        return "Guaranteed"
    if adj == 1000:
        return "BestEffort"
    if 2 <= adj <= 999:
        return "Burstable"
    return None
