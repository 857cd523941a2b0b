"""The layers of a vLLM log line, outermost first: a capture wrapper (CRI pod log, ``docker logs
-t``, journald, compose), ANSI colours, process prefixes (``(APIServer pid=4241)``, nested up
to 0.17.1), then vLLM's envelope ``LEVEL MM-DD HH:MM:SS [file.py:N] message`` (``file.py:N]``
up to 0.7.3) or uvicorn's ``INFO:     …`` (no time at all). A launcher's loguru stamp (or Docker
Desktop's copy) in front is a wrapper too: a local time, with its year and milliseconds.

Formats: ``/work/shared/reference/vllm.md`` §1 (the repository's ``docs/inputs.md``).

>>> p = split_line("2026-01-15T10:00:00.123456789Z stdout F (APIServer pid=4241) INFO 01-15 10:00:00 [api_server.py:1] x")
>>> p.wrapper_ts, p.proc, p.pid, p.level, p.mmdd, p.clock, p.message
('2026-01-15T10:00:00.123456789Z', 'APIServer', 4241, 'INFO', '01-15', '10:00:00', 'x')
>>> p = split_line("\\x1b[1;36m(VllmWorkerProcess pid=4243)\\x1b[0;0m INFO 05-25 20:03:11 model_runner.py:1] y")
>>> p.proc, p.pid, p.file, p.message
('VllmWorkerProcess', 4243, 'model_runner.py', 'y')
>>> p = split_line("2026-08-09 01:04:17.197 | INFO     | launcher:pump:61 - (APIServer pid=7) INFO 08-09 01:04:17 [a.py:1] z")
>>> p.wrapper_ts, p.proc, p.message
('2026-08-09 01:04:17.197', 'APIServer', 'z')
>>> split_line("(APIServer pid=1) INFO:     10.0.0.7:51234 - \\"GET /health HTTP/1.1\\" 200 OK").uvicorn
'10.0.0.7:51234 - "GET /health HTTP/1.1" 200 OK'
"""

from __future__ import annotations

from typing import NamedTuple

from ...lazyre import lazy_re

ANSI_RE = lazy_re(r"\x1b\[[0-9;]*[A-Za-z]")
CRI_RE = lazy_re(
    r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) (?:stdout|stderr) (?P<tag>[FP]) ?"
)
DOCKER_TS_RE = lazy_re(r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) ")
J_ISO_RE = lazy_re(
    r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})) (?P<host>\S+) "
    r"(?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: "
)
J_SHORT_RE = lazy_re(
    r"(?P<ts>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?) (?P<host>\S+) (?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?: "
)
COMPOSE_RE = lazy_re(r"[\w.-]+\s+\| ")
#: a launcher re-logging each line with loguru's default format
#: (``2026-08-09 01:04:17.197 | INFO     | launcher:pump:61 - <the server's line>``), or Docker
#: Desktop's copy (``2026-01-15 10:00:00.587 | <line>``): a local time with its year
LOCAL_STAMP_RE = lazy_re(
    r"(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?) \| (?:[A-Z]+ *\| \S+ - )?"
)
PROC_RE = lazy_re(r"\((?P<proc>[A-Za-z][\w =-]*?) pid=(?P<pid>\d+)(?:, ip=[\d.:a-f]+)?\) ?")
ENVELOPE_RE = lazy_re(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mmdd>\d{2}-\d{2}) (?P<clock>\d{2}:\d{2}:\d{2}) "
    r"(?:\[(?P<file>[^\]]+?):(?P<line>\d+)\]|(?P<file_old>[\w.-]+\.py):(?P<line_old>\d+)\]) ?"
)
UVICORN_RE = lazy_re(r"(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+")


#: the largest pid Linux hands out (``/proc/sys/kernel/pid_max`` is at most 2**22)
PID_MAX = 1 << 22


def pid_of(text: str | None) -> int | None:
    """A pid as printed, or None when it cannot be one (it would not fit the store either).

    >>> pid_of("4242"), pid_of("99999999999999999999"), pid_of(None)
    (4242, None, None)
    """
    if not text or len(text) > 8:
        return None
    value = int(text)
    return value if 0 < value <= PID_MAX else None


class Parts(NamedTuple):
    """What a line is made of; ``message`` is the text after every layer."""

    message: str
    wrapper_ts: str | None = None  # an exact stamp from the capture (CRI, docker -t, journald)
    host: str | None = None
    wrapper_pid: int | None = None
    partial: bool = False  # a CRI ``P`` record: the line goes on in the next one
    proc: str | None = None  # the innermost process prefix's name
    pid: int | None = None
    level: str | None = None
    mmdd: str | None = None
    clock: str | None = None
    file: str | None = None
    uvicorn: str | None = None  # the text of a uvicorn line (after ``LEVEL:``)


