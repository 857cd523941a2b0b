"""Regexes for SGLang's own messages (applied after the prefix), by family.

Each is tried only after a cheap ``startswith``/``in`` test in :mod:`.stream`.
"""

from __future__ import annotations

from ...lazyre import lazy_re
from ..pytext import EXCEPTION_LINE as EXCEPTION_LINE  # (the stream reads them here, as M.*)
from ..pytext import TRACEBACK as TRACEBACK

NUM = r"-?\d+(?:\.\d+)?"

# --- startup --------------------------------------------------------------------------------
INIT_DIST_END = lazy_re(
    rf"Init (?:torch distributed|nccl) ends\.(?: elapsed=(?P<elapsed>{NUM}) s,)?(?: mem usage=(?P<usage>{NUM}) GB)?"
)
LOAD_BEGIN = lazy_re(rf"Load weight begin\. avail mem=(?P<avail>{NUM}) GB")
LOAD_END = lazy_re(
    rf"Load weight end\. (?:elapsed=(?P<elapsed>{NUM}) s, )?type=(?P<type>[^,]+), "
    rf"(?:dtype=(?P<dtype>[^,]+), )?(?P<quant>quant=[^,]+(?:, (?!avail mem=)[\w]+=[^,]+)*, )?"
    rf"avail mem=(?P<avail>{NUM}) GB(?:, mem usage=(?P<usage>{NUM}) GB)?\.?$"
)
LOAD_END_DEFERRED = lazy_re(
    rf"Load weight end\. Committed real weights after CUDA graph capture in (?P<elapsed>{NUM}) s"
    rf"(?: \(capture overlap window (?P<overlap>{NUM}) s, startup overlap total (?P<total>{NUM}) s\))?"
)
#: class-name suffixes of draft models (EAGLE, EAGLE-3, NextN/MTP, DSpark)
DRAFT_CLASS = lazy_re(r"(?:Eagle3?|NextN|MTP|DSpark|Draft|Medusa)\w{0,8}$")
KV_ALLOC = lazy_re(
    rf"(?:(?P<label>[\w-]+(?: [\w-]+)?) )?KV Cache (?P<what>is allocated|VA upper bound)\."
    rf"(?: dtype: (?P<dtype>[^,]+),)?(?: #tokens: (?P<tokens>[\d,]+),)? "
    rf"(?:K size: (?P<k>{NUM}) GB, V size: (?P<v>{NUM}) GB|KV size: (?P<kv>{NUM}) GB)"
    rf"(?:, avail mem=(?P<avail>{NUM}) GB)?\.?$"
)
POST_CAPTURE_KV = lazy_re(
    rf"Post-capture KV sizing: KV cache allocated\. dtype: (?P<dtype>[^,]+), #tokens: (?P<tokens>\d+), "
    rf"KV size: (?P<kv>{NUM}) GB, avail mem=(?P<avail>{NUM}) GB"
)
#: HiCache's host pool, one line per rank: ``Allocating 117.00 GB host memory for hierarchical KV cache.``
HICACHE_ALLOC = lazy_re(r"Allocating (?P<gb>\d+(?:\.\d+)?) GB host memory for hierarchical KV cache")
MEM_POOL_END = lazy_re(rf"Memory pool end\. avail mem=(?P<avail>{NUM}) GB")
PROFILED = lazy_re(
    r"max_total_tokens=(?P<req>\d+) is larger than the profiled value (?P<prof>-?\d+)\. "
    r"Use the profiled value instead\."
)
_G = r"(?:cuda|cpu|npu|musa|xpu|CUDA|CPU|NPU|MUSA|XPU) graph"
GRAPH_BEGIN_OLD = lazy_re(
    rf"Capture (?P<what>(?:draft (?:extend )?)?{_G}|piecewise {_G}) begin(?: \(step (?P<step>\d+)\))?\."
    rf"(?: This can take up to several minutes\.)?(?: avail mem=(?P<avail>{NUM}) GB)?$"
)
GRAPH_END_OLD = lazy_re(
    rf"Capture (?P<what>(?:draft (?:extend )?)?{_G}|piecewise {_G}) end(?: \(step (?P<step>\d+)\))?\. "
    rf"Time elapsed: (?P<elapsed>{NUM}) s"
    rf"(?:\. (?:mem usage=(?P<usage>{NUM}) GB\. avail mem=(?P<avail>{NUM}) GB"
    rf"|avail mem=(?P<avail2>{NUM}) GB\. mem usage=(?P<usage2>{NUM}) GB))?\.?$"
)
GRAPH_BEGIN_NEW = lazy_re(
    rf"Capture (?P<role>target|draft) (?P<graph>\w+) (?P<label>\S+ graph) begin\. (?P<args>backend=.*?)"
    rf"(?:,? ?avail mem=(?P<avail>{NUM}) GB)?$"
)
GRAPH_END_NEW = lazy_re(
    rf"Capture (?P<role>target|draft) (?P<graph>\w+) (?P<label>\S+ graph) end\. (?:bs=(?P<bs>\[[^\]]*\]), )?"
    rf"elapsed=(?P<elapsed>{NUM}) s(?:, mem usage=(?P<usage>{NUM}) GB)?(?:, avail mem=(?P<avail>{NUM}) GB)?\.?$"
)
GRAPH_FAILED = lazy_re(r"(?i)Capture (?:cuda|cpu|npu) graph failed")
#: ``max_total_num_tokens=N[, chunked_prefill_size=…][, max_prefill_tokens=…]…[, available_gpu_mem=X GB]``
LIMITS_PAIR = lazy_re(r"(\w+)=(-?[\d.]+|None)(?: GB)?(?:, |$)")
STARTUP_TIMINGS = lazy_re(r"Engine startup timings \(s\): (?P<body>.*)$")
_TIMING_PAIR = lazy_re(r"(\w+)=(\{[^}]*\}|[-\d.]+)")
READY = "The server is fired up and ready to roll!"

