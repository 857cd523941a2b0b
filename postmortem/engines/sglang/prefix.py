"""SGLang line prefixes, rank tags and the capture wrappers in front of them.

SGLang's logger writes ``[<time>[ <rank tags>]] <message>`` (no level name). The time is
``HH:MM:SS`` (0.2.14–0.3.3), ``YYYY-MM-DD HH:MM:SS`` (0.3.4+), optionally with ``.mmm``
(``SGLANG_LOG_MS=1``, 0.5.6+); the multimodal runtime prints ``MM-DD HH:MM:SS``. The oldest
releases print ``[gpu=N] `` (0.1.x ``[gpu_id=N] ``) on some messages and nothing on others.
Rank tags (``TP3``, ``DP1 TP3``, ``PP0``, ``EP2``, ``ATTN_CP0``, ``MOE_DP1``) come in an order
that changed between releases: :func:`normalise_ranks` turns them into one canonical string.

Capture wrappers are stripped first: ``docker logs -t``/CRI stamps, Docker Desktop copies,
``docker compose`` service columns, Ray actor prefixes (coloured or not), journald text lines,
a launcher's loguru stamp, and torch's ``[rankN]: `` prefix; an application's own Python
logging format for an sglang logger is read as SGLang's prefix. A tqdm bar can glue a real line to its last update: the prefix is
searched for inside the line too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ...lazyre import lazy_re

#: ``[ts ranks] `` at the start of a message
PREFIX_RE = lazy_re(
    r"\[(?P<ts>(?:\d{4}-\d{2}-\d{2} |\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+| encode_server| encode_dp_worker\[\d+\])*)\]"
    r"(?: |$)"
)
#: a dated prefix anywhere in a line (tqdm glue); time-only ones are too easy to confuse
GLUED_RE = lazy_re(
    r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?"
    r"(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+| encode_server| encode_dp_worker\[\d+\])*\](?: |$)"
)
LEGACY_GPU_RE = lazy_re(r"\[gpu(?:_id)?=(?P<gpu>\d+)\] ?")
#: ``INFO server_args.py:2233: `` after the prefix (2026-era builds log level and source)
LEVEL_SOURCE_RE = lazy_re(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.-]+\.py:\d+: ")

DOCKER_TS_RE = lazy_re(r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) ")
DOCKER_DESKTOP_RE = lazy_re(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?: (?=\S)| ?$)")
J_ISO_RE = lazy_re(
    r"(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)) "
    r"(?P<host>\S+) (?P<ident>[^\s\[]+)(?:\[(?P<pid>\d+)\])?: "
)
J_SHORT_RE = lazy_re(
    r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? "
    r"(?P<host>\S+) (?P<ident>[^\s\[]+)(?:\[(?P<pid>\d+)\])?: "
)
COMPOSE_RE = lazy_re(r"[\w.-]+\s+\| ")
#: terminal colour codes in front of a line (Ray colours its actor prefixes): stripped for
#: parsing; the stored text keeps the line as read, escaped where it is written
SGR_RE = lazy_re(r"(?:\x1b\[[0-9;]*m)+\s*")
#: a launcher re-logging each line with loguru's default format:
#: ``2026-08-09 01:04:17.197 | INFO     | launcher:pump:61 - <the server's line>``
LOGURU_RE = lazy_re(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})? \| [A-Z]+ *\| \S+ - ")
#: the application's own Python logging format replacing SGLang's (``SGLANG_LOGGING_CONFIG_PATH``,
#: logging's ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``) for an sglang logger: its
#: stamp stands for SGLang's prefix
PYLOG_RE = lazy_re(
    r"(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[,.](?P<frac>\d{1,6}))? - "
    r"sglang(?:\.[\w.]+)? - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
RAY_RE = lazy_re(r"\((?P<actor>\w+) pid=(?P<pid>\d+)(?:,\s*ip=[\d.]+)?\)\s*")
TORCH_RANK_RE = lazy_re(r"\[rank(?P<rank>\d+)\]:\s?")

_RANK_ORDER = {"DP": 0, "PP": 1, "ATTN_CP": 2, "MOE_DP": 3, "TP": 4, "EP": 5}
_RANK_TOKEN = lazy_re(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)$")
_ranks_cache: dict[str, str | None] = {}


def normalise_ranks(text: str) -> str | None:
    """Rank tags in canonical order ``DP PP ATTN_CP MOE_DP TP EP`` (then other tags).

    >>> normalise_ranks(" TP3 DP1"), normalise_ranks(" DP0 TP0 EP0"), normalise_ranks("")
    ('DP1 TP3', 'DP0 TP0 EP0', None)
    >>> normalise_ranks(" EP2 MOE_DP1 PP0 TP5 ATTN_CP1")
    'PP0 ATTN_CP1 MOE_DP1 TP5 EP2'
    """
    hit = _ranks_cache.get(text, False)
    if hit is not False:
        return hit  # type: ignore[return-value]
    tokens = text.split()
    if not tokens:
        out: str | None = None
    else:

        def key(tok: str) -> tuple[int, str]:
            m = _RANK_TOKEN.match(tok)
            return (_RANK_ORDER[m.group(1)], tok) if m else (9, tok)

        out = " ".join(sorted(tokens, key=key))
    if len(_ranks_cache) < 4096:
        _ranks_cache[text] = out
    return out


class Wrapped(NamedTuple):
    """What the capture wrappers in front of an SGLang line said."""

    rest: str
    ts_text: str | None  # an exact (zoned) stamp from docker -t or journald short-iso
    host: str | None
    pid: int | None
    rank: str | None  # torch's [rankN]: prefix


def strip_wrappers(line: str) -> Wrapped:
    """Strip capture wrappers (repeatedly) from the front of ``line``.

    >>> strip_wrappers("sglang-1  | [2026-01-15 10:00:00] The server is fired up and ready to roll!").rest
    '[2026-01-15 10:00:00] The server is fired up and ready to roll!'
    >>> w = strip_wrappers("2026-01-15T10:00:00.764529167Z [2026-01-15 10:00:00 TP0] Decode batch. x")
    >>> w.ts_text, w.rest[:22]
    ('2026-01-15T10:00:00.764529167Z', '[2026-01-15 10:00:00 T')
    >>> strip_wrappers("(SchedulerActor pid=4242, ip=10.0.0.1) [2026-01-15 10:00:00 TP1] x").pid
    4242
    >>> strip_wrappers("Jan 15 10:00:00 gpu-node-1 sglang[4242]: [2026-01-15 10:00:00] x")[2:4]
    ('gpu-node-1', 4242)
    >>> w = strip_wrappers("\x1b[36m(SchedulerActor pid=7, ip=10.0.4.17)\x1b[0m [2026-01-15 10:00:00 TP1] x")
    >>> w.pid, w.rest
    (7, '[2026-01-15 10:00:00 TP1] x')
    >>> strip_wrappers("2026-01-15 10:00:00.197 | INFO     | launcher:pump:61 - [2026-01-15 10:00:00 TP0] x").rest
    '[2026-01-15 10:00:00 TP0] x'
    >>> strip_wrappers("2026-01-15 10:00:00,197 - sglang.srt.managers.scheduler - INFO - Decode batch, x").rest
    '[2026-01-15 10:00:00.197] Decode batch, x'
    >>> strip_wrappers("2026-01-15 10:00:00,197 - myapp - INFO - Decode batch, x").rest[:10]
    '2026-01-15'
    """
    found = _Found()
    for _ in range(4):
        rest = _strip_one(line, found)
        if rest is None:
            break
        line = rest
    return Wrapped(line, found.ts_text, found.host, found.pid, found.rank)


class _Found:
    """What the wrappers stripped so far said (the first of each wins)."""

    __slots__ = ("host", "pid", "rank", "ts_text")

    def __init__(self) -> None:
        self.ts_text: str | None = None
        self.host: str | None = None
        self.pid: int | None = None
        self.rank: str | None = None

    def took(self, m: re.Match[str]) -> None:
        groups = m.groupdict()
        self.ts_text = self.ts_text or groups.get("ts")
        self.host = self.host or groups.get("host")
        if groups.get("pid") and self.pid is None:
            self.pid = int(groups["pid"])


def _strip_one(line: str, found: _Found) -> str | None:
    """``line`` without the wrapper at its front, or None when none is there."""
    if not line or line[0] == "[":
        m = TORCH_RANK_RE.match(line) if line.startswith("[rank") else None
        if m is None:
            return None
        found.rank = m.group("rank")
        return line[m.end() :]
    c = line[0]
    if c.isdigit():
        rest = _dated(line, found)
        if rest is not None:
            return rest
    elif c == "\x1b" or c == "(":
        m = (SGR_RE if c == "\x1b" else RAY_RE).match(line)
        if m:
            found.took(m)
            return line[m.end() :]
    elif c.isupper() and len(line) > 16 and line[3] == " " and line[9] == ":":
        m = J_SHORT_RE.match(line)
        if m:
            found.took(m)
            return line[m.end() :]
    if " | " in line[:64]:
        m = COMPOSE_RE.match(line)
        if m:
            return line[m.end() :]
    return None


def _dated(line: str, found: _Found) -> str | None:
    """A wrapper that opens with a date: ``docker logs -t``/CRI, journald's short-iso, Docker
    Desktop, a launcher's loguru stamp, an application's logging prefix."""
    if len(line) > 20 and line[4] == "-" and line[10] == "T":
        m = DOCKER_TS_RE.match(line) or J_ISO_RE.match(line)
        if m:
            found.took(m)
            return line[m.end() :]
    elif len(line) >= 19 and line[4] == "-" and line[10] == " ":
        m = DOCKER_DESKTOP_RE.match(line)
        if m:
            return line[m.end() :]
        rest, ok = _logged_again(line)
        if ok:
            return rest
    return None


def _logged_again(line: str) -> tuple[str, bool]:
    """``line`` without a launcher's loguru envelope, or with the application's logging prefix
    of an sglang logger made SGLang's (``[date time.mmm] ``); (line, whether it was either)."""
    m = LOGURU_RE.match(line)
    if m:
        return line[m.end() :], True
    m = PYLOG_RE.match(line)
    if m:
        frac = m.group("frac")
        return f"[{m.group('ts')}{'.' + frac if frac else ''}] {line[m.end() :]}", True
    return line, False


