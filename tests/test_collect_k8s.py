"""``postmortem collect --kubernetes`` against a recorded ``kubectl`` (no API server can run
here: Debian's packages hold no kube-apiserver or k3s; tests/data/collect/kubectl/kubectl replays
the sample night's objects and logs by what it is asked). The bundle holds the pods, the events
in both APIs, each pod's describe and its containers' current and previous logs, under the
documented names, and builds into the sample's incident facts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "data" / "collect" / "kubectl"
SAMPLE = REPO / "sample_logs_k8s"


@pytest.fixture
def records(tmp_path: Path) -> Path:
    rec = tmp_path / "rec"
    rec.mkdir()
    shutil.copy(SAMPLE / "kubernetes" / "pods.json", rec / "pods.json")
    shutil.copy(SAMPLE / "kubernetes" / "events.json", rec / "events.json")
    (prev,) = SAMPLE.glob("var/log/pods/*/vllm/0.log")
    (cur,) = SAMPLE.glob("var/log/pods/*/vllm/1.log")
    shutil.copy(prev, rec / "prev.log")
    shutil.copy(cur, rec / "cur.log")
    return rec


def _collect(tmp: Path, records: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    env = dict(
        os.environ, PATH=f"{FAKE}:{os.environ.get('PATH', '/usr/bin:/bin')}", KUBECTL_RECORDS=str(records)
    )
    ran = subprocess.run(
        [sys.executable, "-m", "postmortem", "collect", "--since=-1h", "--timeout", "20", "--out", str(tmp / "out"), *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp,
    )  # fmt: skip
    bundles = list((tmp / "out").glob("postmortem-*"))
    return ran, bundles[0] if bundles else tmp


def test_the_bundle_holds_the_pod_evidence(tmp_path: Path, records: Path) -> None:
    ran, bundle = _collect(tmp_path, records, "--kubernetes", "--namespace", "inference")
    assert ran.returncode == 0, ran
    got = sorted(p.relative_to(bundle).as_posix() for p in (bundle / "kubernetes").rglob("*") if p.is_file())
    assert got == [
        "kubernetes/describe/inference_vllm-llama-0.txt",
        "kubernetes/events.json",
        "kubernetes/events.k8s.io.json",
        "kubernetes/logs/inference_vllm-llama-0_vllm.log",
        "kubernetes/logs/inference_vllm-llama-0_vllm.previous.log",
        "kubernetes/pods.json",
    ]
    # and what is in it reads back as the pod's: its container's unit, both runs' statistics
    store = tmp_path / "pm.duckdb"
    assert subprocess.run([sys.executable, "-m", "postmortem", "ingest", str(bundle), "--db", str(store)],
                          capture_output=True, timeout=300).returncode == 0  # fmt: skip
    q = subprocess.run(
        [sys.executable, "-m", "postmortem", "query", "--db", str(store), "--format", "csv",
         "SELECT unit, count(*) FROM server_stats GROUP BY 1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "k8s:inference/vllm-llama-0/vllm,148" in q.stdout, q


def _bare_collect(tmp: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": str(tmp), "KUBECONFIG": str(tmp / "no-such-kubeconfig")}
    return subprocess.run(
        [sys.executable, "-m", "postmortem", "collect", "--kubernetes", "--since=-1h", "--timeout", "20",
         "--out", str(tmp / "out")],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp,
    )  # fmt: skip


def test_without_kubectl_it_is_a_missing_entry(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    ran = _bare_collect(tmp_path, str(empty))
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran
    assert "kubectl: not found on PATH: no Kubernetes objects" in ran.stdout + ran.stderr, ran


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl here")
def test_a_real_kubectl_without_a_cluster_is_a_failed_command(tmp_path: Path) -> None:
    """The kubectl client installed here, with no cluster to talk to: its failure is recorded."""
    ran = _bare_collect(tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran
    (bundle,) = (tmp_path / "out").glob("postmortem-*")
    import json

    entries = {e["name"]: e for e in json.loads((bundle / "manifest.json").read_text())["commands"]}
    assert entries["kubectl-pods"]["status"] != "ok" or entries["kubectl-pods"]["exit_status"] != 0
