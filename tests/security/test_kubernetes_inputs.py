"""#31 and #29 for Kubernetes inputs: Pod objects, Events, describe text and kubelet lines are
written by whoever can create a pod or an event (a namespace's users, any node process). They
must not crash the process, become live Markdown, carry escape sequences or leak secrets."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from hostile import build, foreign_links, incident_report, run, write_logs

REPO = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_k8s_sample_sec", REPO / "scripts" / "gen_k8s_sample.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_k8s_sample_sec"] = mod
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def test_deep_yaml_is_refused_without_crashing(tmp_path: Path) -> None:
    # libyaml recursed on the C stack: 100,000 levels crashed the interpreter (SIGSEGV)
    logs = write_logs(tmp_path, pod__yaml="apiVersion: v1\nkind: Pod\nmetadata: " + "[" * 100_000 + "\n")
    ran = run("ingest", logs, "--format", "k8s-objects", "--db", tmp_path / "pm.duckdb")
    assert ran.code == 0 and "1 parse issues" in ran.out, ran


def test_deep_json_and_aliases_are_parse_issues(tmp_path: Path) -> None:
    deep = '{"apiVersion": "v1", "kind": "Pod", "metadata": ' + "[" * 50_000 + "]" * 50_000 + "}"
    bomb = "apiVersion: v1\nkind: List\nitems:\n- &a [x, x, x]\n- &b [*a, *a, *a]\n- &c [*b, *b, *b]\n"
    logs = write_logs(tmp_path, deep__json=deep, bomb__yaml=bomb)
    ran = run("ingest", logs, "--format", "k8s-objects", "--db", tmp_path / "pm.duckdb")
    assert ran.code == 0, ran
    assert ran.out.count("1 parse issues") == 2, ran


def test_hostile_event_text_stays_inert(tmp_path: Path) -> None:
    """An Event's message and a pod's termination message are free text of the pod's owner."""
    GEN.night("node_oom", tmp_path / "night")
    events = tmp_path / "night" / "kubernetes" / "events.json"
    doc = json.loads(events.read_text())
    for item in doc["items"]:
        item["message"] += (
            " [x](https://evil.example/a) ![p](//evil.example/p.png) \x1b]52;c;aGk=\x07 token=hf_abcdefghijklmnopqrstuvwxyz123456"
        )
    events.write_text(json.dumps(doc))
    pods = tmp_path / "night" / "kubernetes" / "pods.json"
    pdoc = json.loads(pods.read_text())
    term = pdoc["items"][0]["status"]["containerStatuses"][0]["lastState"]["terminated"]
    term["message"] = "<img src=x onerror=alert(1)> @channel"
    pods.write_text(json.dumps(pdoc))
    _, out = build(tmp_path / "night", tmp_path, "--since", "2026-03-20 01:00")
    report = incident_report(out).read_text()
    assert foreign_links(report) == []
    assert "\x1b" not in report and "\x07" not in report
    assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in report
    html = run("build", "--logs", tmp_path / "night", "--db", tmp_path / "pm.duckdb", "--out", tmp_path / "h",
               "--tz", "UTC", "--since", "2026-03-20 01:00", "--format", "html")  # fmt: skip
    assert html.code == 0, html
    page = incident_report(tmp_path / "h", "html").read_text()
    assert "<img src=x" not in page


def test_forged_kubelet_lines_do_not_break_ingest(tmp_path: Path) -> None:
    lines = [
        'I0320 02:00:00.000000    1500 prober.go:107] "Probe failed" probeType="Startup" pod="a/b" podUID="'
        + "x" * 5000
        + '"',
        'I0320 02:00:01.000000    1500 kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="" event={"ID":"","Type":"ContainerDied","Data":""}',
        'I0320 02:00:02.000000    1500 kuberuntime_manager.go:1] "Message for Container of pod" containerMessage="\\"',
        'time="2026-03-20T02:00:03Z" level=info msg="TaskExit event container_id:\\"'
        + "a" * 64
        + '\\" id:\\"'
        + "a" * 64
        + '\\" exit_status:99999999999999999999"',
    ]
    text = "".join(f"2026-03-20T02:00:0{i}.000+0000 node kubelet[1]: {ln}\n" for i, ln in enumerate(lines))
    logs = write_logs(tmp_path, journal__txt=text)
    ran = run("ingest", logs, "--db", tmp_path / "pm.duckdb", "--tz", "UTC")
    assert ran.code == 0 and "Traceback" not in ran.err, ran
