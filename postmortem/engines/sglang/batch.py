"""``Prefill batch`` / ``Decode batch`` lines, parsed by ``key: value`` pairs (never positions).

Headers: ``Decode batch. `` (≤0.5.3), ``Decode batch [N], `` (0.5.4), ``Decode batch, ``
(0.5.4.post1+), ``Prefill batch(mixed #running-req: N). `` (0.2.x–0.3.x). A trailing ``", "``
is common. Hybrid models print ``#full token`` / ``full token usage`` instead of ``#token`` /
``token usage`` (they fill the same columns) plus ``swa token usage`` or ``mamba usage``.
Keys without a column of their own go to ``extra``; keys nobody has seen before also go
there and are reported once per file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_int = int
_float = float
_bool = {"True": True, "False": False}.__getitem__  # KeyError on anything else


# column order of the parsed values (see ServerStats)
COLUMNS = (
    "running_req",
    "queue_req",
    "num_tokens",
    "token_usage",
    "gen_throughput",
    "input_throughput",
    "accept_len",
    "accept_rate",
    "new_seq",
    "new_token",
    "cached_token",
    "cuda_graph",
    "swa_token_usage",
    "mamba_usage",
    "pending_token",
)
_IX = {name: i for i, name in enumerate(COLUMNS)}

#: printed key → (column index, converter)
KEYS: dict[str, tuple[int, Callable[[str], Any]]] = {
    "#running-req": (_IX["running_req"], _int),
    "#queue-req": (_IX["queue_req"], _int),
    "#token": (_IX["num_tokens"], _int),
    "#full token": (_IX["num_tokens"], _int),
    "token usage": (_IX["token_usage"], _float),
    "full token usage": (_IX["token_usage"], _float),
    "gen throughput (token/s)": (_IX["gen_throughput"], _float),
    "input throughput (token/s)": (_IX["input_throughput"], _float),
    "accept len": (_IX["accept_len"], _float),
    "accept rate": (_IX["accept_rate"], _float),
    "#new-seq": (_IX["new_seq"], _int),
    "#new-token": (_IX["new_token"], _int),
    "#cached-token": (_IX["cached_token"], _int),
    "cuda graph": (_IX["cuda_graph"], _bool),
    "cpu graph": (_IX["cuda_graph"], _bool),
    "npu graph": (_IX["cuda_graph"], _bool),
    "musa graph": (_IX["cuda_graph"], _bool),
    "xpu graph": (_IX["cuda_graph"], _bool),
    "swa token usage": (_IX["swa_token_usage"], _float),
    "mamba usage": (_IX["mamba_usage"], _float),
    "#pending-token": (_IX["pending_token"], _int),
}

#: keys SGLang prints that have no column: kept in ``extra`` without a warning
KNOWN_EXTRA = frozenset(
    {
        "cache hit rate",
        "largest-len",
        "pre-allocated usage",
        "#retracted-req",
        "#prealloc-req",
        "#inflight-req",
        "#transfer-req",
        "#unbootstrapped-req",
        "#transferring-req",
        "#bootstrap-req",
        "#optimistic-req",
        "time",
        "#swa token",
        "mamba num",
        "est. prefill TFLOPS/s (per GPU)",
        "est. decode TFLOPS/s (per GPU)",
        "est. read BW (GB/s per GPU)",
        "est. write BW (GB/s per GPU)",
        "fwd occupancy",
        "fwd+idle occupancy",
        "#replay-token",
        "cap len",
        "block accept len",
        "#gpu token",
        "gpu token usage",
        "#cpu token",
        "cpu token usage",
        "waiting-image-req",
        "#waiting-image-req",
        "#running-req (mixed)",
    }
)


def _loose(v: str) -> Any:
    """A value for ``extra``: int, float (``%`` stripped), bool, or the text."""
    t = v.rstrip("%").strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t in ("True", "False"):
        return t == "True"
    return v


class BatchLine:
    """One parsed batch line."""

    __slots__ = ("bad", "extra", "iteration", "phase", "unknown", "values")

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.values: list[Any] = [None] * len(COLUMNS)
        self.extra: dict[str, Any] | None = None
        self.unknown: list[str] | None = None
        self.bad: list[str] | None = None
        self.iteration: int | None = None


def parse_batch(msg: str) -> BatchLine | None:
    """``msg`` (after the prefix) → :class:`BatchLine`, or ``None`` if the header is not one.

    >>> b = parse_batch("Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.17, "
    ...                 "accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0, ")
    >>> b.phase, b.values[:4], b.values[6:8], b.values[11], b.extra, b.unknown
    ('decode', [1, 0, 108, 0.0], [2.17, 0.54], True, None, None)
    >>> b = parse_batch("Prefill batch [7], #new-seq: 1, #new-token: 1024, #cached-token: 0, full token usage: 0.01, "
    ...                 "swa token usage: 0.10, #running-req: 0, #queue-req: 0, fwd occupancy: 87.5%, shiny: 3")
    >>> b.iteration, b.values[3], b.values[12], b.extra, b.unknown
    (7, 0.01, 0.1, {'fwd occupancy': 87.5, 'shiny': 3}, ['shiny'])
    >>> parse_batch("Decode batch size is 3") is None
    True
    """
    head = _header(msg)
    if head is None:
        return None
    out, body = head
    body = body.rstrip().rstrip(",")
    if not body:
        return out
    values = out.values
    keys = KEYS
    for part in body.split(", "):
        key, sep, val = part.partition(": ")
        spec = keys.get(key)
        if spec is not None:  # the common case: a clean, known pair
            try:
                values[spec[0]] = spec[1](val)
                continue
            except (ValueError, KeyError):
                pass
        _odd_pair(out, part, key, sep, val)
    return out


def _header(msg: str) -> tuple[BatchLine, str] | None:
    """The batch's phase and iteration (or a mixed batch's running requests), and the
    ``key: value`` pairs after them; None when ``msg`` is no batch line."""
    if msg.startswith("Decode batch"):
        out, rest = BatchLine("decode"), msg[12:]
    elif msg.startswith("Prefill batch"):
        out, rest = BatchLine("prefill"), msg[13:]
    else:
        return None
    if rest.startswith(", ") or rest.startswith(". "):
        return out, rest[2:]
    if rest.startswith(" ["):
        close = rest.find("], ")
        if close < 0 or not rest[2:close].isdigit():
            return None
        out.iteration = int(rest[2:close])
        return out, rest[close + 3 :]
    if rest.startswith("(mixed #running-req: "):
        close = rest.find("). ")
        if close < 0:
            return None
        out.extra = {"#running-req (mixed)": _loose(rest[21:close])}
        return out, rest[close + 3 :]
    return None


def _odd_pair(out: BatchLine, part: str, key: str, sep: str, val: str) -> None:
    """A pair that is not a clean, known one: spaced or without its space, a known key whose
    value does not read (``bad``), a key not known (``extra``, ``unknown``)."""
    if not sep:
        key, sep, val = part.partition(":")
    key = key.strip()
    val = val.strip()
    spec = KEYS.get(key)
    if spec is not None and sep:
        try:
            out.values[spec[0]] = spec[1](val)
            return
        except (ValueError, KeyError):
            if out.bad is None:
                out.bad = []
            out.bad.append(key)
    if out.extra is None:
        out.extra = {}
    out.extra[key] = _loose(val) if sep else None
    if spec is None and key not in KNOWN_EXTRA:
        if out.unknown is None:
            out.unknown = []
        out.unknown.append(key)
