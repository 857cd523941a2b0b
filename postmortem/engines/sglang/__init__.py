"""SGLang as an engine plug-in: its parser, its lines inside other captures, its names,
settings and event labels.

Modules: :mod:`.parser` (the file parser, registered in the parser registry), :mod:`.stream`
(the message-level parser), :mod:`.prefix` (line prefixes and capture wrappers), :mod:`.fast`
and :mod:`.kernels` (the vectorised path), :mod:`.args` (``server_args``), :mod:`.batch`,
:mod:`.messages` (PyTorch's CUDA OOM text: :mod:`postmortem.engines.torch_oom`, shared by every engine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .. import Engine, EngineStream, register_engine
from .. import setting as _s

if TYPE_CHECKING:
    from ...parsers.base import ParseContext


@register_engine
class SGLang(Engine):
    name = "sglang"
    label = "SGLang"
    name_hints = ("sglang",)
    process_prefixes = ("sglang",)
    origin = "sglang"
    config_name = "`server_args`"
    #: a line that can start an SGLang stream has its ``[`` prefix, a tqdm ``\r`` or the
    #: configuration line (what :func:`.prefix.looks_like_sglang` needs)
    start_markers = ("[", "\r", "server_args=")
    parser_modules = ("parser",)
    settings: ClassVar = {
        s.key: s
        for s in (
            _s("gpu_memory_fraction", "--mem-fraction-static", "mem_fraction_static"),
            _s("max_running_requests", "--max-running-requests", "max_running_requests"),
            _s("max_queued_requests", "--max-queued-requests", None, "max_queued_requests"),
            _s("cuda_graph_max_bs", "--cuda-graph-max-bs", "cuda_graph_max_bs"),
            _s("speculative_tokens", "--speculative-num-draft-tokens", "speculative_num_draft_tokens"),
            _s("speculative_steps", "--speculative-num-steps", "speculative_num_steps"),
            _s("speculative_algorithm", "--speculative-algorithm", "speculative_algorithm"),
            _s("context_length", "--context-length", "context_length"),
            _s("chunked_prefill_size", "--chunked-prefill-size", "chunked_prefill_size"),
            _s("disable_cuda_graph", "--disable-cuda-graph", "disable_cuda_graph"),
            _s("kv_cache_dtype", "--kv-cache-dtype", "kv_cache_dtype"),
            _s("max_total_tokens", "--max-total-tokens", "max_total_tokens"),
            _s("watchdog_timeout", "--watchdog-timeout", "watchdog_timeout"),
            _s("tp_size", "--tp-size", "tp_size"),
        )
    }
    quiet_kinds = frozenset(
        {"memory_pool_end", "limits", "init_dist_begin", "init_dist_end", "graph_bs", "uvicorn"}
    )
    phrases: ClassVar = {
        "watchdog": "SGLang's --watchdog-timeout",
        "busy_gpu_error": "SGLang's 'memory capacity is unbalanced'",
        "issues": "SGLang's issues",
    }
    event_labels: ClassVar = {
        "server_args": "SGLang read its configuration",
        "load_weight_begin": "weights loading",
        "load_weight_end": "weights loaded",
        "kv_cache_allocated": "KV cache allocated",
        "cuda_graph_begin": "CUDA graph capture started",
        "cuda_graph_end": "CUDA graphs captured",
        "uvicorn_running": "HTTP server listening",
        "ready": "server ready",
        "startup_timings": "startup timings",
    }

    def parse_args(self, raw: str) -> tuple[dict[str, str], str] | None:
        from .args import parse_server_args

        return parse_server_args(raw)

    def looks_like(self, message: str) -> bool:
        from .prefix import looks_like_sglang

        return "server_args=" in message or looks_like_sglang(message)

    def new_stream(
        self, ctx: ParseContext, *, host: str | None, unit: str | None, pid: int | None
    ) -> EngineStream:
        from .stream import SglangStream

        return SglangStream(ctx, host=host, unit=unit, pid=pid)

    def fast_messages(self) -> Any:
        from . import fast

        return fast
