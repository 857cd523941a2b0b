"""vLLM's messages (after the envelope), 0.4 → newest, V0 and V1, as patterns: each names the
``server_events`` kind it becomes, or the record a handler builds. Wordings: the repository's
``docs/inputs.md`` and ``/work/shared/reference/vllm.md`` §2–§7.
"""

from __future__ import annotations

import re

from ...lazyre import lazy_re

#: (kind, pattern) of the startup phases and deaths that become one ``server_events`` row each;
#: the groups ``s`` (seconds), ``gib`` (GiB), ``tokens`` and ``code`` fill its columns
EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, lazy_re(pattern))
    for kind, pattern in (
        (
            "load_weight_begin",
            r"^(?:Starting to load model (?P<model>.+?)\.\.\.|Loading model from scratch\.\.\.)$",
        ),
        (
            "load_weight_end",
            r"^Model loading took (?P<gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<s>[\d.]+) seconds$",
        ),
        ("load_weight_end", r"^Loading model weights took (?P<gib>[\d.]+) GB$"),
        ("weights_read", r"^Loading weights took (?P<s>[\d.]+) seconds$"),
        ("memory_profile", r"^Memory profiling takes (?P<s>[\d.]+) seconds"),
        ("kv_memory", r"^Available KV cache memory: (?P<gib>[\d.]+) GiB$"),
        (
            "kv_cache_allocated",
            r"^(?:GPU|[A-Z]+)(?: \+ host)? KV cache size: (?P<tokens>[\d,]+) tokens"
            r"(?:, Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<conc>[\d.]+)x)?$",
        ),
        (
            "kv_cache_allocated",
            r"^# (?:GPU|CUDA|cuda) blocks: (?P<blocks>\d+)(?:, # CPU blocks: (?P<cpu>\d+))?$",
        ),
        (
            "max_concurrency",
            r"^Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<conc>[\d.]+)x$",
        ),
        ("compile_done", r"^(?:\[[^\]]+\] )?torch\.compile (?:takes|took) (?P<s>[\d.]+) s in total$"),
        ("cuda_graph_begin", r"^(?:Capturing the model for CUDA graphs|Capturing cudagraphs for decoding)\."),
        (
            "cuda_graph_end",
            r"^Graph capturing finished in (?P<s>\d+) secs(?:, took (?P<gib>-?[\d.]+) GiB|\.)$",
        ),
        (
            "engine_init",
            r"^init engine \(profile, create kv cache, warmup model\) took (?P<s>[\d.]+) (?:seconds|s)"
            r"(?: \(compilation: (?P<compile>[\d.]+) s.*\))?$",
        ),
        ("uvicorn_running", r"^Starting vLLM (?:API )?server (?:\d+ )?on (?P<addr>\S+)$"),
        ("kv_oom", r"No available memory for the cache blocks\."),
        (
            "kv_oom",
            r"(?:The model's max seq len \(\d+\) is larger than the maximum number of tokens that can be "
            r"stored in KV cache|To serve at least one request with the models?'s max seq len)",
        ),
        (
            "not_enough_memory",
            r"Free memory on device (?:\S+ )?\([\d.]+/[\d.]+ GiB\) on startup is less than",
        ),
        ("not_enough_memory", r"^Failed to load model - not enough GPU memory\."),
        ("not_enough_memory", r"Error in memory profiling\."),
        ("scheduler_dead", r"^Worker (?P<name>\S+) pid (?P<pid>\d+) died, exit code: (?P<code>-?\d+)$"),
        (
            "scheduler_dead",
            r"^Worker proc (?P<name>\S+) died unexpectedly(?: \(exit code: (?P<code>-?\d+|None)\))?, "
            r"shutting down executor\.$",
        ),
        (
            "scheduler_dead",
            r"^(?:Engine core proc (?P<name>\S+) died unexpectedly, shutting down client\.|"
            r"(?:RuntimeError: )?Engine core process (?P<name2>\S+) died unexpectedly\.)$",
        ),
        (
            "scheduler_dead",
            r"Process (?P<name>\S+) \(PID: (?P<pid>\d+)\) died with exit code (?P<code>-?\d+)",
        ),
        (
            "initialization_failed",
            r"Engine core initialization failed\. See root cause above\.(?: Failed core proc\(s\): (?P<procs>\{.*\}))?",
        ),
        ("initialization_failed", r"^(?:EngineCore|WorkerProc) failed to start\.$"),
        ("exception", r"^(?:EngineCore encountered a fatal error|WorkerProc hit an exception)\.?"),
        ("exception", r"^EngineCore hit an exception"),
        ("exception", r"^(?:AsyncLLM output_handler failed\.|EngineCore output handler hit an error)"),
        (
            "engine_dead",
            r"(?:EngineDeadError|AsyncEngineDeadError|MQEngineDeadError)\b|"
            r"Engine loop is not running\.|Background loop (?:has errored already|is stopped)\.",
        ),
        (
            "forced_exit",
            r"^(?:AsyncLLMEngine has failed|AsyncLLMEngine is already dead|MQLLMEngine is already dead), "
            r"terminating server process$|^Got fatal signal from worker processes, shutting down\.",
        ),
    )
)

