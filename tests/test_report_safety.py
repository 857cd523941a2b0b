"""Log text is untrusted: hostile lines end up inert in the Markdown report, secrets redacted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

HOSTILE = "| <script>alert(1)</script> ``` [click](http://evil.example/x) Authorization: Bearer hf_abcdefghijklmnopqrstuvwxyz0123"

JOURNAL = f"""\
2025-05-25T20:00:00.000000+00:00 gpu-1 systemd[1]: Starting evil.service - Evil...
2025-05-25T20:00:00.100000+00:00 gpu-1 systemd[1]: Started evil.service - Evil.
2025-05-25T20:00:02.000000+00:00 gpu-1 python3[4242]: [2025-05-25 20:00:02] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000, api_key='sk-proj-abcdefghijklmnopqrstuvwx')
2025-05-25T20:05:00.000000+00:00 gpu-1 sudo[900]:      ops : TTY=pts/0 ; PWD=/home/ops ; USER=root ; COMMAND=/usr/bin/systemctl restart evil.service {HOSTILE} https://ops:hunter2@10.20.0.15/x
2025-05-25T20:10:00.000000+00:00 gpu-1 python3[4242]: [2025-05-25 20:10:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
2025-05-25T20:10:00.000100+00:00 gpu-1 python3[4242]:   File "/x/scheduler.py", line 1, in forward_decode
2025-05-25T20:10:00.000200+00:00 gpu-1 python3[4242]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 5.00 MiB is free. {HOSTILE}
2025-05-25T20:10:01.000000+00:00 gpu-1 systemd[1]: evil.service: Main process exited, code=exited, status=1/FAILURE
2025-05-25T20:10:01.000100+00:00 gpu-1 systemd[1]: evil.service: Failed with result 'exit-code'.
"""


def _build(cli: Any, tmp_path: Path, *extra: str) -> str:
    logs = tmp_path / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "journal.txt").write_text(JOURNAL)
    out = tmp_path / "reports"
    r = cli("build", "--logs", logs, "--db", tmp_path / "pm.duckdb", "--out", out, "--tz", "UTC", *extra)
    assert r.code == 0, r
    (report,) = [p for p in out.glob("*.md") if p.name != "index.md"]
    return report.read_text()


def _fences_balanced(text: str) -> bool:
    """Every fenced block is closed by a fence of its own length, and no content line is a fence
    that long (so nothing inside can close it early)."""
    open_fence: str | None = None
    for line in text.splitlines():
        m = re.match(r"^(`{3,})", line)
        if open_fence is None:
            if m:
                open_fence = m.group(1)
        elif line.strip() == open_fence:
            open_fence = None
        elif m and len(m.group(1)) >= len(open_fence):
            return False
    return open_fence is None


def _table_rows_consistent(text: str) -> bool:
    """Each table row has as many unescaped cell separators as its header."""
    header_pipes = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header_pipes = None
            continue
        pipes = len(re.findall(r"(?<!\\)\|", line))
        if header_pipes is None:
            header_pipes = pipes
        elif pipes != header_pipes:
            return False
    return True


def _outside_code(text: str) -> str:
    """The text outside fenced blocks (inside them Markdown renders nothing: HTML is inert)."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            out.append(line)
    return "\n".join(out)


def test_hostile_lines_are_inert_and_secrets_redacted(cli: Any, tmp_path: Path) -> None:
    text = _build(cli, tmp_path)
    assert "GPU memory exhausted" in text
    prose = _outside_code(text)
    assert "<script>" not in prose
    assert "&lt;script&gt;" in prose  # the timeline and evidence tables show it, escaped
    assert "<script>" in text  # quoted verbatim inside a code block
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in text
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in text
    assert "hunter2" not in text
    assert "[REDACTED]" in text
    # link syntax is escaped outside code blocks: no unescaped "](" before the URL
    assert not re.search(r"(?<!\\)\]\(`?http://evil\.example", prose)
    # … and the bare address is a code span, which GitHub and GitLab never make a link
    assert "\\[click\\](`http://evil.example/x)`" in prose
    assert not re.search(r"(?<!`)http://evil\.example", prose)
    assert _fences_balanced(text)
    assert _table_rows_consistent(text)


def test_no_redact_and_anonymize(cli: Any, tmp_path: Path) -> None:
    plain = _build(cli, tmp_path / "a", "--no-redact")
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" in plain
    anon = _build(cli, tmp_path / "b", "--anonymize")
    assert "gpu-1" not in anon and "host-1" in anon
    assert "10.20.0.15" not in anon
    assert "<script>" not in _outside_code(anon)
