"""``postmortem runbook``: the fallback the sample incident's report recommends, written out (a
golden copy in tests/snapshots/runbook/), checked by ``systemd-analyze verify``, and its readiness
wait run against a server that becomes ready, one that serves another model, and none."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from postmortem.build import BuildOptions, build
from postmortem.errors import InputError
from postmortem.ingest import IngestOptions
from postmortem.runbook import _endpoint, plan, write
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "snapshots" / "runbook"


def _store(tmp: Path, logs: Path, since: datetime) -> Path:
    db = tmp / "pm.duckdb"
    build(
        BuildOptions(
            db=str(db),
            logs=[str(logs)],
            out=tmp / "reports",
            since=since,
            zone=get_zone("UTC"),
            ingest=IngestOptions(zone=get_zone("UTC"), zone_given=True, strict=True),
            now=datetime(2026, 1, 1, tzinfo=UTC),
        )
    )
    return db


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("runbook")
    db = _store(tmp, REPO / "sample_logs", datetime(2025, 5, 25, 20, 0, tzinfo=UTC))
    store = Store.open_readonly(db)
    try:
        rb = plan(store, 1)
    finally:
        store.close()
    write(rb, tmp / "out")
    return tmp / "out"


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_sample_runbook_matches_its_golden_copy(written: Path, update_golden: bool) -> None:
    got = _files(written)
    if update_golden or not GOLDEN.exists():
        shutil.rmtree(GOLDEN, ignore_errors=True)
        shutil.copytree(written, GOLDEN)
        if not update_golden:
            pytest.fail("golden runbook did not exist; wrote it — review and commit it")
    assert got == _files(GOLDEN)
    fallback = got["sglang-k26.service.d/50-postmortem-fallback.conf"]
    # the fallback's loads took 566, 570 and 584 s: the longest plus half, in whole minutes
    assert "TimeoutStartSec=900" in fallback and "Conflicts=sglang-k26-eagle3.service" in fallback
    assert "--model kimi-k2.6 --give-up 900" in fallback
    assert "OnFailure=sglang-k26.service" in got["sglang-k26-eagle3.service.d/50-postmortem-fallback.conf"]
    assert (written / "wait-ready.py").stat().st_mode & 0o777 == 0o755


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_drop_ins(written: Path, tmp_path: Path) -> None:
    root = tmp_path / "units"
    shutil.copytree(written, root)
    for unit in ("sglang-k26-eagle3.service", "sglang-k26.service"):
        (root / unit).write_text(f"[Unit]\nDescription={unit}\n[Service]\nExecStart=/bin/sleep 1\n")
    ran = subprocess.run(
        [
            "systemd-analyze",
            "verify",
            str(root / "sglang-k26-eagle3.service"),
            str(root / "sglang-k26.service"),
        ],
        env={"SYSTEMD_UNIT_PATH": f"{root}:", "PATH": "/usr/bin:/bin", "SYSTEMD_LOG_LEVEL": "notice"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    # the check bites: an unknown key is reported
    with (root / "sglang-k26.service.d" / "50-postmortem-fallback.conf").open("a") as fh:
        fh.write("Bogus=1\n")
    bad = subprocess.run(
        ["systemd-analyze", "verify", str(root / "sglang-k26.service")],
        env={"SYSTEMD_UNIT_PATH": f"{root}:", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Unknown key" in bad.stderr


class _Models(http.server.BaseHTTPRequestHandler):
    """/v1/models: 503 for the first two requests, then the model list of ``ids``."""

    calls = 0
    ids: tuple[str, ...] = ()

    def do_GET(self) -> None:
        type(self).calls += 1
        if type(self).calls <= 2:
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps(
            {"object": "list", "data": [{"id": i, "object": "model"} for i in self.ids]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Models]]]:
    handler = type("Handler", (_Models,), {"calls": 0, "ids": ()})
    httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def _wait(written: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(written / "wait-ready.py"), *args], capture_output=True, text=True, timeout=60
    )


def test_the_wait_reads_the_model_list(written: Path, server: tuple[str, type[_Models]]) -> None:
    url, handler = server
    handler.ids = ("kimi-k2.6",)
    ran = _wait(written, "--url", url, "--model", "kimi-k2.6", "--give-up", "30")
    assert ran.returncode == 0 and ran.stdout.startswith("ready after"), ran
    assert handler.calls == 3  # two 503s, backed off, then ready


def test_the_wait_gives_up_on_another_model_or_no_server(
    written: Path, server: tuple[str, type[_Models]]
) -> None:
    url, handler = server
    handler.ids = ("another-model",)
    ran = _wait(written, "--url", url, "--model", "kimi-k2.6", "--give-up", "3")
    assert ran.returncode == 1 and "giving up" in ran.stderr
    assert _wait(written, "--url", "http://127.0.0.1:9", "--give-up", "1").returncode == 1


@pytest.mark.parametrize(
    "name", ["kimi; rm -rf /", "a b", "$(id)", "%n", "`x`", "m\nExecStart=/bin/sh", "'q'", ""]
)
def test_log_text_never_reaches_a_command_line(name: str) -> None:
    assert _endpoint({"served_model_name": name, "port": 30000}) == (30000, "")
    assert _endpoint({"served_model_name": "Qwen/Qwen3-235B-A22B-FP8", "port": 70000}) == (
        None,
        "Qwen/Qwen3-235B-A22B-FP8",
    )


def test_a_pod_or_a_missing_incident_is_one_error(tmp_path: Path) -> None:
    db = _store(tmp_path, REPO / "sample_logs_k8s", datetime(2026, 3, 20, 1, 0, tzinfo=UTC))
    store = Store.open_readonly(db)
    try:
        with pytest.raises(InputError, match="Kubernetes pod"):
            plan(store, 1)
        with pytest.raises(InputError, match="no incident 7"):
            plan(store, 7)
    finally:
        store.close()
