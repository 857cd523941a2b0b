"""vLLM's printed configuration → settings: ``non-default args: {…}`` (0.9+, a dict repr),
``args: Namespace(…)`` (≤0.8) and ``Initializing a V1 LLM engine (v…) with config: k=v, …``.

>>> parse_config("{'model': '/m/llama', 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.92}")[0]['tensor_parallel_size']
8
>>> args, form = parse_config("host=None, port=8000, model='/m', speculative_config=SpeculativeConfig(method='eagle3', num_spec_tokens=3)")
>>> form, args['port'], args['model'], args['speculative_config'][:25]
('keywords', 8000, '/m', 'SpeculativeConfig(method=')
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any


def _split_top(text: str) -> list[str]:
    """``text`` cut at the commas outside brackets and quotes."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0
    for i, c in enumerate(text):
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_config(text: str) -> tuple[dict[str, Any], str] | None:
    """(setting → value, form) of a printed configuration: a dict literal (``dict``) or
    ``key=value`` pairs (``keywords``); ``None`` when it is neither."""
    text = text.strip()
    if text.startswith("{"):
        value = _value(text)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}, "dict"
        try:
            loaded = json.loads(text)
        except ValueError:
            return None
        return ({str(k): v for k, v in loaded.items()}, "dict") if isinstance(loaded, dict) else None
    out: dict[str, Any] = {}
    for part in _split_top(text):
        key, sep, value = part.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][\w.]*", key.strip()):
            out[key.strip()] = _value(value.strip())
    return (out, "keywords") if out else None


def _spec_of(value: Any) -> dict[str, Any]:
    """A speculative configuration (a dict, JSON text, or ``SpeculativeConfig(k=v, …)``)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            got = parse_config(text)
            return got[0] if got else {}
        m = re.match(r"^\w*\((?P<body>.*)\)$", text, re.S)
        if m:
            got = parse_config(m.group("body"))
            return got[0] if got else {}
    return {}


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.replace(",", "").isdigit():
        return int(v.replace(",", ""))
    return None


def _float(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(v) if isinstance(v, str) else None
    except ValueError:
        return None


def _str(v: Any) -> str | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v) or None
    s = str(v)
    return s if s and s != "None" else None


def settings(args: dict[str, Any]) -> dict[str, Any]:
    """The ``server_configs`` columns a vLLM configuration fills (engine-neutral names)."""
    spec = _spec_of(args.get("speculative_config"))
    method = _str(spec.get("method")) or (_str(args.get("speculative_model")) and "draft_model")
    draft = _str(spec.get("model")) or _str(args.get("speculative_model"))
    tokens = _int(spec.get("num_speculative_tokens") or spec.get("num_spec_tokens"))
    tokens = tokens if tokens is not None else _int(args.get("num_speculative_tokens"))
    eager = args.get("enforce_eager")
    return {
        "model_path": _str(args.get("model") or args.get("model_tag")),
        "served_model_name": _str(args.get("served_model_name")),
        "tp_size": _int(args.get("tensor_parallel_size")),
        "dp_size": _int(args.get("data_parallel_size")),
        "pp_size": _int(args.get("pipeline_parallel_size")),
        "mem_fraction_static": _float(args.get("gpu_memory_utilization")),
        "speculative_algorithm": method.upper() if method else None,
        "speculative_draft_model_path": draft,
        "speculative_num_draft_tokens": tokens,
        "max_running_requests": _int(args.get("max_num_seqs")),
        "context_length": _int(args.get("max_model_len") or args.get("max_seq_len")),
        "chunked_prefill_size": _int(args.get("max_num_batched_tokens")),
        "port": _int(args.get("port")),
        "quantization": _str(args.get("quantization")),
        "kv_cache_dtype": _str(args.get("kv_cache_dtype")),
        "disable_cuda_graph": eager if isinstance(eager, bool) else None,
    }
