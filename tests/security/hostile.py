"""Hostile inputs for the security suite (issue #29), and the few checks its attacks share.

Every input is what a local user (or a process writing logs) can put in front of postmortem: a
kernel process name, a line in a server's log, a journal field, an operator's command line, a
file in a bundle. The builders write them in the real formats; the checks read what postmortem
wrote back (Markdown rendered to HTML as GitHub/GitLab do it, every output file's bytes, the
terminal output).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

HOST = "gpu1"
UNIT = "llm.service"
PID = 6021
T0 = datetime(2026, 3, 18, 13, 50, tzinfo=UTC)
KILL = datetime(2026, 3, 18, 14, 2, 17, tzinfo=UTC)
#: the report stem of the incident the builders below make (host, kill time, unit)
STEM = f"{HOST}-20260318T140217Z-{UNIT}"

NOBODY = 65534  # the uid (and gid) of a local user who is not root

root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="the attack is on a root-run postmortem: run this suite as root"
)


# ----------------------------------------------------------------------------- running postmortem


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:
        return f"Ran(code={self.code}, out={self.out[-600:]!r}, err={self.err[-600:]!r})"


def run(*args: object) -> Ran:
    """``postmortem ARGS`` in this process (any fixture scope; output captured here)."""
    from postmortem.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Ran(code, out.getvalue(), err.getvalue())


def command(*args: object) -> list[str]:
    """The argv of ``postmortem ARGS`` as a separate process (where signals and modes matter)."""
    return [sys.executable, "-m", "postmortem", *(str(a) for a in args)]


def run_process(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> Ran:
    p = subprocess.run(
        command(*args),
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=300,
        umask=0o022,  # a root shell's usual umask: what the files' modes come from today
    )
    return Ran(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"))


def one_error_line(ran: Ran, code: int = 1) -> str:
    """The run failed the way an input's fault should: ``code`` and a single ``Error:`` line on
    stderr, no internal error, no traceback. Returns that line."""
    assert ran.code == code, ran
    errors = [ln for ln in ran.err.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, ran
    assert "internal error" not in errors[0], ran
    assert "Traceback" not in ran.err, ran
    return errors[0]


def build(logs: Path, tmp: Path, *extra: object) -> tuple[Ran, Path]:
    """``postmortem build`` of ``logs`` into ``tmp/reports`` (in this process); the reports'
    directory. The run must succeed."""
    out = tmp / "reports"
    ran = run("build", "--logs", logs, "--db", tmp / "pm.duckdb", "--out", out, "--tz", "UTC", *extra)
    assert ran.code == 0, ran
    return ran, out


def incident_report(out: Path, ext: str = "md") -> Path:
    (report,) = [p for p in out.glob(f"*.{ext}") if p.stem not in ("index", "trends")]
    return report


# ----------------------------------------------------------------------------- hostile logs


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S+0000")


def sudo_line(ts: datetime, cmd: str) -> str:
    """An operator's command as sudo logs it (what the report's timeline shows as 'operator ran')."""
    return f"{_stamp(ts)} {HOST} sudo[7001]:      bob : TTY=pts/0 ; PWD=/home/bob ; USER=root ; COMMAND={cmd}"


def journal(
    *,
    comm: str = "python3",
    model_path: str = "/models/m",
    server_args: str = "",
    description: str = "LLM server",
    operator: tuple[str, ...] = (),
) -> str:
    """``journalctl -o short-iso`` of one host-RAM OOM kill of ``llm.service``: its start (with
    ``description``), SGLang's ``server_args`` line (``model_path`` and ``server_args`` appended
    inside the parentheses), the operator's ``operator`` commands 20 s apart (30 before the kill), the kernel's
    record of killing ``comm`` and systemd's words about it."""
    lines = [
        f"{_stamp(T0)} {HOST} systemd[1]: Started {UNIT} - {description}.",
        f"{_stamp(T0 + timedelta(seconds=5))} {HOST} python3[{PID}]: [2026-03-18 13:50:05] "
        f"server_args=ServerArgs(model_path='{model_path}', tp_size=2, port=30000{server_args})",
    ]
    lines += [sudo_line(T0 + timedelta(seconds=60 + 20 * i), cmd) for i, cmd in enumerate(operator)]
    k = _stamp(KILL)
    lines += [
        f"{k} {HOST} kernel: {comm} invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0",
        f"{k} {HOST} kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/{UNIT},task={comm},pid={PID},uid=998",
        f"{k} {HOST} kernel: Out of memory: Killed process {PID} ({comm}) total-vm:209715200kB, anon-rss:167160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0",
        f"{k} {HOST} systemd[1]: {UNIT}: A process of this unit has been killed by the OOM killer.",
        f"{k} {HOST} systemd[1]: {UNIT}: Main process exited, code=killed, status=9/KILL",
        f"{k} {HOST} systemd[1]: {UNIT}: Failed with result 'oom-kill'.",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def dmesg(comm: str) -> str:
    """``dmesg --time-format iso`` of the kernel killing ``comm`` of ``llm.service``."""
    t = "2026-03-18T14:02:17,{:06d}+00:00"
    return (
        f"{t.format(100)} {comm} invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n"
        f"{t.format(200)} oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system.slice/{UNIT},task={comm},pid={PID},uid=998\n"
        f"{t.format(300)} Out of memory: Killed process {PID} ({comm}) total-vm:209715200kB, anon-rss:167160004kB, file-rss:608156kB, shmem-rss:4000kB, UID:998 pgtables:328125kB oom_score_adj:0\n"
    )  # fmt: skip


def cuda_oom_journal(error_tail: str) -> str:
    """A server that dies of a CUDA OOM whose error line ends in ``error_tail`` (the report
    quotes the traceback)."""
    t = T0 + timedelta(minutes=20)
    s = _stamp(t)
    return (
        f"{_stamp(T0)} {HOST} systemd[1]: Started {UNIT} - LLM server.\n"
        f"{_stamp(T0 + timedelta(seconds=2))} {HOST} python3[{PID}]: [2026-03-18 13:50:02] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
        f"{s} {HOST} python3[{PID}]: [2026-03-18 14:10:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'{s} {HOST} python3[{PID}]:   File "/x/scheduler.py", line 1, in forward_decode\n'
        f"{s} {HOST} python3[{PID}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 5.00 MiB is free. {error_tail}\n"
        f"{_stamp(t + timedelta(seconds=1))} {HOST} systemd[1]: {UNIT}: Main process exited, code=exited, status=1/FAILURE\n"
        f"{_stamp(t + timedelta(seconds=1))} {HOST} systemd[1]: {UNIT}: Failed with result 'exit-code'.\n"
    )  # fmt: skip


def write_logs(tmp: Path, **files: str | bytes) -> Path:
    """``tmp/logs`` holding ``files`` (name → content)."""
    logs = tmp / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        p = logs / name.replace("__", ".")
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return logs


def tar_gz(path: Path, members: list[tuple[str, bytes]], *, fmt: int = tarfile.PAX_FORMAT) -> Path:
    """A ``.tar.gz`` of regular files ``members`` (name → bytes), in that order."""
    with tarfile.open(path, "w:gz", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(KILL.timestamp())
            tar.addfile(info, io.BytesIO(data))
    return path


# ----------------------------------------------------------------------------- reading outputs


def output_blobs(directory: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every file under ``directory``, and of every member of the ``.tar.gz``
    files there (a report bundle goes to a ticket as it is)."""
    for p in sorted(directory.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        yield str(p), data
        if p.name.endswith(".tar.gz"):
            with tarfile.open(p, "r:gz") as tar:
                for m in tar.getmembers():
                    fh = tar.extractfile(m)
                    if fh is not None:
                        yield f"{p}/{m.name}", fh.read()


def files_holding(directory: Path, needle: str) -> list[str]:
    """The output files (and bundle members) whose bytes contain ``needle``: its UTF-8 bytes,
    or JSON's ``\\u`` spelling of them (escaped slashes included)."""
    forms = {needle.encode(), needle.replace("/", "\\/").encode()}
    return [name for name, data in output_blobs(directory) if any(f in data for f in forms)]


def gunzip_text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8", "replace")


# ----------------------------------------------------------------------------- Markdown as rendered


def to_html(markdown: str) -> str:
    """The Markdown as a CommonMark + tables renderer (GitHub's and GitLab's core) makes it."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark").enable("table").render(markdown))


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, tuple((k, v or "") for k, v in attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)


def elements(html: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every element of ``html``: (tag, ((attribute, value), …))."""
    p = _Elements()
    p.feed(html)
    p.close()
    return p.found


#: what the templates link to: a report's own figures and, from the index, its reports
#: what the templates link to: the report's own files, and its own sections (``#e-full-timeline``)
_OWN_TARGET = re.compile(r"^(?:[A-Za-z0-9@._-]+\.(png|md|json)|#[a-z0-9-]+)$")


def foreign_links(markdown: str) -> list[str]:
    """Images and links in the rendered Markdown that point anywhere but the report's own files
    (and any raw HTML element the text let through)."""
    bad = []
    for tag, attrs in elements(to_html(markdown)):
        a = dict(attrs)
        if tag in ("img", "a"):
            target = a.get("src" if tag == "img" else "href", "")
            if not _OWN_TARGET.match(target):
                bad.append(f"<{tag} {target}>")
        elif tag in ("script", "iframe", "style", "object", "embed", "svg", "form", "input"):
            bad.append(f"<{tag}>")
    return bad


def live_in_cells(markdown: str, word: str) -> list[str]:
    """The table rows where ``word`` (an ``@mention``, a ``#123`` reference) renders as text
    outside any code element without a backslash before it in the Markdown: where GitHub or
    GitLab would turn it into a mention or a link when the report is pasted into a ticket."""
    hits = []
    for line in markdown.splitlines():
        if not line.startswith("|") or word not in line:
            continue
        cells = len(re.findall(r"(?<!\\)\|", line)) - 1
        table = "|" + " x |" * cells + "\n|" + "---|" * cells + "\n" + line.replace(f"\\{word}", "") + "\n"
        outside = re.sub(r"<code>.*?</code>", "", to_html(table), flags=re.S)
        if word in outside:
            hits.append(line)
    return hits
