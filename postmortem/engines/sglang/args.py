"""The ``server_args=…`` line: a dataclass repr (≤0.5.18), a dict repr (0.5.19+) or the 0.1.x
``server_args: …`` form, split properly (nested brackets, quoted strings with escapes).

Values are evaluated with :func:`ast.literal_eval` (never ``eval``); what is not a literal
(``<enum …>``, ``SpeculativeAlgorithm.EAGLE``) is kept as its text.
"""

from __future__ import annotations

import ast
from typing import Any

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` on ``sep`` outside brackets and quotes.

    >>> split_top_level("a=1, b='x, y', c=[1, (2, 3)], d={'k': 'v,w'}")
    ['a=1', " b='x, y'", ' c=[1, (2, 3)]', " d={'k': 'v,w'}"]
    >>> split_top_level("s='it\\\\'s, fine', t=2")
    ["s='it\\\\'s, fine'", ' t=2']
    """
    items: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "'" or c == '"':
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == sep and depth == 0:
            items.append(text[start:i])
            start = i + 1
        i += 1
    tail = text[start:]
    if tail.strip():
        items.append(tail)
    return items


def _matching_close(text: str, open_at: int) -> int:
    """Index of the bracket closing the one at ``open_at`` (``-1`` if the text is cut)."""
    depth = 0
    quote = ""
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "'" or c == '"':
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def parse_server_args(text: str) -> tuple[dict[str, str], str] | None:
    """``text`` after ``server_args=`` (or ``server_args: ``) → (field → value text, format).

    Format is ``repr`` (``ServerArgs(…)``), ``dict`` (``{'k': v, …}``) or ``legacy``
    (``k=v, …`` without a wrapper). A cut line keeps the fields before the cut.

    >>> fields, form = parse_server_args("ServerArgs(model_path='/m/x', tp_size=8, bs=[1, 2], port=30000)")
    >>> form, fields["model_path"], fields["bs"], fields["port"]
    ('repr', "'/m/x'", '[1, 2]', '30000')
    >>> parse_server_args("{'model_path': '/m', 'cuda_graph_config': {'max_bs': 8}, 'tp_size': 2}")[0]
    {'model_path': "'/m'", 'cuda_graph_config': "{'max_bs': 8}", 'tp_size': '2'}
    >>> parse_server_args("nonsense") is None
    True
    """
    body = text.strip()
    if body.startswith("ServerArgs("):
        form = "repr"
        open_at = body.index("(")
        sep = "="
    elif body.startswith("{"):
        form = "dict"
        open_at = 0
        sep = ":"
    else:
        form = "legacy"
        open_at = -1
        sep = "="
    if open_at >= 0:
        close = _matching_close(body, open_at)
        inner = body[open_at + 1 : close] if close >= 0 else body[open_at + 1 :]
    else:
        inner = body
    fields: dict[str, str] = {}
    for item in split_top_level(inner):
        key, found, value = item.partition(sep)
        if not found:
            continue
        key = key.strip().strip("'\"")
        if not key or not (key.replace("_", "a").isalnum()):
            continue
        fields[key] = value.strip()
    if not fields:
        return None
    return fields, form


def literal(value: str | None) -> Any:
    """The Python value of a field's text (strings unquoted); non-literals stay text.

    >>> literal("'EAGLE3'"), literal("None"), literal("0.88"), literal("<SpeculativeAlgorithm.EAGLE: 1>")
    ('EAGLE3', None, 0.88, '<SpeculativeAlgorithm.EAGLE: 1>')
    """
    if value is None:
        return None
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and value:
        return as_str(value[0])
    return str(value)


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value in ("True", "true", 1):
        return True
    if value in ("False", "false", 0):
        return False
    return None


def algorithm(value: Any) -> str | None:
    """``'EAGLE3'``, ``SpeculativeAlgorithm.EAGLE3``, ``<SpeculativeAlgorithm.EAGLE3: 3>`` → ``EAGLE3``.

    >>> algorithm("<SpeculativeAlgorithm.NEXTN: 4>"), algorithm("eagle3"), algorithm(None), algorithm("NONE")
    ('NEXTN', 'EAGLE3', None, None)
    """
    text = as_str(value)
    if text is None:
        return None
    text = text.strip("<>").split(":")[0].split(".")[-1].strip()
    if not text or text.upper() in ("NONE", "NULL"):
        return None
    return text.upper()


def cuda_graph_max_bs(fields: dict[str, str]) -> int | None:
    """``cuda_graph_max_bs``, else ``cuda_graph_max_bs_decode`` (0.5.16+), else ``max_bs`` in a
    nested ``cuda_graph_config`` dict."""
    for name in ("cuda_graph_max_bs", "cuda_graph_max_bs_decode"):
        v = as_int(literal(fields.get(name)))
        if v is not None:
            return v
    for name, text in fields.items():
        if "cuda_graph" in name and text.startswith("{"):
            nested = literal(text)
            if isinstance(nested, dict):
                for k in ("max_bs", "max_bs_decode", "cuda_graph_max_bs"):
                    v = as_int(nested.get(k))
                    if v is not None:
                        return v
    return None