def _unwrap(line: str) -> tuple[str, str | None, str | None, int | None, bool]:
    ts = host = None
    pid = None
    partial = False
    for _ in range(3):
        if line[:1].isdigit() and len(line) > 20 and line[4] == "-" and line[10] == "T":
            m = CRI_RE.match(line)
            if m:
                ts, partial, line = ts or m.group("ts"), m.group("tag") == "P", line[m.end() :]
                continue
            m = J_ISO_RE.match(line)
            if m:
                ts, host = ts or m.group("ts"), host or m.group("host")
                pid = pid or pid_of(m.group("pid"))
                line = line[m.end() :]
                continue
            m = DOCKER_TS_RE.match(line)
            if m:
                ts, line = ts or m.group("ts"), line[m.end() :]
                continue
        elif line[:1].isupper() and len(line) > 16 and line[3] == " " and line[9] == ":":
            m = J_SHORT_RE.match(line)
            if m:
                host = host or m.group("host")
                pid = pid or pid_of(m.group("pid"))
                line = line[m.end() :]
                continue
        if " | " in line[:64]:
            m = LOCAL_STAMP_RE.match(line) if line[:1].isdigit() and line[4:5] == "-" else None
            if m:
                ts, line = ts or m.group("ts"), line[m.end() :]
                continue
            m = COMPOSE_RE.match(line)
            if m:
                line = line[m.end() :]
                continue
        break
    return line, ts, host, pid, partial


def split_line(line: str) -> Parts:
    """The layers of ``line`` (see the module docstring)."""
    line = line.rstrip("\r\n")
    if "\r" in line:  # a tqdm bar glued in front of the line: the text after the last \r
        line = line.rsplit("\r", 1)[-1]
    rest, ts, host, wpid, partial = _unwrap(line)
    if "\x1b" in rest:
        rest = ANSI_RE.sub("", rest)
    proc = None
    pid = None
    while rest[:1] == "(":
        m = PROC_RE.match(rest)
        if m is None:
            break
        proc, pid, rest = m.group("proc"), pid_of(m.group("pid")), rest[m.end() :]
    m = ENVELOPE_RE.match(rest)
    if m is not None:
        return Parts(
            rest[m.end() :].rstrip(),
            ts,
            host,
            wpid,
            partial,
            proc,
            pid,
            m.group("level"),
            m.group("mmdd"),
            m.group("clock"),
            m.group("file") or m.group("file_old"),
        )
    u = UVICORN_RE.match(rest)
    if u is not None:
        text = rest[u.end() :].rstrip()
        return Parts(text, ts, host, wpid, partial, proc, pid, u.group("level"), uvicorn=text)
    return Parts(rest.rstrip(), ts, host, wpid, partial, proc, pid)


#: words only vLLM prints, on lines it wraps in its envelope
_MARKERS = (
    "vLLM API server version",
    "vLLM server version",
    "non-default args:",
    "args: Namespace(",
    "LLM engine (v",
    "Starting vLLM",
    "Loading weights took",
    "Model loading took",
    "Loading model weights took",
    "KV cache size:",
    "# GPU blocks:",
    "# cuda blocks:",
    "# CUDA blocks:",
    "Avg prompt throughput:",
    "init engine (profile",
    "Graph capturing finished",
    "EngineCore",
    "VllmWorker",
)


def looks_like_vllm(message: str) -> bool:
    """Whether a line (wrappers and all) is vLLM's own: its envelope with a vLLM message, or a
    vLLM process prefix.

    >>> looks_like_vllm("INFO 05-25 20:03:11 [core.py:61] Initializing a V1 LLM engine (v0.8.5) with config: x")
    True
    >>> looks_like_vllm("(APIServer pid=4241) INFO 05-25 20:03:11 [loggers.py:1] anything")
    True
    >>> looks_like_vllm("[2026-01-15 10:00:00 TP0] Decode batch"), looks_like_vllm("INFO 05-25 20:03:11 x.py:1] hi")
    (False, False)
    >>> looks_like_vllm("INFO 01-01 06:08:26 [loggers.py:259] Engine 000: Avg prompt throughput: 1.0 tokens/s")
    True
    """
    p = split_line(message[:4000])
    if p.proc is not None and p.proc.startswith(_PROCS):
        return True
    if p.level is None or p.mmdd is None:
        return False
    # (V1's statistics name their engine first: "Engine 000: Avg prompt throughput: …")
    return p.message.startswith((*_MARKERS, "Initializing")) or (
        p.message.startswith("Engine ") and "Avg prompt throughput:" in p.message[:40]
    )


_PROCS = (
    "APIServer",
    "ApiServer",
    "EngineCore",
    "DPEngineCore",
    "Worker",
    "VllmWorker",
    "VllmWorkerProcess",
    "DPCoordinator",
)
