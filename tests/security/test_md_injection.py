"""#29 item 1: text from logs must not become a live image or link in a rendered report.

The templates wrap ``{{ x | cell }}`` in backticks and ``md_cell`` lets a balanced code span
through, so ``a`![](//x.io)`b`` closes the template's span, shows an image from a foreign host
(a tracking pixel when the report is opened in a ticket), and opens another span. Each test
feeds one carrier in its real format, builds, renders the Markdown as GitHub/GitLab do
(CommonMark + tables) and looks for any image or link the templates did not put there.
"""

from __future__ import annotations

from pathlib import Path

import docker_journal as dj
import pytest
from hostile import (
    build,
    dmesg,
    foreign_links,
    incident_report,
    journal,
    live_in_cells,
    run,
    write_logs,
)

#: a kernel process name (15 bytes: TASK_COMM_LEN - 1) that closes a code span around it
COMM_IMAGE = "a`![](//x.io)`b"
ARG_IMAGE = "/m/a`![mp](https://evil.example/mp.png)`b"

XFAIL_CODE_SPAN = "#29 item 1: md_cell keeps a balanced code span; inside the template's backticks it renders `<img src={}>`"


def test_comm_len_of_the_attack_fits_the_kernel() -> None:
    assert len(COMM_IMAGE.encode()) == 15


def test_image_through_kernel_process_name_in_dmesg(tmp_path: Path) -> None:
    logs = write_logs(tmp_path, dmesg__txt=dmesg(COMM_IMAGE))
    _, out = build(logs, tmp_path, "--host", "gpu1")
    report = incident_report(out).read_text()
    assert COMM_IMAGE in report or "x.io" in report  # the name reached the report
    assert foreign_links(report) == []


def test_image_through_sglang_server_args_value(tmp_path: Path) -> None:
    logs = write_logs(tmp_path, journal__txt=journal(model_path=ARG_IMAGE))
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    assert "evil.example" in report
    assert foreign_links(report) == []


def _docker_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fields: str) -> Path:
    """The Docker scenario of tests/docker_journal.py (``-o json``) with hostile journal fields:
    any local process can send entries with ``CONTAINER_NAME=``/``IMAGE_NAME=``/
    ``CONTAINER_ID_FULL=`` of its choosing (``sd_journal_send``)."""
    for name, value in fields.items():
        monkeypatch.setattr(dj, name, value)
    if "CID" in fields:
        monkeypatch.setattr(dj, "SCOPE", f"docker-{fields['CID']}.scope")
    logs = dj.write(tmp_path / "logs", "json", "policy")
    _, out = build(logs, tmp_path)
    assert run("trends", "--db", tmp_path / "pm.duckdb", "--out", out).code == 0
    return out


@pytest.mark.parametrize("page", ["incident", "index.md", "trends.md"])
def test_image_through_docker_container_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str
) -> None:
    out = _docker_build(tmp_path, monkeypatch, NAME="q`![n](//x.io/n)`w")
    md = (incident_report(out) if page == "incident" else out / page).read_text()
    assert "x.io/n" in md
    assert foreign_links(md) == []


def test_image_through_docker_image_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _docker_build(tmp_path, monkeypatch, IMAGE="lmsysorg/sglang`![i](//x.io/i)`:v1")
    md = _container_report(out).read_text()
    assert "x.io/i" in md
    assert foreign_links(md) == []


def test_image_through_docker_container_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the id's first 12 characters are the short id the report prints
    out = _docker_build(tmp_path, monkeypatch, CID="a`![](//x)`b" + "0" * 52)
    md = _container_report(out).read_text()
    assert "![](//x)" in md
    assert foreign_links(md) == []


def _container_report(out: Path) -> Path:
    """The report of the Docker container's kill (a hostile id also makes a second, scope-named
    incident of the kernel's record)."""
    (report,) = out.glob("*-docker_sglang-qwen.md")
    return report


@pytest.mark.parametrize("word", ["@oncall", "#123"])
def test_mentions_and_issue_references_in_table_cells(tmp_path: Path, word: str) -> None:
    logs = write_logs(
        tmp_path, journal__txt=journal(description="LLM server, page @oncall, see #123 for the runbook")
    )
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    assert any(line.startswith("|") and word in line for line in report.splitlines())
    assert live_in_cells(report, word) == []
