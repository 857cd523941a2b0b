"""Kubernetes names (``parsers/kubernetes/names.py``): every cgroup path form a kernel OOM record
prints for a pod (drivers, QoS classes, runtimes, prefixes, static pods), quantities, pod log
paths. The forms are those of ../shared/reference/kubernetes.md §6–7 and real records seen in
public issues (values here are made up)."""

from __future__ import annotations

import pytest

from postmortem.parsers.kubernetes.names import pod_cgroup, pod_log, quantity_bytes, unnamed_unit

UID = "03b7fe6c-4c5e-40e5-a17d-e82f148d42f1"
UID_ = UID.replace("-", "_")
CID = "b0a75cb93a762d493de09588e0dae48e0efd946e6c8c7c5c8362031834091f20"


@pytest.mark.parametrize(
    ("path", "uid", "cid", "qos", "level"),
    [
        (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/cri-containerd-{CID}.scope", UID, CID, "burstable", "container"),
        (f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice/crio-{CID}.scope", UID, CID, "besteffort", "container"),
        (f"/kubepods.slice/kubepods-pod{UID_}.slice/docker-{CID}.scope", UID, CID, "guaranteed", "container"),
        (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice", UID, None, "burstable", "pod"),
        (f"/kubepods/burstable/pod{UID}/{CID}", UID, CID, "burstable", "container"),
        (f"/kubepods/pod{UID}/{CID}", UID, CID, "guaranteed", "container"),
        (f"/kubepods/besteffort/pod{UID}/crio-{CID}", UID, CID, "besteffort", "container"),
        (f"/kubepods/burstable/pod{UID}", UID, None, "burstable", "pod"),
        (f"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod{UID_}.slice/cri-containerd-{CID}.scope", UID, CID, "burstable", "container"),
        (f"/lxc.payload.node1/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{CID}.scope", UID, CID, "guaranteed", "container"),
        (f"/kubepods/pod{'ab' * 16}/{CID}", "ab" * 16, CID, "guaranteed", "container"),  # a static pod's hash
        (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/cri-containerd-cabbede.scope", UID, None, "burstable", "container"),
        ("/kubepods.slice", None, None, None, "node"),
        ("/kubepods.slice/kubepods-burstable.slice", None, None, "burstable", "qos"),
    ],
)  # fmt: skip
def test_pod_cgroup_forms(path: str, uid: str | None, cid: str | None, qos: str | None, level: str) -> None:
    got = pod_cgroup(path)
    assert got is not None
    assert (got.pod_uid, got.container_id, got.qos, got.level) == (uid, cid, qos, level)


@pytest.mark.parametrize("path", [None, "", "/", "/system.slice/vllm.service", "/docker/" + CID, "/mem2"])
def test_not_a_pod(path: str | None) -> None:
    assert pod_cgroup(path) is None


def test_unnamed_units_are_short() -> None:
    assert unnamed_unit(UID, CID) == "k8s:pod-03b7fe6c/b0a75cb93a76"
    assert len(unnamed_unit(UID, CID)) < 40


@pytest.mark.parametrize(
    ("text", "value"),
    [("64Gi", 64 << 30), ("1.5Gi", 3 << 29), ("500M", 500_000_000), ("128974848", 128974848),
     ("129e6", 129_000_000), ("123Mi", 123 << 20), ("100m", 0), ("-1Gi", None), ("1Zi", None), ("", None)],
)  # fmt: skip
def test_quantities(text: str, value: int | None) -> None:
    assert quantity_bytes(text) == value


@pytest.mark.parametrize(
    ("path", "unit", "restart"),
    [
        (f"/var/log/pods/default_vllm-demo-0_{UID}/vllm/3.log", "k8s:default/vllm-demo-0/vllm", 3),
        (f"/var/log/pods/default_vllm-demo-0_{UID}/vllm/0.log.20260115-100005.gz", "k8s:default/vllm-demo-0/vllm", 0),
        (f"/var/log/containers/vllm-demo-0_default_vllm-{CID}.log", "k8s:default/vllm-demo-0/vllm", None),
        ("bundle/kubernetes/logs/ml_sglang-0_sglang.previous.log", "k8s:ml/sglang-0/sglang", None),
    ],
)  # fmt: skip
def test_pod_log_paths(path: str, unit: str, restart: int | None) -> None:
    got = pod_log(path)
    assert got is not None and (got.unit, got.restart) == (unit, restart)
