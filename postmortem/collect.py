"""``postmortem collect``: save the evidence on the machine where the incident happened.

Logs rotate and the next reboot clears the kernel ring buffer, so the first thing to run on
a sick machine is one command that keeps everything ``build`` needs: a *bundle* directory
``<out>/postmortem-<host>-<UTC stamp>/`` (optionally also ``<bundle>.tar.gz``) holding the
outputs of a fixed plan of commands and file copies, and a ``manifest.json`` saying what
each is, how it went (argv, exit status, duration, stderr excerpt, size, truncation), what
was missing and why, and what running as root would add. docs/collect.md describes it.

Rules: nothing here aborts because a tool, a GPU, journald or a permission is missing — that
becomes a manifest entry and a warning. Every command has a timeout and every output a
size bound (the journal and log files keep their *newest* part, cut at a record boundary).

The other half, reading bundles back (``ingest``/``build --logs BUNDLE``), is
:mod:`postmortem.bundle`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from io import BufferedReader
from pathlib import Path
from typing import IO, Any, cast

from . import __version__
from .bundle import BUNDLE_FORMAT, MANIFEST
from .config import Config
from .errors import PostmortemError, UsageError
from .io import atomic_output, compression_of
from .lazyre import lazy_re
from .timeutil import check_range, get_zone, parse_when, zone_name

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_SINCE = "-24h"


def default_unit_patterns() -> tuple[str, ...]:
    """The units collected when none is named: those named after a registered engine.

    >>> all(p.endswith("*") for p in default_unit_patterns()) and len(default_unit_patterns()) > 0
    True
    """
    from .engines import engines

    return tuple(f"{hint}*" for engine in engines().values() for hint in engine.name_hints)


#: units whose journal lines describe memory pressure; added to a --unit journal
MEMORY_UNITS = ("systemd-oomd.service", "earlyoom.service")
#: the memory-pressure fields of docs/reference nvidia.md §1.3 (its suggested command, without -l)
QUERY_GPU_FIELDS = (
    "timestamp,index,uuid,pci.bus_id,name,memory.total,memory.reserved,memory.used,memory.free,"
    "utilization.gpu,utilization.memory,temperature.gpu,power.draw,pstate,clocks.sm"
)
#: drivers before R5xx know no memory.reserved (nvidia-smi then refuses the whole query)
QUERY_GPU_FIELDS_OLD = (
    "timestamp,index,uuid,pci.bus_id,name,memory.total,memory.used,memory.free,"
    "utilization.gpu,utilization.memory,temperature.gpu,power.draw,pstate,clocks.sm"
)
QUERY_APPS_FIELDS = "timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory"
QUERY_APPS_FIELDS_OLD = "gpu_name,gpu_bus_id,gpu_uuid,pid,process_name,used_gpu_memory"
CGROUP_FILES = (
    "memory.events",
    "memory.max",
    "memory.high",
    "memory.current",
    "memory.peak",
    "memory.swap.events",
    "memory.swap.max",
    "memory.swap.current",
    "memory.stat",
    "memory.pressure",
)
JOURNAL_GROUPS = ("systemd-journal", "adm", "wheel")
TAIL_SEGMENTS = 4  # a tail-kept output keeps at least 3/4 of --max-bytes
STDERR_EXCERPT = 2000  # bytes kept from the start and from the end of a command's stderr
VERSION_TIMEOUT_S = 5.0
MAX_UNITS = 64
MAX_LOGS = 256

Warn = Callable[[str], None]


@dataclass
class CollectOptions:
    """What ``postmortem collect`` does; the defaults are the CLI's."""

    out: Path = Path(".")
    since: str | None = DEFAULT_SINCE
    until: str | None = None
    units: list[str] = field(
        default_factory=list
    )  # globs; none: the engines' units for systemd, whole journal
    archive: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    config: Config = field(default_factory=Config)
    warn: Warn | None = None  # called with each warning as it happens (the CLI prints them)
    # seams for tests: the machine's file system root, host name and clock
    root: Path = Path("/")
    host: str | None = None
    now: datetime | None = None
    #: also the Kubernetes evidence (kubectl; on a node, /var/log/pods and kubelet's journal)
    kubernetes: bool = False
    namespace: str | None = None
    pod: str | None = None


@dataclass
class CollectResult:
    bundle: Path
    archive: Path | None
    manifest: dict[str, Any]

    @property
    def warnings(self) -> list[str]:
        return list(self.manifest["warnings"])

    @property
    def missing(self) -> list[dict[str, str]]:
        return list(self.manifest["missing"])

    @property
    def root_would_add(self) -> list[str]:
        return list(self.manifest["root_would_add"])


# --------------------------------------------------------------------------- bounded output