# --- uvicorn ----------------------------------------------------------------------------------
UVICORN_LEVELS = ("INFO:", "WARNING:", "ERROR:", "DEBUG:", "CRITICAL:", "TRACE:")
ACCESS = lazy_re(
    r'(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/(?P<http>[\d.]+)" (?P<status>\d{3})'
)
UVICORN_RUNNING = lazy_re(
    r"Uvicorn running on (?P<url>\S+?)(?: \(Press CTRL\+C to quit\)| with (?P<n>\d+) SO_REUSEPORT workers)?$"
)
UVICORN_PROCESS = lazy_re(r"(?P<what>Started|Finished) server process \[(?P<pid>\d+)\]")
HEALTH_FAILED = lazy_re(
    r"Health check failed\. Server couldn't get a response from detokenizer for last (?P<s>\d+) seconds"
)

# --- errors -----------------------------------------------------------------------------------
HIT_EXCEPTION = lazy_re(r"(?P<who>\w+) hit an exception: ?(?P<tb>.*)$")
EXCEPTION_OLD = lazy_re(r"Exception in (?P<who>\w+):(?P<rest>.*)$")
RETRACT = lazy_re(
    r"(?:KV cache pool is full\. Retract requests\.|Testing retraction\.|Decode out of memory happened\.|"
    r"decode out of memory happened,) #retracted_reqs: (?P<n>\d+)(?:, #new_tokens_gained: (?P<gained>\d+))?"
    r"(?:, #mamba_num_gained: (?P<mamba>\d+))?(?:, #new_token_ratio: (?P<old>[\d.]+) -> (?P<new>[\d.]+))?"
)
NOT_ENOUGH_MEMORY = lazy_re(
    r"Not enough memory\. Please try to increase --mem-fraction-static\."
    r"(?: Current value: (?:self\.server_args\.)?mem_fraction_static=(?P<mfs>[\d.]+))?"
)
SIGQUIT_RUNNING = lazy_re(
    r"SIGQUIT received\. signum=(?P<signum>\S+), frame=(?P<frame>.*?)\. It usually means one child failed\."
)
SIGTERM = lazy_re(r"SIGTERM received\. signum=(?P<signum>\S+) frame=")
GRACEFUL_EXIT = lazy_re(r"Gracefully exiting\.\.\. [Rr]emaining number of requests:? ?(?P<n>\d+)")
SUBPROCESS_CRASH = lazy_re(
    r"Subprocess (?P<name>\S+) \(pid=(?P<pid>\d+)\) crashed with exit code (?P<code>-?\d+)"
)
RANK_DEAD_OLD = lazy_re(r"Rank (?P<rank>\d+) scheduler is dead\.")
EXIT_CODE = lazy_re(r"Exit code: (?P<code>-?\d+)$")
RANK_DIED_NEW = lazy_re(
    r"Rank (?P<rank>\d+) scheduler died during initialization \(exit code: (?P<code>-?\d+)\)"
)
PROC_TERMINATED = lazy_re(r"Scheduler or DataParallelController (?P<pid>\d+) terminated with (?P<code>-?\d+)")
KILL_TREE = lazy_re(
    r"kill_process_tree called: parent_pid=(?P<ppid>\S+), include_parent=(?P<inc>\S+), pid=(?P<pid>\d+)"
)
WATCHDOG_OLD = lazy_re(r"Watchdog timeout \(self\.watchdog_timeout=(?P<t>[\d.]+)\)")
WATCHDOG_NEW = lazy_re(
    r"(?P<who>\w+) watchdog timeout \(self\.watchdog_timeout=(?P<t>[\d.]+), self\.soft=(?P<soft>True|False)\)"
)
ALLOC_REQ_SLOTS = "alloc_req_slots runs out of memory"
UNBALANCED = "The memory capacity is unbalanced."

# --- tracebacks -------------------------------------------------------------------------------
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
FRAME = lazy_re(r'\s*File "(?P<path>[^"]*)", line \d+, in (?P<func>\S+)')


def timings(body: str) -> dict[str, object]:
    """``load_weight=12.02, …, cuda_graph={prefill=22.96, decode=12.26}, …`` → a dict (seconds).

    >>> timings("load_weight=4.08, cuda_graph={decode=42.70}")
    {'load_weight': 4.08, 'cuda_graph': {'decode': 42.7}}
    """
    out: dict[str, object] = {}
    for key, value in _TIMING_PAIR.findall(body):
        if value.startswith("{"):
            out[key] = {k: float(v) for k, v in _TIMING_PAIR.findall(value[1:-1]) if not v.startswith("{")}
        else:
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out
