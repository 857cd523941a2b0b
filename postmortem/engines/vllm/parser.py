"""vLLM server logs, 0.4 → newest, V0 and V1 engines: the file a unit's ``StandardOutput=``
writes, ``docker logs`` (with or without ``-t``), a CRI pod log. Detected from content; records
in the engine-neutral tables with ``engine = 'vllm'`` (see :mod:`.stream`).

>>> from postmortem.parsers.base import run_parser
>>> text = '''INFO 05-25 20:03:11 [api_server.py:1] vLLM API server version 0.8.5
... INFO 05-25 20:03:11 [api_server.py:2] non-default args: {'model': '/m/q', 'tensor_parallel_size': 2}
... (VllmWorker rank=0 pid=7) INFO 05-25 20:04:00 [gpu_model_runner.py:3] Model loading took 15.2 GiB and 40.5 seconds
... INFO:     Application startup complete.
... INFO:     10.0.0.7:51234 - "GET /v1/models HTTP/1.1" 200 OK
... [rank0]:[W525 20:04:01.000000000 ProcessGroupNCCL.cpp:1538] Warning: something'''
>>> from postmortem.parsers.base import ParseContext
>>> out, ctx = run_parser(VllmParser(), text, ParseContext(year=2026))
>>> [getattr(r, "kind", type(r).__name__) for r in out]
['ServerConfig', 'server_args', 'load_weight_end', 'ready', 'HttpRequest']
>>> ctx.parsed_lines, ctx.ignored_lines, out[3].ts_inferred
(5, 1, 'previous')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar

from ...parsers import register
from ...parsers.base import Head, LineChunk, Output, ParseContext, Parser
from .lines import looks_like_vllm, split_line
from .stream import IGNORED, PARSED, VllmStream

__all__ = ["VllmParser", "VllmStream"]


@register
class VllmParser(Parser):
    """vLLM's own log (see the module docstring)."""

    name: ClassVar[str] = "vllm"
    description: ClassVar[str] = (
        "vLLM server log 0.4+ (V0/V1): version, args, startup phases, stats, access log, errors"
    )
    tables: ClassVar[tuple[str, ...]] = (
        "server_configs",
        "server_events",
        "server_stats",
        "http_requests",
        "cuda_ooms",
    )
    appendable: ClassVar[bool] = True

    def sniff(self, head: Head) -> int:
        ours = enveloped = other = 0
        for line in head.lines[:300]:
            if not line.strip():
                continue
            p = split_line(line)
            if p.host is not None:
                other += 1  # a journald line: the journal parser's
                continue
            if looks_like_vllm(line):
                ours += 1
            if p.mmdd is not None or p.uvicorn is not None:
                enveloped += 1
            else:
                other += 1
        if ours and enveloped * 3 >= other:
            return 90 if ours >= 2 else 75
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        stream = VllmStream(ctx)
        out = stream._out
        for chunk in chunks:
            parsed = ignored = 0
            for line_no, line in chunk:
                st = stream.feed_line(line_no, line)
                if st == PARSED:
                    parsed += 1
                elif st == IGNORED:
                    ignored += 1
                else:
                    out.append(ctx.issue(line_no, "line not understood", line))
                if out:
                    yield from out
                    out.clear()
            ctx.parsed(parsed)
            ctx.ignored(ignored)
        yield from stream.close()