class BoundedOutput:
    """A file that receives at most ``limit`` bytes of a stream.

    ``keep="head"`` stores the first bytes and then refuses more (:meth:`write` returns
    False: stop the producer). ``keep="tail"`` reads on and keeps the *last* bytes, in a
    ring of :data:`TAIL_SEGMENTS` files of ``limit/TAIL_SEGMENTS`` so disk use stays bounded
    (at least ``(TAIL_SEGMENTS - 1) / TAIL_SEGMENTS`` of ``limit``, less the record cut at the
    start, is kept). Whenever something
    was dropped the kept part is cut at ``boundary`` (a line, or a journal export entry) so no
    half record remains, and :attr:`truncated` is set.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> out = BoundedOutput(d / "t", 20, keep="tail")
    >>> for n in range(10):
    ...     _ = out.write(b"line%d\\n" % n)
    >>> out.close(), (d / "t").read_bytes(), out.truncated, out.seen
    (18, b'line7\\nline8\\nline9\\n', True, 60)
    >>> head = BoundedOutput(d / "h", 6, keep="head")
    >>> head.write(b"ab\\ncd\\nef"), head.close(), (d / "h").read_bytes()
    (False, 6, b'ab\\ncd\\n')
    """

    def __init__(self, path: Path, limit: int, *, keep: str = "head", boundary: bytes = b"\n") -> None:
        if keep not in ("head", "tail"):
            raise ValueError(keep)
        self.path = path
        self.limit = max(int(limit), 1)
        self.keep = keep
        self.boundary = boundary
        self.truncated = False
        self.seen = 0  # bytes offered
        self.bytes = 0  # bytes in the final file (after close)
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep == "head":
            self._fh: IO[bytes] = path.open("wb")
            self._written = 0
        else:
            count = min(TAIL_SEGMENTS, self.limit)
            self._seg_size = self.limit // count
            self._segs = [path.with_name(f"{path.name}.seg{i}") for i in range(count)]
            self._cur = 0
            self._wrapped = False
            self._fh = self._segs[0].open("wb")
            self._written = 0

    def write(self, data: bytes) -> bool:
        """Store ``data``; False once a head-kept output is full (the rest is not wanted)."""
        self.seen += len(data)
        if self.keep == "head":
            room = self.limit - self._written
            if len(data) > room:
                self._fh.write(data[:room])
                self._written += room
                self.truncated = True
                return False
            self._fh.write(data)
            self._written += len(data)
            return True
        view = memoryview(data)
        while view:
            room = self._seg_size - self._written
            if room <= 0:
                self._fh.close()
                self._cur = (self._cur + 1) % len(self._segs)
                self._wrapped = self._wrapped or self._cur == 0
                self._fh = self._segs[self._cur].open("wb")
                self._written = 0
                room = self._seg_size
            piece = view[:room]
            self._fh.write(piece)
            self._written += len(piece)
            view = view[len(piece) :]
        return True

    def close(self) -> int:
        """Finish the file; returns its size."""
        if self._closed:
            return self.bytes
        self._closed = True
        self._fh.close()
        if self.keep == "head":
            if self.truncated:
                _cut_after_last(self.path, self.boundary)
        else:
            if not self._wrapped:
                used = self._segs[: self._cur + 1]
                if len(used) == 1:
                    os.replace(used[0], self.path)
                else:
                    _concat(used, self.path)
            else:
                self.truncated = True
                order = self._segs[self._cur + 1 :] + self._segs[: self._cur + 1]  # oldest first
                _join_from_boundary(order, self.path, self.boundary)
            for seg in self._segs:
                seg.unlink(missing_ok=True)
        self.bytes = self.path.stat().st_size
        return self.bytes


def _cut_after_last(path: Path, boundary: bytes) -> None:
    """Truncate ``path`` just after the last ``boundary`` in its final MiB (if there is one)."""
    size = path.stat().st_size
    window = min(size, 1 << 20)
    with path.open("r+b") as fh:
        fh.seek(size - window)
        tail = fh.read(window)
        at = tail.rfind(boundary)
        if at >= 0:
            fh.truncate(size - window + at + len(boundary))


def _concat(parts: list[Path], dest: Path) -> None:
    with dest.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)


def _join_from_boundary(parts: list[Path], dest: Path, boundary: bytes) -> None:
    """``parts`` (oldest first) from just after the first record boundary, into ``dest``:
    the record cut at the start is dropped (nothing is kept when there is no boundary)."""
    marker = boundary + b"__CURSOR=" if boundary == b"\n\n" else boundary
    with dest.open("wb") as out:
        found = False
        for seg in parts:
            with seg.open("rb") as src:
                if not found:
                    found = _seek_past(src, marker, len(boundary))
                    if not found:
                        continue
                shutil.copyfileobj(src, out, 1 << 20)


def _seek_past(fh: IO[bytes], marker: bytes, skip: int) -> bool:
    """Position ``fh`` ``skip`` bytes into the first ``marker``; False when there is none."""
    pos = 0
    carry = b""
    while True:
        block = fh.read(1 << 20)
        if not block:
            return False
        data = carry + block
        at = data.find(marker)
        if at >= 0:
            fh.seek(pos - len(carry) + at + skip)
            return True
        keep = len(marker) - 1
        carry = data[-keep:] if keep else b""
        pos += len(block)


class _Excerpt:
    """The first and last ``limit`` bytes of a stream (stderr), as text."""

    def __init__(self, limit: int = STDERR_EXCERPT) -> None:
        self.limit = limit
        self.head = b""
        self.tail = b""
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if len(self.head) < self.limit:
            take = self.limit - len(self.head)
            self.head += data[:take]
            data = data[take:]
        if data:
            self.tail = (self.tail + data)[-self.limit :]

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.tail:
            return head.strip()
        skipped = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", "replace")
        if skipped > 0:
            return f"{head.rstrip()}\n… ({skipped} bytes) …\n{tail.lstrip()}".strip()
        return (head + tail).strip()


# --------------------------------------------------------------------------- running commands


@dataclass
class _Run:
    exit_status: int | None = None
    signal: str | None = None
    stopped: str | None = None  # "timeout" | "output limit"
    stderr: str = ""
    duration_s: float = 0.0
    error: str | None = None  # could not start


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=2.0)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_reason(
    proc: subprocess.Popen[bytes], t_out: threading.Thread, full: threading.Event, deadline: float
) -> str | None:
    """Wait for a bounded command: ``timeout`` or ``output limit`` when it had to be killed
    (with its process group), None when it ended by itself in time."""
    t_out.join(max(0.0, deadline - time.monotonic()))
    if t_out.is_alive() or full.is_set():
        reason = "timeout" if t_out.is_alive() else "output limit"  # (before the kill ends it)
        _kill_group(proc)
        return reason
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return "timeout"
    return None