_LOOKS = lazy_re(
    r"(?:\[(?:\d{4}-\d{2}-\d{2} |\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?"
    r"(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+| encode_server| encode_dp_worker\[\d+\])*\] "
    r"|\[gpu(?:_id)?=\d+\] )"
)


def looks_like_sglang(message: str) -> bool:
    """True when ``message`` carries SGLang's logger prefix (also SGLang's uvicorn layout
    ``[date] INFO:     …``, behind a compose/Ray/docker wrapper, or glued to a tqdm bar).

    Cheap: a few character tests, one anchored regex on the first 120 characters.

    >>> looks_like_sglang("[2026-01-15 10:00:00 TP0] Load weight begin. avail mem=77.43 GB")
    True
    >>> looks_like_sglang("[2026-01-15 10:00:01] INFO:     127.0.0.1:38328 - \\"GET /health HTTP/1.1\\" 200 OK")
    True
    >>> looks_like_sglang("sglang-1  | [10:00:00 TP0] Decode batch. #running-req: 1")
    True
    >>> looks_like_sglang("Started sglang.service.") or looks_like_sglang("[   12.5] usb 1-1: new")
    False
    """
    if not message:
        return False
    if message[0] == "[":
        return _LOOKS.match(message) is not None
    pos = message.find("[", 0, 120)
    while pos > 0:
        if _LOOKS.match(message, pos):
            return True
        pos = message.find("[", pos + 1, 120)
    if "\r" in message:
        return GLUED_RE.search(message) is not None
    return False


