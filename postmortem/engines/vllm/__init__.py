"""vLLM as an engine plug-in: its parser, its lines inside other captures, its names, settings
and event labels.

Modules: :mod:`.parser` (the file parser, registered in the parser registry), :mod:`.stream`
(the message-level parser), :mod:`.lines` (capture wrappers, ANSI, process prefixes, the
envelope), :mod:`.messages` (message patterns), :mod:`.config` (the printed configuration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from .. import Engine, EngineStream, register_engine
from .. import setting as _s

if TYPE_CHECKING:
    from ...parsers.base import ParseContext


@register_engine
class Vllm(Engine):
    name = "vllm"
    label = "vLLM"
    name_hints = ("vllm",)
    #: ``VLLM::EngineCor``, ``VLLM::Worker_TP`` (0.10.1+ process titles; the kernel's 15 bytes)
    process_prefixes = ("vllm",)
    origin = "vllm"
    config_name = "start-up arguments"
    start_markers = ("INFO ", "WARNING ", "ERROR ", "CRITICAL ", "DEBUG ", " pid=")
    parser_modules = ("parser",)
    settings: ClassVar = {
        s.key: s
        for s in (
            _s(
                "gpu_memory_fraction",
                "--gpu-memory-utilization",
                "mem_fraction_static",
                "gpu_memory_utilization",
            ),
            _s("max_running_requests", "--max-num-seqs", "max_running_requests", "max_num_seqs"),
            _s("max_queued_requests", None),
            _s("cuda_graph_max_bs", "--max-seq-len-to-capture", None, "max_seq_len_to_capture"),
            _s(
                "speculative_tokens",
                "--speculative-config num_speculative_tokens",
                "speculative_num_draft_tokens",
            ),
            _s("speculative_steps", None),
            _s("speculative_algorithm", "--speculative-config method", "speculative_algorithm"),
            _s("context_length", "--max-model-len", "context_length", "max_model_len"),
            _s(
                "chunked_prefill_size",
                "--max-num-batched-tokens",
                "chunked_prefill_size",
                "max_num_batched_tokens",
            ),
            _s("disable_cuda_graph", "--enforce-eager", "disable_cuda_graph", "enforce_eager"),
            _s("kv_cache_dtype", "--kv-cache-dtype", "kv_cache_dtype"),
            _s("max_total_tokens", "--kv-cache-memory-bytes", None, "kv_cache_memory_bytes"),
            _s("watchdog_timeout", None),
            _s("tp_size", "--tensor-parallel-size", "tp_size", "tensor_parallel_size"),
            _s("swap_space", "--swap-space", None, "swap_space"),
            _s("cpu_offload", "--cpu-offload-gb", None, "cpu_offload_gb"),
        )
    }
    quiet_kinds = frozenset(
        {"weights_read", "memory_profile", "kv_memory", "max_concurrency", "compile_done", "uvicorn_started"}
    )
    phrases: ClassVar = {"issues": "vLLM's issues"}
    event_labels: ClassVar = {
        "server_args": "vLLM read its configuration",
        "load_weight_begin": "weights loading",
        "load_weight_end": "weights loaded",
        "kv_cache_allocated": "KV cache sized",
        "cuda_graph_begin": "CUDA graph capture started",
        "cuda_graph_end": "CUDA graphs captured",
        "engine_init": "engine initialised",
        "uvicorn_running": "API server starting",
        "ready": "server ready",
        "scheduler_killed": "engine process killed",
        "scheduler_dead": "engine process died",
        "engine_dead": "engine dead",
        "retract": "requests preempted (KV cache full)",
    }

    def parse_args(self, raw: str) -> tuple[dict[str, str], str] | None:
        from .config import parse_config

        got = parse_config(raw)
        if got is None:
            return None
        args, form = got
        return {k: repr(v) if isinstance(v, str) else str(v) for k, v in args.items()}, form

    def looks_like(self, message: str) -> bool:
        from .lines import looks_like_vllm

        return looks_like_vllm(message)

    def new_stream(
        self, ctx: ParseContext, *, host: str | None, unit: str | None, pid: int | None
    ) -> EngineStream:
        from .stream import VllmStream

        return VllmStream(ctx, host=host, unit=unit, pid=pid)
