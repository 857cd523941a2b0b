"""SGLang server logs, versions 0.1–0.5.x.

One text stream from several processes (main: engine, tokenizer manager, uvicorn; one
scheduler per GPU rank; detokenizer). Tables (engine ``sglang``): ``server_configs`` (the
``server_args`` line), ``server_events`` (startup phases, readiness, errors, signals, deaths),
``server_stats`` (``Prefill batch``/``Decode batch`` statistics), ``http_requests`` (uvicorn access lines) and
``cuda_ooms`` (PyTorch CUDA OOM sizes). Kinds, columns and units: ``docs/schema_parts/servers.md``.

Other parsers call the message-level API: :func:`looks_like_sglang` and :class:`SglangStream`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

from ...parsers import register
from ...parsers.base import Head, LineChunk, Output, ParseContext, Parser, TableBatch
from ...timeutil import UTC, Inferred
from .prefix import LEGACY_GPU_RE, PREFIX_RE, looks_like_sglang, strip_wrappers
from .stream import IGNORED, PARSED, SglangStream

if TYPE_CHECKING:
    from .fast import FastRows

__all__ = ["SglangParser", "SglangStream", "looks_like_sglang"]

#: chunks smaller than this go through the Python path only (tests, small files); the
#: vectorised path (numpy, pyarrow.compute) is imported when the first large chunk comes
FAST_MIN_LINES = 2048

_STRONG = (
    "server_args=",
    "server_args: ",
    "Load weight begin",
    "Load weight end",
    "Init torch distributed",
    "Init nccl",
    "KV Cache is allocated",
    "Memory pool end",
    "Capture cuda graph",
    "Capture target ",
    "Capture draft ",
    "Decode batch",
    "Prefill batch",
    "max_total_num_tokens=",
    "The server is fired up",
    "Engine startup timings",
    "Scheduler hit an exception",
    "TpModelWorkerClient hit an exception",
    "DataParallelController hit an exception",
    "DetokenizerManager hit an exception",
    "TokenizerManager hit an exception",
    "Received sigquit",
    "SIGQUIT received",
)


@register
class SglangParser(Parser):
    """SGLang's own log (a unit's ``StandardOutput=`` file, ``docker logs``, a terminal capture).

    >>> from postmortem.parsers.base import run_parser
    >>> text = '''[2026-01-15 10:00:00] server_args=ServerArgs(model_path='/models/demo-7b', tp_size=4, port=30000)
    ... [2026-01-15 10:00:06 TP0] Load weight begin. avail mem=77.43 GB
    ... [2026-01-15 10:01:15 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=40.69 GB, mem usage=36.73 GB.
    ... [2026-01-15 10:01:47] The server is fired up and ready to roll!
    ... [2026-01-15 11:00:00 TP0] Decode batch, #running-req: 62, #token: 167777, token usage: 0.81, cuda graph: True, gen throughput (token/s): 896.73, #queue-req: 2'''
    >>> out, ctx = run_parser(SglangParser(), text)
    >>> [(type(r).__name__, getattr(r, "kind", None)) for r in out]  # doctest: +NORMALIZE_WHITESPACE
    [('ServerConfig', None), ('ServerEvent', 'server_args'), ('ServerEvent', 'load_weight_begin'),
     ('ServerEvent', 'load_weight_end'), ('ServerEvent', 'ready'), ('ServerStats', None)]
    >>> out[0].model_path, out[0].tp_size, out[0].port, out[3].mem_usage_gb, out[5].token_usage
    ('/models/demo-7b', 4, 30000, 36.73, 0.81)
    >>> out[3].ts.isoformat(), out[3].ts_inferred, ctx.parsed_lines
    ('2026-01-15T10:01:15+00:00', 'zone', 5)
    """

    name: ClassVar[str] = "sglang"
    description: ClassVar[str] = (
        "SGLang server log 0.1–0.5.x: server_args, startup phases, batch stats, access log, errors"
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
        strong = prefixed = other = 0
        for line in head.lines[:300]:
            if not line.strip():
                continue
            text = line.rsplit("\r", 1)[-1] if "\r" in line else line
            if text[:1] != "[":
                w = strip_wrappers(text)
                if w.host is not None:  # a journald line: the journal parser's
                    other += 1
                    continue
                text = w.rest
            m = PREFIX_RE.match(text) or LEGACY_GPU_RE.match(text)
            if m is not None:
                prefixed += 1
                if text[m.end() :].startswith(_STRONG):
                    strong += 1
            elif text.startswith(("server_args=ServerArgs(", "server_args={")):
                strong += 1
                prefixed += 1
            else:
                other += 1
                # a crash tail (a traceback through SGLang's server code, ``docker logs`` of a
                # dead container): SGLang's, whatever the prefixes that survived
                if text.lstrip().startswith('File "') and "/sglang/srt/" in text:
                    strong += 1
        if strong and prefixed * 4 >= other:
            return 90 if strong >= 2 else 80
        if strong:
            return 60
        if prefixed >= 3 and prefixed * 2 >= other:
            return 45
        return 0

    def parse(self, chunks: Iterable[LineChunk], ctx: ParseContext) -> Iterator[Output]:
        stream = SglangStream(ctx, strict=True)
        out = stream._out
        feed = stream.feed_line
        zone_key = getattr(ctx.zone, "key", None)
        fast_ok = ctx.options.get("sglang_fast", "1") != "0" and (zone_key is not None or ctx.zone is UTC)
        flag = Inferred.ZONE  # zone-less stamps, read in a zone given or assumed
        for chunk in chunks:
            fr = None
            if fast_ok and len(chunk) >= FAST_MIN_LINES:
                from .fast import fast_rows

                fr = fast_rows(chunk, zone_key=zone_key, ts_inferred=flag, host=stream.host, unit=stream.unit)
            if fr is None:
                parsed = ignored = 0
                for line_no, line in chunk:
                    st = feed(line_no, line, None, None, None, None, None, None)
                    if st == PARSED:
                        parsed += 1
                    elif st == IGNORED:
                        ignored += 1
                    if out:
                        yield from out
                        out.clear()
                ctx.parsed(parsed)
                ctx.ignored(ignored)
                continue
            yield from self._mixed(chunk, fr, stream, ctx)
        yield from stream.close()

    @staticmethod
    def _mixed(chunk: LineChunk, fr: FastRows, stream: SglangStream, ctx: ParseContext) -> Iterator[Output]:
        """One chunk: the vectorised rows where the stream is idle, the Python path elsewhere."""
        import numpy as np

        out = stream._out
        feed = stream.feed_line
        n = len(fr.mask)
        base = chunk.first_line_no
        mask = fr.mask
        taken = np.zeros(n, dtype=bool)
        slow = np.flatnonzero(~mask)
        line = chunk.line
        parsed = ignored = 0

        pos = 0
        for k in range(len(slow) + 1):
            sp = int(slow[k]) if k < len(slow) else n
            i = pos
            while i < sp and not stream.accepts_fast_lines:
                st = feed(base + i, line(i), None, None, None, None, None, None)
                if st == PARSED:
                    parsed += 1
                elif st == IGNORED:
                    ignored += 1
                if out:
                    yield from out
                    out.clear()
                i += 1
            if i < sp:
                taken[i:sp] = True
                parsed += sp - i
                stream.note_time(fr.ts_at(sp - 1), None)
            if sp < n:
                st = feed(base + sp, line(sp), None, None, None, None, None, None)
                if st == PARSED:
                    parsed += 1
                elif st == IGNORED:
                    ignored += 1
                if out:
                    yield from out
                    out.clear()
            pos = sp + 1
        ctx.parsed(parsed)
        ctx.ignored(ignored)
        for table, data in fr.tables(taken):
            yield TableBatch(table, data)