# --------------------------------------------------------------------------- foreign lines

#: unprefixed lines written by libraries into an SGLang log: recognised, nothing to store
_FOREIGN_RES = (
    lazy_re(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - [A-Z]+ - "),  # flashinfer / logging
    lazy_re(r"[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ "),  # glog (torch C++)
    lazy_re(r"\S+\.py:\d+: \w*Warning: "),  # Python warnings
    lazy_re(r"\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)"),  # NCCL debug
    lazy_re(r"(?:INFO|WARNING|ERROR|DEBUG) \d{2}-\d{2} \d{2}:\d{2}:\d{2} "),  # vLLM-style libs
)
#: SGLang's ``[date time TPn]`` prefix with the stamp garbled (what is_foreign must not skip)
_DAMAGED_OWN = lazy_re(r"\[\d{4}-[^\]]{0,40}\b(?:TP|DP|PP|EP|CP)\d+[^\]]{0,20}\]")

_FOREIGN_STARTS = (
    "[Gloo]",
    "Loading safetensors checkpoint shards",
    "Loading pt checkpoint shards",
    "Capturing batches",
    "Capturing num tokens",
    "--- Logging error ---",
    "Call stack:",
    "Arguments: ",
    "<frozen ",
    "warnings.warn(",
    "NCCL version",
    "Compiling ",
)


#: dmesg's seconds-since-boot stamp: a kernel line pasted or redirected into the log
_KERNEL_STAMP = lazy_re(r"\[\s*\d+\.\d{6}\] ")


def is_foreign(text: str) -> bool:
    """A known library line (progress bar, flashinfer, glog, Python warning, NCCL debug…).

    >>> is_foreign("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00]")
    True
    >>> is_foreign("W0115 10:00:00.440000 4242 torch/distributed/run.py:792] ")
    True
    >>> is_foreign("Some random text")
    False
    >>> is_foreign("[2025-05-12 09:4x2:51 TP0] Prefill batch. #new-seq: 1")  # SGLang's, garbled
    False
    >>> is_foreign("[rank0]: Traceback")
    True
    >>> is_foreign("[482688.202206] Memory cgroup out of memory: Killed process 48221 (x)")  # the kernel's
    False
    """
    if text.startswith(_FOREIGN_STARTS):
        return True
    if "it/s]" in text or "s/it]" in text or "%|" in text:
        return True
    if text[:1] == "[" and "]" in text[:64]:
        if _KERNEL_STAMP.match(text):
            return False  # a kernel line (dmesg's stamp) in a server's log: not the server's, a parse issue
        # another logger's bracketed prefix — unless it is SGLang's own, damaged: a date and a
        # rank tag (a line cut or garbled inside its stamp is a parse issue, not another logger)
        return _DAMAGED_OWN.match(text) is None
    return any(r.match(text) for r in _FOREIGN_RES)