#: a vLLM version: the API server's line, the banner's, or the engine line's
VERSION_RE = lazy_re(
    r"^vLLM (?:API server version (?P<v1>\S+)|server version (?P<v2>\S+), serving model (?P<model>\S+))$"
)
BANNER_VERSION_RE = lazy_re(r"\sversion\s+(?P<v>\d+\.\d+\S*)\s*$")
ARGS_OLD_RE = lazy_re(r"^args: Namespace\((?P<args>.*)\)$")
ARGS_NEW_RE = lazy_re(r"^non-default args: (?P<args>\{.*\})$")
ENGINE_INIT_RE = lazy_re(
    r"^Initializing an? (?:(?P<engine>V0|V1) )?LLM engine \(v(?P<version>[^)]+)\) with config: (?P<config>.*)$"
)
#: the periodic statistics, V0 (one shape) and V1 (``, ``-joined parts, any order)
V0_STATS_RE = lazy_re(
    r"^Avg prompt throughput: (?P<prompt_tps>[\d.]+) tokens/s, Avg generation throughput: "
    r"(?P<gen_tps>[\d.]+) tokens/s, Running: (?P<running>\d+) reqs, Swapped: (?P<swapped>\d+) reqs, "
    r"Pending: (?P<pending>\d+) reqs, GPU KV cache usage: (?P<gpu_kv>[\d.]+)%, CPU KV cache usage: "
    r"(?P<cpu_kv>[\d.]+)%\.?$"
)
V1_HEAD_RE = lazy_re(
    r"^(?:Engine (?P<engine>\d{3}): |(?P<n_engines>\d+) Engines Aggregated: )?(?P<body>(?:Avg prompt throughput|Running): .*)$"
)
V1_PART_RE = lazy_re(r"^(?P<key>[A-Za-z][A-Za-z /-]*?): (?P<val>-?[\d.]+)(?P<unit>%| tokens/s| reqs)?$")
PREFIX_HIT_V0_RE = lazy_re(r"^Prefix cache hit rate: GPU: (?P<gpu>[\d.]+)%, CPU: (?P<cpu>[\d.]+)%$")
#: speculative decoding (V0 and V1 shapes)
SPEC_V0_RE = lazy_re(
    r"^Speculative metrics: Draft acceptance rate: (?P<rate>[\d.]+|nan), System efficiency: "
    r"(?P<eff>[\d.]+|nan), Number of speculative tokens: (?P<k>\d+), Number of accepted tokens: "
    r"(?P<accepted>\d+), Number of draft tokens(?: tokens)?: (?P<drafted>\d+)"
)
SPEC_V1_MAL_RE = lazy_re(r"Mean acceptance length: (?P<mal>[\d.]+|nan)")
SPEC_V1_RATE_RE = lazy_re(r"(?:Avg )?Draft acceptance rate: (?P<rate>[\d.]+|nan)%")
SPEC_V1_POS_RE = lazy_re(r"Per-position acceptance rate: (?P<pos>(?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)")
PREEMPT_RE = lazy_re(
    r"^Sequence group (?P<req>\S+) is preempted by PreemptionMode\.(?P<mode>RECOMPUTE|SWAP) mode because "
    r"there is not enough KV cache space\..*total_num_cumulative_preemption=(?P<total>\d+)$"
)
#: uvicorn's own lines (no time: they take the previous line's)
ACCESS_RE = lazy_re(
    r'^(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/(?P<http>[\d.]+)" (?P<status>\d{3})(?: .*)?$'
)
UVICORN_KINDS = {
    "Application startup complete.": "ready",
    "Started server process": "uvicorn_started",
    "Shutting down": "uvicorn_shutdown",
    "Finished server process": "uvicorn_finished",
}
#: third-party lines a vLLM log interleaves (kept as data, not parse issues)
FOREIGN_RE = lazy_re(
    r"^(?:\[rank\d+\]:|\[Gloo\]|NCCL |[\w.-]+:\d+:\d+ \[\d+\] NCCL |flashinfer|\[W\d{3,4} |"
    r"Traceback \(most recent call last\):|Process [\w-]+:$|  File \"|    |[\w.]+(?:Error|Exception|Warning)\b|"
    r"Loading safetensors checkpoint shards|Capturing CUDA graph|Capturing CUDA graphs|Route: |"
    r"Available routes are:|.*\d+%\|)"
)