def run_bounded(
    argv: list[str], sink: BoundedOutput, *, timeout_s: float, env: dict[str, str] | None = None
) -> _Run:
    """Run ``argv`` with its stdout into ``sink``: killed (with its process group) after
    ``timeout_s`` or as soon as a head-kept sink is full; stderr kept as an excerpt."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return _Run(error=exc.strerror or str(exc), duration_s=time.monotonic() - started)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out_pipe = cast(BufferedReader, proc.stdout)
    err_pipe = cast(BufferedReader, proc.stderr)
    err = _Excerpt()
    full = threading.Event()
    failed: list[BaseException] = []

    def pump_out() -> None:
        try:
            while True:
                block = out_pipe.read1(1 << 16)
                if not block:
                    return
                if not sink.write(block):
                    full.set()
                    return
        except (OSError, ValueError) as exc:  # disk full, pipe closed under us
            failed.append(exc)
            full.set()

    def pump_err() -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                block = err_pipe.read1(1 << 16)
                if not block:
                    return
                err.add(block)

    t_out = threading.Thread(target=pump_out, daemon=True)
    t_err = threading.Thread(target=pump_err, daemon=True)
    t_out.start()
    t_err.start()
    run = _Run()
    try:
        run.stopped = _stop_reason(proc, t_out, full, started + timeout_s)
    except BaseException:  # Ctrl-C: the child is in its own session and did not get it
        _kill_group(proc)
        raise
    proc.wait()
    t_out.join(2.0)
    t_err.join(2.0)
    out_pipe.close()
    err_pipe.close()
    rc = proc.returncode
    if rc is not None and rc < 0:
        run.signal = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
    run.exit_status = rc
    run.stderr = err.text()
    if failed:
        run.error = f"writing the output failed: {failed[0]}"
    run.duration_s = round(time.monotonic() - started, 3)
    return run


# --------------------------------------------------------------------------- machine facts


def detect_zone(root: Path = Path("/"), env: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """The machine's IANA time zone and where it was found.

    ``/etc/localtime`` (a link into zoneinfo), else ``/etc/timezone``, else ``$TZ``.

    >>> import tempfile, pathlib
    >>> r = pathlib.Path(tempfile.mkdtemp()); (r / "etc").mkdir()
    >>> (r / "etc" / "localtime").symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    >>> detect_zone(r, {})
    ('Europe/Berlin', '/etc/localtime')
    >>> (r / "etc" / "localtime").unlink(); _ = (r / "etc" / "timezone").write_text("Asia/Tokyo\\n")
    >>> detect_zone(r, {})
    ('Asia/Tokyo', '/etc/timezone')
    >>> detect_zone(pathlib.Path(tempfile.mkdtemp()), {"TZ": ":UTC"})
    ('UTC', '$TZ')
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    with contextlib.suppress(OSError):
        target = os.readlink(root / "etc" / "localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1], "/etc/localtime"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = (root / "etc" / "timezone").read_text(encoding="utf-8").strip()
        if text:
            return text.splitlines()[0].strip(), "/etc/timezone"
    tz = environ.get("TZ", "").lstrip(":")
    if tz and not tz.startswith("/"):
        return tz, "$TZ"
    return None, "unknown"


def _read_text(path: Path, limit: int = 1 << 20) -> str | None:
    try:
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _btime(stat_text: str | None) -> int | None:
    if not stat_text:
        return None
    m = re.search(r"^btime\s+(\d+)\s*$", stat_text, re.M)
    return int(m.group(1)) if m else None


def _uptime(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def boot_time_of(btime: int | None, uptime_s: float | None, now: datetime) -> datetime | None:
    """Boot time: ``now - uptime`` when it agrees with ``/proc/stat`` btime (whole seconds)
    to within a second — it has the fraction btime lacks — else btime itself.

    >>> now = datetime(2026, 3, 20, 17, 30, 0, 250000, tzinfo=UTC)
    >>> boot_time_of(1774018800, 8999.62, now).isoformat()
    '2026-03-20T15:00:00.630000+00:00'
    >>> boot_time_of(1774018800, 5.0, now).isoformat()
    '2026-03-20T15:00:00+00:00'
    """
    bt = datetime.fromtimestamp(btime, UTC) if btime is not None else None
    if uptime_s is None:
        return bt
    refined = now - timedelta(seconds=uptime_s)
    if bt is None or abs((refined - bt).total_seconds()) < 1.0:
        return refined
    return bt


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("._") or "unknown"


def _iso(dt: datetime | None) -> str | None:
    return dt.astimezone(UTC).isoformat() if dt is not None else None


def _user() -> dict[str, Any]:
    uid = os.geteuid()
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    groups = []
    for gid in sorted(set(os.getgroups()) | {os.getegid()}):
        try:
            groups.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            groups.append(str(gid))
    return {"uid": uid, "name": name, "root": uid == 0, "groups": groups}


# --------------------------------------------------------------------------- the collector


_UNIT_NAME = lazy_re(r"^[A-Za-z0-9:_.@\\-]+\.(service|scope|socket|timer|target|slice|mount|path)$")
_STDIO_FILE = lazy_re(r"^\s*Standard(Output|Error)\s*=\s*(?:append|file|truncate):(\S.*?)\s*$", re.M)
_GLOB = lazy_re(r"[*?\[]")


def unit_pattern(text: str) -> str:
    """A --unit value as systemctl/journalctl match it: a bare name gets ``.service``.

    >>> unit_pattern("llm-qwen"), unit_pattern("llm*"), unit_pattern("x.scope")
    ('llm-qwen.service', 'llm*', 'x.scope')
    """
    text = text.strip()
    if _GLOB.search(text) or "." in text:
        return text
    return f"{text}.service"


def log_paths_of_unit(cat_text: str) -> list[str]:
    """Files a unit writes its output to (``StandardOutput=append:PATH`` and the like, the
    last assignment of each stream winning, as systemd reads drop-ins).

    >>> log_paths_of_unit("StandardOutput=append:/var/log/a.log\\nStandardError=inherit\\n"
    ...                   "# drop-in\\nStandardOutput=file:/var/log/b.log\\n")
    ['/var/log/b.log']
    """
    last: dict[str, str | None] = {}
    for line in cat_text.splitlines():
        stripped = line.strip()
        m = _STDIO_FILE.match(stripped)
        if m:
            last[m.group(1)] = m.group(2)
        elif re.match(r"^Standard(Output|Error)\s*=", stripped):
            last[stripped[8:14]] = None
    paths: list[str] = []
    for stream in ("Output", "Error"):
        p = last.get(stream)
        if p and p not in paths:
            paths.append(p)
    return paths


def _show_property(show_text: str, name: str) -> str | None:
    m = re.search(rf"^{re.escape(name)}=(.*)$", show_text, re.M)
    return m.group(1).strip() if m else None


def _tz_of_environment(env_value: str | None) -> str | None:
    """``Environment=TZ=Europe/Berlin LANG=C`` (``systemctl show``) → ``Europe/Berlin``."""
    if not env_value:
        return None
    for word in env_value.split():
        word = word.strip("\"'")
        if word.startswith("TZ="):
            return word[3:].lstrip(":") or None
    return None


class _Collector:
    def __init__(self, opts: CollectOptions, work: Path, now: datetime) -> None:
        self.opts = opts
        self.work = work
        self.now = now
        self.entries: list[dict[str, Any]] = []
        self.missing: list[dict[str, str]] = []
        self.warnings: list[str] = []
        self.root_adds: list[str] = []
        self.env = dict(os.environ)
        self.env.update(
            {"LC_ALL": "C", "LANG": "C", "SYSTEMD_PAGER": "", "PAGER": "cat", "SYSTEMD_COLORS": "0"}
        )
        self.root = opts.root
        self.is_root = os.geteuid() == 0
        self.units: list[str] = []

    def clock(self) -> datetime:
        return self.now if self.opts.now is not None else datetime.now(UTC)

    # -- bookkeeping

    def warn(self, text: str) -> None:
        if text in self.warnings:
            return
        self.warnings.append(text)
        if self.opts.warn:
            self.opts.warn(text)

    def miss(self, what: str, why: str, *, warn: bool = True) -> None:
        if any(m["what"] == what for m in self.missing):
            return
        self.missing.append({"what": what, "why": why})
        if warn:
            self.warn(f"{what}: {why}")

    def root_would_add(self, text: str) -> None:
        if not self.is_root and text not in self.root_adds:
            self.root_adds.append(text)

    def machine_path(self, path: str) -> Path:
        """A path of the machine, under ``root`` (``/`` except in tests)."""
        p = Path(path)
        if p.is_absolute() and self.root != Path("/"):
            return self.root / p.relative_to("/")
        return p

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH", os.defpath))

    # -- commands

    def run(
        self,
        name: str,
        argv: list[str],
        output: str,
        *,
        keep: str = "head",
        boundary: bytes = b"\n",
        fmt: str | None = None,
        ingest: bool = False,
        context: dict[str, Any] | None = None,
        purpose: str = "",
        quiet_missing: bool = False,
        missing_why: str = "not found on PATH",
        warn_failure: bool = True,
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": name,
            "kind": "command",
            "purpose": purpose,
            "argv": list(argv),
            "status": "ok",
            "exit_status": None,
            "duration_s": 0.0,
            "stderr": "",
            "output": None,
            "bytes": 0,
            "sha256": None,
            "truncated": False,
            "format": fmt,
            "ingest": False,
            "context": dict(context or {}),
        }
        self.entries.append(entry)
        exe = self.which(argv[0])
        if exe is None:
            entry["status"] = "missing"
            entry["note"] = f"{argv[0]} not found on PATH"
            if not quiet_missing:
                self.miss(argv[0], missing_why)
            return entry
        sink = BoundedOutput(self.work / output, self.opts.max_bytes, keep=keep, boundary=boundary)
        run = run_bounded([exe, *argv[1:]], sink, timeout_s=self.opts.timeout_s, env=self.env)
        size = sink.close()
        entry.update(
            exit_status=run.exit_status,
            duration_s=run.duration_s,
            stderr=run.stderr,
            output=output,
            bytes=size,
            sha256=_sha256(self.work / output),
            truncated=sink.truncated,
        )
        if run.signal:
            entry["signal"] = run.signal
        if run.error is not None and run.exit_status is None:
            entry.update(status="error", note=f"could not run {argv[0]}: {run.error}")
            self.warn(f"{name}: could not run {argv[0]}: {run.error}")
        elif run.stopped == "timeout":
            entry.update(status="timeout", note=f"killed after {self.opts.timeout_s:g} s (--timeout)")
            self.warn(
                f"{name}: {argv[0]} did not finish within {self.opts.timeout_s:g} s and was stopped; "
                "the output is incomplete (raise --timeout or narrow --since)"
            )
        elif run.stopped == "output limit":
            entry["note"] = f"stopped at --max-bytes ({self.opts.max_bytes} bytes)"
        elif run.exit_status != 0:
            entry["status"] = "failed"
            if warn_failure:
                detail = _first_line(run.stderr) or _first_line(
                    _head(self.work / output, 4096).decode("utf-8", "replace")
                )
                self.warn(f"{name}: {argv[0]} exited {run.exit_status}" + (f": {detail}" if detail else ""))
        if run.error is not None and run.exit_status is not None:
            entry["note"] = run.error
            self.warn(f"{name}: {run.error}")
        if sink.truncated:
            kept = "newest" if keep == "tail" else "first"
            self.warn(
                f"{name}: output larger than --max-bytes ({self.opts.max_bytes} bytes); kept the {kept} part"
            )
        entry["ingest"] = bool(ingest and size > 0)
        return entry

    # -- files

    def copy(
        self,
        name: str,
        source: str,
        output: str,
        *,
        keep: str = "tail",
        fmt: str | None = None,
        ingest: bool = False,
        context: dict[str, Any] | None = None,
        purpose: str = "",
        keep_mtime: bool = True,
        report_missing: bool = True,
        real: Path | None = None,
    ) -> dict[str, Any] | None:
        path = real or self.machine_path(source)
        started = time.monotonic()
        entry: dict[str, Any] = {
            "name": name,
            "kind": "file",
            "purpose": purpose,
            "source": source,
            "status": "ok",
            "output": None,
            "bytes": 0,
            "sha256": None,
            "truncated": False,
            "format": fmt,
            "ingest": False,
            "context": dict(context or {}),
        }
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            if not report_missing:
                return None
            entry.update(status="missing", note="no such file")
            self.entries.append(entry)
            self.miss(source, "no such file")
            return entry
        except PermissionError:
            entry.update(status="denied", note="permission denied")
            self.entries.append(entry)
            self.miss(source, "permission denied")
            self.root_would_add(f"{source} (permission denied)")
            return entry
        except OSError as exc:
            entry.update(status="error", note=exc.strerror or str(exc))
            self.entries.append(entry)
            self.miss(source, exc.strerror or str(exc))
            return entry
        self.entries.append(entry)
        with fh:
            st = os.fstat(fh.fileno())
            limit = self.opts.max_bytes
            if st.st_size > limit and keep == "tail":
                if compression_of(fh.read(8)) is not None:
                    entry.update(
                        status="skipped",
                        note=f"compressed and larger than --max-bytes ({limit} bytes); not copied",
                        size=st.st_size,
                    )
                    self.miss(source, f"compressed log larger than --max-bytes ({st.st_size} bytes)")
                    return entry
                fh.seek(st.st_size - limit)
                fh.readline()  # the cut line
                entry["truncated"] = True
            sink = BoundedOutput(self.work / output, limit, keep="head")
            try:
                while True:
                    block = fh.read(1 << 20)
                    if not block or not sink.write(block):
                        break
            except OSError as exc:
                entry.update(status="error", note=f"read failed: {exc.strerror or exc}")
                self.warn(f"{name}: reading {source} failed: {exc.strerror or exc}")
            size = sink.close()
        truncated = bool(entry["truncated"] or sink.truncated)
        if truncated:
            kept = "newest" if keep == "tail" else "first"
            self.warn(f"{name}: {source} is larger than --max-bytes ({limit} bytes); kept the {kept} part")
        if keep_mtime and st.st_mtime > 0:
            os.utime(self.work / output, (st.st_atime, st.st_mtime))
            entry["mtime"] = _iso(datetime.fromtimestamp(st.st_mtime, UTC))
        entry.update(
            output=output,
            bytes=size,
            sha256=_sha256(self.work / output),
            truncated=truncated,
            duration_s=round(time.monotonic() - started, 3),
            ingest=bool(ingest and size > 0 and entry["status"] == "ok"),
        )
        return entry

    # -- the plan

    def tool_versions(self) -> dict[str, Any]:
        tools: dict[str, Any] = {}
        for tool in ("journalctl", "dmesg", "nvidia-smi", "systemctl", "free"):
            exe = self.which(tool)
            if exe is None:
                tools[tool] = None
                continue
            sink_path = self.work / ".version"
            sink = BoundedOutput(sink_path, 64 << 10)
            run = run_bounded(
                [exe, "--version"], sink, timeout_s=min(VERSION_TIMEOUT_S, self.opts.timeout_s), env=self.env
            )
            sink.close()
            text = sink_path.read_text(encoding="utf-8", errors="replace").strip()
            sink_path.unlink(missing_ok=True)
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            version = None
            if run.exit_status == 0 and lines:
                version = "; ".join(lines[:4]) if tool == "nvidia-smi" else lines[0]
            tools[tool] = {"path": exe, "version": version}
        return tools

    def kernel(self, boot_time: datetime | None) -> None:
        ctx = {"boot_time": _iso(boot_time)} if boot_time else {}
        iso = self.run(
            "dmesg-iso",
            ["dmesg", "--time-format", "iso"],
            "kernel/dmesg-iso.txt",
            fmt="dmesg",
            ingest=True,
            context=ctx,
            purpose="kernel ring buffer with wall-clock stamps (OOM kills, NVIDIA Xids)",
            warn_failure=False,
        )
        raw = self.run(
            "dmesg",
            ["dmesg"],
            "kernel/dmesg.txt",
            fmt="dmesg",
            ingest=True,
            context=ctx,
            purpose="kernel ring buffer, boot-relative stamps (anchored with boot_time)",
            quiet_missing=True,
            warn_failure=False,
        )
        if iso["ingest"] and iso["status"] == "ok":
            raw["ingest"] = False  # the same records: ingest one copy
            raw["note"] = "same records as dmesg-iso (not ingested)"
        elif raw["ingest"]:
            iso["ingest"] = False
            if iso["status"] == "failed":
                iso["note"] = "this dmesg cannot print ISO stamps; the raw copy is ingested (with boot_time)"
        for e in (iso, raw):
            if e["status"] == "failed" and re.search(r"not permitted|permission denied", e["stderr"], re.I):
                self.root_would_add("the kernel ring buffer (dmesg is restricted: kernel.dmesg_restrict=1)")
        if not (iso["bytes"] or raw["bytes"]) and iso["status"] != "missing":
            why = _first_line(iso["stderr"] or raw["stderr"]) or "dmesg printed nothing"
            self.miss("dmesg", why)

    def journal(self) -> None:
        base = ["journalctl", "-o", "export", "--no-pager"]
        if self.opts.since:
            base += ["--since", self.opts.since]
        if self.opts.until:
            base += ["--until", self.opts.until]
        entries: list[dict[str, Any]]
        if not self.opts.units:
            entries = [
                self.run(
                    "journal",
                    base,
                    "journal/journal.export",
                    keep="tail",
                    boundary=b"\n\n",
                    fmt="journal-export",
                    ingest=True,
                    purpose="the whole journal of the window (all units and the kernel)",
                    warn_failure=False,
                )
            ]
        else:
            unit_args: list[str] = []
            for pattern in [*map(unit_pattern, self.opts.units), *MEMORY_UNITS]:
                unit_args += ["-u", pattern]
            # `-u U -k` would AND the kernel transport with the units (and -k means this boot
            # only): two exports instead
            entries = [
                self.run(
                    "journal-units",
                    [*base, *unit_args],
                    "journal/units.export",
                    keep="tail",
                    boundary=b"\n\n",
                    fmt="journal-export",
                    ingest=True,
                    purpose="journal entries of the given units (and systemd's words about them)",
                    warn_failure=False,
                ),
                self.run(
                    "journal-kernel",
                    [*base, "_TRANSPORT=kernel"],
                    "journal/kernel.export",
                    keep="tail",
                    boundary=b"\n\n",
                    fmt="journal-export",
                    ingest=True,
                    purpose="kernel messages of the window, every boot in it",
                    quiet_missing=True,
                    warn_failure=False,
                ),
            ]
        first = entries[0]
        if first["status"] == "missing":
            return
        for e in entries:
            if re.search(r"not seeing messages from other users", e["stderr"]):
                self.root_would_add(
                    "the system journal and other users' entries (a plain user sees only their own "
                    "unless in the systemd-journal or adm group)"
                )
        if all(e["bytes"] == 0 for e in entries):
            why = next((_first_line(e["stderr"]) for e in entries if e["stderr"].strip()), "")
            if not why:
                why = "journalctl printed no entries for the window"
                if not self._journal_files():
                    why += " (no journal files: journald is not running or keeps no journal here)"
            self.miss("journal", why)
            return
        for e in entries:
            if e["status"] == "failed":
                detail = _first_line(e["stderr"])
                self.miss(
                    e["name"], f"journalctl exited {e['exit_status']}" + (f": {detail}" if detail else "")
                )
        if not self.is_root and not (set(_user()["groups"]) & set(JOURNAL_GROUPS)):
            self.root_would_add(
                "the system journal and other users' entries (a plain user sees only their own "
                "unless in the systemd-journal or adm group)"
            )

    def _journal_files(self) -> bool:
        for d in ("run/log/journal", "var/log/journal"):
            base = self.root / d
            with contextlib.suppress(OSError):
                for _dirpath, _dirs, files in os.walk(base):
                    if any(f.endswith((".journal", ".journal~")) for f in files):
                        return True
        return False

    def gpu(self) -> None:
        steps = [
            (
                "nvidia-smi-xml",
                ["nvidia-smi", "-q", "-x"],
                None,
                "gpu/nvidia-smi-q.xml",
                "nvidia-smi-xml",
                "every GPU property and process now (XML)",
            ),
            (
                "nvidia-smi-gpu",
                ["nvidia-smi", f"--query-gpu={QUERY_GPU_FIELDS}", "--format=csv"],
                ["nvidia-smi", f"--query-gpu={QUERY_GPU_FIELDS_OLD}", "--format=csv"],
                "gpu/query-gpu.csv",
                "nvidia-smi-csv",
                "GPU memory now (CSV)",
            ),
            (
                "nvidia-smi-apps",
                ["nvidia-smi", f"--query-compute-apps={QUERY_APPS_FIELDS}", "--format=csv"],
                ["nvidia-smi", f"--query-compute-apps={QUERY_APPS_FIELDS_OLD}", "--format=csv"],
                "gpu/query-compute-apps.csv",
                "nvidia-smi-csv",
                "GPU memory per process now (CSV)",
            ),
        ]
        if self.which("nvidia-smi") is None:
            for name, argv, _old, output, fmt, purpose in steps:
                self.run(name, argv, output, fmt=fmt, purpose=purpose, quiet_missing=True)
            self.miss("nvidia-smi", "not found on PATH (no NVIDIA driver here?): no GPU snapshot")
            return
        entries = []
        for name, argv, old, output, fmt, purpose in steps:
            ctx = {"at": _iso(self.clock())}  # the time of outputs that print none
            entry = self.run(
                name, argv, output, fmt=fmt, ingest=True, context=ctx, purpose=purpose, warn_failure=False
            )
            if old and entry["status"] == "failed" and _invalid_field(self.work / output, entry["stderr"]):
                self.entries.remove(entry)
                entry = self.run(
                    name, old, output, fmt=fmt, ingest=True, context=ctx, purpose=purpose, warn_failure=False
                )
                entry["note"] = "this driver refused the full field list; ran again with the older fields"
            if b"[Insufficient Permissions]" in _head(self.work / output):
                self.root_would_add("GPU memory of other users' processes ([Insufficient Permissions])")
            entries.append(entry)
        if all(e["status"] != "ok" for e in entries):
            xml = entries[0]
            text = _head(self.work / "gpu/nvidia-smi-q.xml").decode("utf-8", "replace").strip()
            why = _first_line(text or xml["stderr"]) or "no output"
            self.miss("nvidia-smi", f"failed (exit status {xml['exit_status']}): {why}")
            return
        for e in entries:
            if e["status"] == "failed":
                text = _head(self.work / e["output"], 4096).decode("utf-8", "replace")
                detail = _first_line(e["stderr"]) or _first_line(text)
                self.miss(
                    e["name"], f"nvidia-smi exited {e['exit_status']}" + (f": {detail}" if detail else "")
                )

    def systemd(self) -> list[dict[str, Any]]:
        """systemctl list/show/cat of the matching units; returns (unit, log path, tz) hints."""
        patterns = [unit_pattern(u) for u in self.opts.units] or list(default_unit_patterns())
        listed = self.run(
            "systemd-units",
            ["systemctl", "list-units", "--all", "--full", "--plain", "--no-legend", "--no-pager", *patterns],
            "systemd/list-units.txt",
            purpose="loaded units matching the patterns and their state",
            warn_failure=False,
        )
        if listed["status"] == "missing":
            return []
        if listed["status"] != "ok":
            why = _first_line(listed["stderr"]) or f"exit status {listed['exit_status']}"
            self.miss("systemd", f"systemctl failed: {why}")
            return []
        files = self.run(
            "systemd-unit-files",
            ["systemctl", "list-unit-files", "--full", "--no-legend", "--no-pager", *patterns],
            "systemd/list-unit-files.txt",
            purpose="installed unit files matching the patterns",
        )
        units: list[str] = []
        for entry in (listed, files):
            text = (
                _head(self.work / entry["output"], 4 << 20).decode("utf-8", "replace")
                if entry["output"]
                else ""
            )
            for line in text.splitlines():
                words = line.split()
                if words and words[0] in ("●", "*", "○"):
                    words = words[1:]
                if (
                    words
                    and _UNIT_NAME.match(words[0])
                    and words[0] not in units
                    and any(fnmatch.fnmatchcase(words[0], p) for p in patterns)
                ):
                    units.append(words[0])
        if not units:
            self.miss("units", f"no systemd unit matches {' '.join(patterns)}")
            return []
        if len(units) > MAX_UNITS:
            self.warn(f"systemd: {len(units)} units match; kept the first {MAX_UNITS}")
            units = units[:MAX_UNITS]
        self.units = units
        hints: list[dict[str, Any]] = []
        for unit in units:
            safe = _safe_name(unit)
            show = self.run(
                f"systemd-show:{unit}",
                ["systemctl", "show", "--no-pager", unit],
                f"systemd/{safe}.show.txt",
                purpose="unit properties (MemoryMax, Restart, NRestarts, ExecStart, ControlGroup)",
            )
            cat = self.run(
                f"systemd-cat:{unit}",
                ["systemctl", "cat", "--no-pager", unit],
                f"systemd/{safe}.cat.txt",
                purpose="the unit file and drop-ins (the server's arguments)",
            )
            show_text = (
                _head(self.work / show["output"], 4 << 20).decode("utf-8", "replace")
                if show["output"]
                else ""
            )
            cat_text = (
                _head(self.work / cat["output"], 4 << 20).decode("utf-8", "replace") if cat["output"] else ""
            )
            tz = _tz_of_environment(_show_property(show_text, "Environment"))
            for path in log_paths_of_unit(cat_text):
                hints.append({"unit": unit, "path": path, "tz": tz})
            cgroup = _show_property(show_text, "ControlGroup")
            if cgroup and cgroup.startswith("/") and ".." not in cgroup:
                for fname in CGROUP_FILES:
                    self.copy(
                        f"cgroup:{unit}:{fname}",
                        f"/sys/fs/cgroup{cgroup}/{fname}",
                        f"systemd/{safe}.cgroup/{fname}",
                        keep="head",
                        purpose="the unit's cgroup v2 memory limits and OOM counters",
                        keep_mtime=False,
                        report_missing=False,
                    )
        return hints

    def host_files(self) -> None:
        for name, source, purpose in (
            ("meminfo", "/proc/meminfo", "host memory now"),
            ("vmstat", "/proc/vmstat", "kernel memory counters since boot (oom_kill)"),
            ("pressure-memory", "/proc/pressure/memory", "memory pressure stall information"),
        ):
            self.copy(name, source, f"host/{name}", keep="head", purpose=purpose, keep_mtime=False)
        self.run("free", ["free", "-b"], "host/free-b.txt", purpose="host memory now, in bytes")

    def containers(self) -> None:
        """Inference servers in containers: ``docker logs -t`` (or podman's) of every container,
        running or exited, whose name or image names an engine (``vllm/vllm-openai``,
        ``lmsysorg/sglang``), over the window; its lines keep the runtime's exact stamps."""
        from .engines import engines

        known = tuple(engines().values())
        for runtime in ("docker", "podman"):
            if self.which(runtime) is None:
                continue
            listing = self.run(
                f"{runtime}-ps",
                [runtime, "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.Image}}"],
                f"containers/{runtime}-ps.txt",
                purpose="the containers, to find the inference servers among them",
                warn_failure=False,
            )
            if listing["status"] != "ok":
                continue
            text = (self.work / f"containers/{runtime}-ps.txt").read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines()[:MAX_LOGS]:
                cid, _, rest = line.partition(" ")
                name, _, image = rest.partition(" ")
                engine = next((e for e in known if e.names(name) or e.names(image)), None)
                if engine is None or not re.fullmatch(r"[0-9a-f]{12,64}", cid):
                    continue
                argv = [runtime, "logs", "-t"]
                if self.opts.since:
                    argv += ["--since", self.opts.since]
                self.run(
                    f"{runtime}-logs-{_safe_name(name)}",
                    [*argv, cid],
                    f"containers/{runtime}-{_safe_name(name)}.log",
                    keep="tail",
                    fmt=engine.name,
                    ingest=True,
                    purpose=f"the {engine.label} server in container {name} ({image})",
                )

    def server_logs(self, hints: list[dict[str, Any]]) -> None:
        wanted: dict[str, dict[str, Any]] = {}
        for h in hints:
            wanted.setdefault(
                h["path"],
                {
                    "unit": h["unit"],
                    "tz": h["tz"],
                    "from": f"unit {h['unit']}",
                    "real": self.machine_path(h["path"]),
                },
            )
        config = self.opts.config
        base = config.path.parent if config.path else Path.cwd()
        for pattern in config.collect_logs:
            # an absolute pattern is a path of the machine; a relative one is relative to the
            # directory of postmortem.toml
            where = str(self.machine_path(pattern)) if os.path.isabs(pattern) else str(base / pattern)
            matched = sorted(glob.glob(where))
            if not matched:
                self.miss(pattern, "no file matches this [collect] server_logs pattern")
            for m in matched:
                shown = m
                if os.path.isabs(pattern) and self.root != Path("/"):
                    shown = "/" + os.path.relpath(m, self.root)
                if Path(m).is_file():
                    wanted.setdefault(
                        shown, {"unit": None, "tz": None, "from": "postmortem.toml", "real": Path(m)}
                    )
        if len(wanted) > MAX_LOGS:
            self.warn(f"server logs: {len(wanted)} files; kept the first {MAX_LOGS}")
        used: set[str] = set()
        for path, info in list(wanted.items())[:MAX_LOGS]:
            unit = info["unit"]
            if unit is None:
                hint = config.hint_for(path)
                unit = hint.unit if hint else None
            name = _safe_name(os.path.basename(path))
            out = f"servers/{name}"
            k = 2
            while out in used:
                out = f"servers/{k}-{name}"
                k += 1
            used.add(out)
            ctx = {k2: v for k2, v in (("unit", unit), ("tz", info["tz"])) if v}
            self.copy(
                f"log:{path}",
                path,
                out,
                keep="tail",
                ingest=True,
                context=ctx,
                purpose=f"inference-server log file (named by {info['from']})",
                real=info["real"],
            )
        if not wanted:
            self.miss(
                "server logs",
                "no log file named (set [collect] server_logs in postmortem.toml, or log to the journal)",
                warn=False,
            )


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _invalid_field(output: Path, stderr: str) -> bool:
    text = _head(output).decode("utf-8", "replace") + stderr
    return "is not a valid field" in text or "Invalid combination" in text


def _head(path: Path, n: int = 64 << 10) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def collect(opts: CollectOptions) -> CollectResult:
    """Collect the bundle; see the module docstring. Raises only for unusable options or an
    output directory that cannot be written.

    Everything it creates is private to whoever runs it: directories 0700, files and the
    archive 0600 (umask 077 while it runs) — run as root, it copies logs only root may read.
    """
    old = os.umask(0o077)
    try:
        return _collect(opts)
    finally:
        os.umask(old)


def _checked(opts: CollectOptions) -> CollectOptions:
    """The options, or a :class:`UsageError` naming the one that cannot be used."""
    if opts.since is not None and opts.since.strip().lower() in ("", "all"):
        opts = replace(opts, since=None)  # the whole journal
    if opts.timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    if not opts.timeout_s <= 86400:  # infinite or NaN: no deadline could be computed
        raise UsageError(f"--timeout {opts.timeout_s}: at most 86400 seconds per command")
    if opts.max_bytes < 4096:
        raise UsageError("--max-bytes must be at least 4096")
    return opts


def _machine_zone(root: Path) -> tuple[tzinfo | None, str | None, str]:
    """The machine's zone (None when it names none this machine knows), its name and source."""
    zone_name_, zone_source = detect_zone(root)
    if not zone_name_:
        return None, zone_name_, zone_source
    try:
        return get_zone(zone_name_), zone_name_, zone_source
    except UsageError:
        return None, zone_name_, zone_source


def _work_dir(out: Path, name: str) -> tuple[Path, Path]:
    """The bundle's final path (numbered when taken) and the hidden directory it is written in."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        final = out / name
        k = 2
        while final.exists() or (out / f"{final.name}.tar.gz").exists():
            final = out / f"{name}-{k}"
            k += 1
        work = out / f".{final.name}.partial"
        work.mkdir()
    except OSError as exc:
        raise PostmortemError(f"{out}: cannot write the bundle there: {exc.strerror or exc}") from exc
    return final, work


def _collect(opts: CollectOptions) -> CollectResult:
    now = (opts.now or datetime.now(UTC)).astimezone(UTC)
    opts = _checked(opts)
    zone, zone_name_, zone_source = _machine_zone(opts.root)
    local = zone or get_zone("UTC")
    window = {"since": opts.since, "until": opts.until, "since_utc": None, "until_utc": None}
    lo = parse_when(opts.since, local, now) if opts.since else None
    hi = parse_when(opts.until, local, now) if opts.until else None
    check_range(lo, hi)
    window.update(since_utc=_iso(lo), until_utc=_iso(hi))

    uname = os.uname()
    host = opts.host or uname.nodename or socket.gethostname()
    final, work = _work_dir(opts.out, f"postmortem-{_safe_name(host)}-{now:%Y%m%dT%H%M%SZ}")

    c = _Collector(opts, work, now)
    if zone is not None:
        c.env["TZ"] = f":{zone_name(zone)}"  # the commands print local times in the zone the manifest names
    elif zone_name_:
        c.miss("time zone", f"{zone_name_!r} (from {zone_source}) is not a zone this machine knows")
    else:
        c.miss("time zone", "no /etc/localtime link, /etc/timezone or $TZ names the zone")
    proc = opts.root / "proc"
    uptime_text = _read_text(proc / "uptime")
    stat_text = _read_text(proc / "stat")
    btime = _btime(stat_text)
    uptime_s = _uptime(uptime_text)
    boot_time = boot_time_of(btime, uptime_s, now)
    boot_id = (_read_text(proc / "sys/kernel/random/boot_id") or "").strip() or None
    offset = (now.astimezone(zone).utcoffset() if zone else now.astimezone().utcoffset()) or timedelta(0)
    manifest: dict[str, Any] = {
        "postmortem_bundle": BUNDLE_FORMAT,
        "created": _iso(now),
        "postmortem_version": __version__,
        "python": sys.version.split()[0],
        "host": host,
        "boot_id": boot_id,
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "boot_time": _iso(boot_time),
        "btime": btime,
        "uptime_s": uptime_s,
        "timezone": zone_name(zone) if zone else zone_name_,
        "timezone_source": zone_source,
        "utc_offset_s": int(offset.total_seconds()),
        "user": _user(),
        "window": window,
        "units": {
            "patterns": [unit_pattern(u) for u in opts.units] or list(default_unit_patterns()),
            "matched": [],
        },
        "limits": {"timeout_s": opts.timeout_s, "max_bytes": opts.max_bytes},
        "tools": {},
        "commands": [],
        "files": [],
        "missing": c.missing,
        "warnings": c.warnings,
        "root_would_add": c.root_adds,
        "complete": False,
    }
    hints: list[dict[str, Any]] = []

    def boot_files() -> None:
        for source, output in (("/proc/uptime", "host/uptime"), ("/proc/stat", "host/stat")):
            c.copy(output.split("/")[1], source, output, keep="head", purpose="boot time", keep_mtime=False)

    def units() -> None:
        hints.extend(c.systemd())
        manifest["units"]["matched"] = c.units

    def tools() -> None:
        manifest["tools"] = c.tool_versions()

    steps: list[tuple[str, Callable[[], None]]] = [
        ("tools", tools),
        ("boot", boot_files),
        ("kernel", lambda: c.kernel(boot_time)),
        ("journal", c.journal),
        ("gpu", c.gpu),
        ("systemd", units),
        ("host", c.host_files),
        ("server logs", lambda: c.server_logs(hints)),
        ("containers", c.containers),
    ]
    if opts.kubernetes:
        from . import collect_k8s

        steps.append(("kubernetes", lambda: collect_k8s.collect(c, opts.namespace, opts.pod)))
        manifest["kubernetes"] = collect_k8s.manifest_part(opts.namespace, opts.pod)
    try:
        for step, run in steps:
            try:
                run()
            except OSError as exc:  # writing into the bundle failed (disk full, quota): go on
                c.miss(step, f"writing the bundle failed: {exc.strerror or exc}")
        manifest["complete"] = True
    except KeyboardInterrupt:
        c.warn("interrupted: the bundle holds what was collected so far")
        _finish(c, manifest, work, final)
        raise
    result = _finish(c, manifest, work, final)
    if opts.archive:
        result.archive = write_archive(final)
    return result


def _finish(c: _Collector, manifest: dict[str, Any], work: Path, final: Path) -> CollectResult:
    manifest["commands"] = [e for e in c.entries if e["kind"] == "command"]
    manifest["files"] = [e for e in c.entries if e["kind"] == "file"]
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    try:
        (work / MANIFEST).write_text(text, encoding="utf-8")
        os.replace(work, final)
    except OSError as exc:
        raise PostmortemError(f"{work}: cannot write the manifest: {exc.strerror or exc}") from exc
    return CollectResult(bundle=final, archive=None, manifest=manifest)


def write_archive(bundle: Path) -> Path:
    """``<bundle>.tar.gz`` beside the directory, manifest first (so readers find it early)."""
    dest = bundle.with_name(bundle.name + ".tar.gz")

    def norm(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != MANIFEST)
    dirs = sorted({p.parent for p in files if p.parent != bundle})
    try:
        # a new file of an unpredictable name, renamed over dest: a link planted at a name
        # known in advance (the host and the second) is never written through; 0600 like the
        # bundle's files (it may hold logs only root could read)
        with atomic_output(dest, 0o600) as fh, tarfile.open(fileobj=fh, mode="w:gz", compresslevel=6) as tar:
            tar.add(bundle, arcname=bundle.name, recursive=False, filter=norm)
            tar.add(bundle / MANIFEST, arcname=f"{bundle.name}/{MANIFEST}", filter=norm)
            for d in dirs:
                tar.add(
                    d,
                    arcname=f"{bundle.name}/{d.relative_to(bundle).as_posix()}",
                    recursive=False,
                    filter=norm,
                )
            for f in files:
                tar.add(f, arcname=f"{bundle.name}/{f.relative_to(bundle).as_posix()}", filter=norm)
    except OSError as exc:
        raise PostmortemError(f"{dest}: cannot write the archive: {exc.strerror or exc}") from exc
    return dest


def summary_lines(result: CollectResult, warned: frozenset[str] = frozenset()) -> list[str]:
    """What the CLI prints after a collect (stdout): each missing item once — not again when
    it was already said as a warning (``warned``: the texts warned on stderr)."""
    m = result.manifest
    outputs = [e for e in (*m["commands"], *m["files"]) if e.get("output")]
    total = sum(int(e["bytes"]) for e in outputs)
    lines = [str(result.bundle)]
    if result.archive:
        lines.append(str(result.archive))
    said = [x for x in m["missing"] if f"{x['what']}: {x['why']}" in warned]
    lines.append(
        f"{len(outputs)} outputs, {total} bytes; {len(m['missing'])} missing"
        + (" (warned above)" if said and len(said) == len(m["missing"]) else "")
    )
    lines += [f"  missing: {x['what']}: {x['why']}" for x in m["missing"] if x not in said]
    if m["root_would_add"]:
        lines.append("running as root would add:")
        lines += [f"  - {x}" for x in m["root_would_add"]]
    return lines
