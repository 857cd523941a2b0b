"""SGLang parser: prefixes, server_args, startup phases, batches, access log, errors, CUDA OOMs,
the message-level stream API, detection and the real samples that carry SGLang lines.

Golden cases live in tests/data/sglang/ (one file per SGLang generation plus errors, CUDA OOM
generations and capture wrappers); service_loads tests are in test_sglang_loads.py.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    DATA,
    REAL_SAMPLES,
    check_accounting,
    count_lines,
    issues_of,
    needs_real_samples,
    parse_text,
    records_of,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.engines.sglang.args import parse_server_args
from postmortem.engines.sglang.prefix import looks_like_sglang
from postmortem.engines.sglang.stream import SglangStream
from postmortem.engines.torch_oom import parse_oom
from postmortem.parsers import detect, get_parser
from postmortem.parsers.base import Head, ParseContext, ParseIssue
from postmortem.records import CudaOom, HttpRequest, ServerConfig, ServerEvent, ServerStats
from postmortem.store.db import Store
from postmortem.timeutil import get_zone

FIXTURES = DATA / "sglang"


def parse(text: str, **ctx: Any) -> tuple[list[Any], ParseContext]:
    ctx.setdefault("tz", "UTC")
    out, c = parse_text("sglang", text, **ctx)
    check_accounting(c, out, count_lines(text.encode()))
    return out, c


def events(out: list[Any], kind: str | None = None) -> list[ServerEvent]:
    evs = records_of(out, ServerEvent)
    return [e for e in evs if kind is None or e.kind == kind]


def one(out: list[Any], kind: str) -> ServerEvent:
    found = events(out, kind)
    assert len(found) == 1, [e.kind for e in events(out)]
    return found[0]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --------------------------------------------------------------------------- prefixes and time


def test_full_date_prefix_in_the_given_zone() -> None:
    out, _ = parse("[2025-11-03 14:00:00 TP0] Load weight begin. avail mem=78.02 GB\n", tz="Europe/Berlin")
    e = one(out, "load_weight_begin")
    assert e.ts == utc("2025-11-03T13:00:00")
    # a zone-less stamp: read in the zone given, and flagged as such (NULL is for absolute instants)
    assert (e.ts_raw, e.ts_inferred, e.ranks, e.avail_mem_gb) == ("2025-11-03 14:00:00", "zone", "TP0", 78.02)


def test_zone_not_given_is_flagged() -> None:
    out, _ = parse_text("sglang", "[2025-11-03 14:00:00] The server is fired up and ready to roll!\n")
    assert one(out, "ready").ts_inferred == "zone"


def test_milliseconds_and_rank_order() -> None:
    out, _ = parse("[2026-01-15 10:00:00.123 EP1 TP3 DP1] Memory pool end. avail mem=9.50 GB\n")
    e = one(out, "memory_pool_end")
    assert e.ts == utc("2026-01-15T10:00:00.123000")
    assert e.ranks == "DP1 TP3 EP1"


def test_time_only_prefix_takes_the_date_from_mtime_and_rolls_over() -> None:
    text = "[23:59:58 TP0] Load weight begin. avail mem=1.00 GB\n[00:00:03 TP0] Memory pool end. avail mem=0.50 GB\n"
    out, _ = parse(text, mtime="2025-03-02T01:00:00+00:00")
    a, b = events(out)
    assert a.ts == utc("2025-03-01T23:59:58")
    assert b.ts == utc("2025-03-02T00:00:03")
    assert a.ts_inferred == b.ts_inferred == "date"


def test_time_only_prefix_after_a_dated_line_and_from_since() -> None:
    text = (
        "2025-04-01T10:00:00Z [10:00:00 TP0] Memory pool end. avail mem=1.00 GB\n"
        "[10:00:05 TP0] Memory pool end. avail mem=1.00 GB\n"
    )
    out, _ = parse(text)
    assert [e.ts for e in events(out)] == [utc("2025-04-01T10:00:00"), utc("2025-04-01T10:00:05")]
    out, _ = parse("[08:00:00] The server is fired up and ready to roll!\n", since="2024-07-09 00:00")
    assert one(out, "ready").ts == utc("2024-07-09T08:00:00")


def test_multimodal_prefix_takes_the_year() -> None:
    out, _ = parse("[04-01 12:00:10] The server is fired up and ready to roll!\n", year=2025)
    e = one(out, "ready")
    assert (e.ts, e.ts_inferred) == (utc("2025-04-01T12:00:10"), "year")


def test_unprefixed_lines_take_the_previous_time() -> None:
    text = (
        "[2025-01-01 10:00:00] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        'INFO:     127.0.0.1:4 - "GET /health HTTP/1.1" 200 OK\n'
    )
    out, _ = parse(text)
    (req,) = records_of(out, HttpRequest)
    assert (req.ts, req.ts_raw, req.ts_inferred, req.status) == (
        utc("2025-01-01T10:00:00"),
        None,
        "previous",
        200,
    )


def test_wrappers_docker_compose_ray_journald() -> None:
    text = (
        "2025-04-01T12:00:00.764529167Z [2025-04-01 14:00:00 TP0] Memory pool end. avail mem=9.00 GB\n"
        "sglang-1  | [2025-04-01 12:00:01] The server is fired up and ready to roll!\n"
        "(SchedulerActor pid=5151, ip=10.0.0.7) [2025-04-01 12:00:02 TP1] KV Cache is allocated. #tokens: 10, KV size: 0.01 GB\n"
        "Apr 01 12:00:03 gpu-node-9 sglang[6161]: [2025-04-01 12:00:03] SIGTERM received. signum=15 frame=None. "
        "Draining requests and shutting down...\n"
    )
    out, _ = parse(text, tz="Europe/Berlin")
    pool, ready, kv, term = events(out)
    # the docker stamp is exact and wins over SGLang's local time
    assert (pool.ts, pool.ts_raw, pool.ts_inferred) == (
        utc("2025-04-01T12:00:00.764529"),
        "2025-04-01T12:00:00.764529167Z",
        None,
    )
    assert ready.ts == utc("2025-04-01T10:00:01")
    assert (kv.pid, kv.ranks, kv.num_tokens) == (5151, "TP1", 10)
    assert (term.kind, term.pid, term.host) == ("sigterm", 6161, "gpu-node-9")


def test_tqdm_glued_line_is_found_inside_the_physical_line() -> None:
    text = (
        "Capturing batches (bs=1 avail_mem=2.95 GB): 100%|##########| 9/9 [00:14<00:00,  1.63s/it]"
        "[2025-11-03 14:01:54 TP1] Capture cuda graph end. Time elapsed: 15.69 s. mem usage=0.61 GB. avail mem=2.94 GB.\n"
        "  0%|          | 0/23 [00:00<?, ?it/s]\r100%|##| 23/23 [00:21<00:00,  1.07it/s]\n"
    )
    out, ctx = parse(text)
    e = one(out, "cuda_graph_end")
    assert (e.line_no, e.ranks, e.elapsed_s, e.mem_usage_gb, e.avail_mem_gb) == (1, "TP1", 15.69, 0.61, 2.94)
    assert (ctx.parsed_lines, ctx.ignored_lines) == (1, 1)


def test_level_and_source_after_the_prefix() -> None:
    out, _ = parse(
        "[2026-03-21 03:31:56] INFO engine.py:177: server_args=ServerArgs(model_path='m', tp_size=2)\n"
    )
    (cfg,) = records_of(out, ServerConfig)
    assert (cfg.model_path, cfg.tp_size) == ("m", 2)


def test_legacy_gpu_prefix() -> None:
    out, _ = parse("[gpu_id=1] Load weight begin. avail mem=22.10 GB\n")
    e = one(out, "load_weight_begin")
    assert (e.ranks, e.ts) == ("GPU1", None)


def test_out_of_order_lines_keep_their_line_numbers() -> None:
    text = (
        "[2025-01-01 10:00:05] The server is fired up and ready to roll!\n"
        '[2025-01-01 10:00:04] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200 OK\n'
    )
    out, _ = parse(text)
    assert [(type(o).__name__, o.line_no) for o in out] == [("ServerEvent", 1), ("HttpRequest", 2)]
    assert records_of(out, HttpRequest)[0].ts == utc("2025-01-01T10:00:04")


# --------------------------------------------------------------------------- server_args


def test_server_args_repr_with_nested_values() -> None:
    body = (
        "ServerArgs(model_path='/m/a, b', json_model_override_args='{\"rope\": {\"f\": 4.0}}', "
        "additional_ports=[1, 2], tp_size=8, speculative_algorithm='EAGLE3', "
        "speculative_draft_model_path='/m/d', speculative_num_steps=3, speculative_eagle_topk=1, "
        "speculative_num_draft_tokens=4, mem_fraction_static=0.88, cuda_graph_max_bs=256, "
        "max_running_requests=None, port=30000, lora_paths=None, disable_cuda_graph=False)"
    )
    out, _ = parse(f"[2025-05-20 06:14:04] server_args={body}\n")
    (c,) = records_of(out, ServerConfig)
    assert c.model_path == "/m/a, b"
    assert (c.tp_size, c.speculative_algorithm, c.speculative_draft_model_path) == (8, "EAGLE3", "/m/d")
    assert (c.speculative_num_steps, c.speculative_eagle_topk, c.speculative_num_draft_tokens) == (3, 1, 4)
    assert (c.mem_fraction_static, c.cuda_graph_max_bs, c.max_running_requests, c.port) == (
        0.88,
        256,
        None,
        30000,
    )
    assert (c.disable_cuda_graph, c.args_format, c.raw) == (False, "repr", body)
    assert json.loads(one(out, "server_args").detail or "{}")["speculative_algorithm"] == "EAGLE3"


def test_server_args_dict_form_and_nested_graph_config() -> None:
    body = (
        "{'model_path': 'Qwen/Qwen3-32B', 'port': 30100, 'api_key': '[REDACTED]', 'tp_size': 1, "
        "'speculative_algorithm': 'NEXTN', 'cuda_graph_config': {'max_bs': 128}, 'watchdog_timeout': 300.0}"
    )
    out, _ = parse(f"[2026-03-05 11:00:00] server_args={body}\n")
    (c,) = records_of(out, ServerConfig)
    assert (c.model_path, c.port, c.speculative_algorithm, c.cuda_graph_max_bs) == (
        "Qwen/Qwen3-32B",
        30100,
        "NEXTN",
        128,
    )
    assert (c.watchdog_timeout, c.args_format) == (300.0, "dict")


def test_server_args_cut_line_and_enum_values() -> None:
    fields, form = parse_server_args(
        "ServerArgs(model_path='/m', speculative_algorithm=<SpeculativeAlgorithm.EAGLE: 1>, tp_size=4, port=3"
    ) or ({}, "")
    assert form == "repr"
    assert fields["tp_size"] == "4"
    assert fields["port"] == "3"
    out, _ = parse(
        "[2025-01-01 00:00:00] server_args=ServerArgs(model_path='/m', speculative_algorithm=<SpeculativeAlgorithm.EAGLE: 1>, tp_size=4\n"
    )
    (c,) = records_of(out, ServerConfig)
    assert (c.speculative_algorithm, c.tp_size) == ("EAGLE", 4)


def test_server_args_legacy_and_malformed() -> None:
    out, _ = parse("server_args: model_path=/m, tp_size=2, port=30000\n")
    (c,) = records_of(out, ServerConfig)
    assert (c.args_format, c.tp_size, c.port) == ("legacy", 2, 30000)
    out, _ = parse("[2025-01-01 00:00:00] server_args=nothing here\n")
    (issue,) = issues_of(out)
    assert (issue.reason, issue.unparsed) == ("malformed server_args line", True)


# --------------------------------------------------------------------------- startup phases


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB",
            (63.72, None, None),
        ),
        (
            "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=45.02 GB, mem usage=33.83 GB.",
            (45.02, 33.83, None),
        ),
        (
            "Load weight end. elapsed=541.76 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=17.47 GB, mem usage=94.00 GB.",
            (17.47, 94.0, 541.76),
        ),
        (
            "Load weight end. elapsed=787.55 s, type=Qwen4ExpForConditionalGeneration, quant=modelopt_fp4, quant_algo=NVFP4, avail mem=29.01 GB, mem usage=82.97 GB.",
            (29.01, 82.97, 787.55),
        ),
        (
            "Load weight end. elapsed=94.49 s, type=Qwen4ExpForCausalLMMTP, quant=modelopt_fp4, quant_algo=NVFP4, avail mem=30.67 GB, mem usage=-1.86 GB.",
            (30.67, -1.86, 94.49),
        ),
    ],
)
def test_load_weight_end_variants(line: str, want: tuple[float | None, ...]) -> None:
    out, _ = parse(f"[2026-01-01 00:00:00 TP0] {line}\n")
    e = one(out, "load_weight_end")
    assert (e.avail_mem_gb, e.mem_usage_gb, e.elapsed_s) == want


def test_draft_model_by_order_and_by_class() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=80.00 GB\n"
        "[2026-01-01 00:01:00 TP0] Load weight end. type=DeepseekV3ForCausalLM, avail mem=20.00 GB, mem usage=60.00 GB.\n"
        "[2026-01-01 00:01:01 TP0] Load weight begin. avail mem=20.00 GB\n"
        "[2026-01-01 00:01:09 TP0] Load weight end. type=DeepseekV3ForCausalLMNextN, avail mem=18.00 GB, mem usage=2.00 GB.\n"
    )
    out, _ = parse(text)
    assert [(e.kind, e.role) for e in events(out)] == [
        ("load_weight_begin", "target"),
        ("load_weight_end", "target"),
        ("load_weight_begin", "draft"),
        ("load_weight_end", "draft"),
    ]
    # without speculative decoding (server_args says so) a second pair is the target again
    out, _ = parse(
        "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', speculative_algorithm=None)\n"
        + text.replace("NextN", "")
    )
    assert {e.role for e in events(out) if e.kind.startswith("load")} == {"target"}


def test_deferred_weight_commit() -> None:
    out, _ = parse(
        "[2026-06-01 00:00:00 TP0] Load weight end. Committed real weights after CUDA graph capture in 12.50 s "
        "(capture overlap window 40.10 s, startup overlap total 52.60 s)\n"
    )
    e = one(out, "load_weight_end")
    assert e.elapsed_s == 12.5
    assert json.loads(e.detail or "{}") == {
        "deferred": True,
        "capture_overlap_s": 40.1,
        "overlap_total_s": 52.6,
    }


@pytest.mark.parametrize(
    ("line", "kind", "usage", "tokens", "label"),
    [
        ("KV Cache is allocated. K size: 2.82 GB, V size: 2.82 GB.", "kv_cache_allocated", 5.64, None, None),
        (
            "KV Cache is allocated. #tokens: 903439, K size: 13.79 GB, V size: 13.79 GB",
            "kv_cache_allocated",
            27.58,
            903439,
            None,
        ),
        (
            "KV Cache is allocated. #tokens: 912384, KV size: 59.71 GB",
            "kv_cache_allocated",
            59.71,
            912384,
            None,
        ),
        (
            "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 159552, K size: 1.83 GB, V size: 1.83 GB",
            "kv_cache_allocated",
            3.66,
            159552,
            None,
        ),
        (
            "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 65536, K size: 1.00 GB, V size: 1.00 GB",
            "kv_cache_allocated",
            2.0,
            65536,
            "SWA",
        ),
        (
            "Full KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 1048576, KV size: 30.00 GB",
            "kv_cache_va_bound",
            30.0,
            1048576,
            "Full",
        ),
        (
            "Post-capture KV sizing: KV cache allocated. dtype: fp8, #tokens: 4000, KV size: 2.50 GB, avail mem=7.10 GB",
            "kv_cache_allocated",
            2.5,
            4000,
            None,
        ),
    ],
)
def test_kv_cache_variants(line: str, kind: str, usage: float, tokens: int | None, label: str | None) -> None:
    out, _ = parse(f"[2026-01-01 00:00:00 TP0] {line}\n")
    e = one(out, kind)
    assert (e.mem_usage_gb, e.num_tokens) == (usage, tokens)
    assert json.loads(e.detail or "{}").get("label") == label


@pytest.mark.parametrize(
    ("line", "kind", "role", "elapsed", "usage", "avail"),
    [
        (
            "Capture cuda graph begin. This can take up to several minutes.",
            "cuda_graph_begin",
            "target",
            None,
            None,
            None,
        ),
        ("Capture cuda graph end. Time elapsed: 6.57 s", "cuda_graph_end", "target", 6.57, None, None),
        (
            "Capture cuda graph end. Time elapsed: 17.13 s. avail mem=10.26 GB. mem usage=0.89 GB.",
            "cuda_graph_end",
            "target",
            17.13,
            0.89,
            10.26,
        ),
        (
            "Capture cuda graph end. Time elapsed: 54.61 s. mem usage=1.93 GB. avail mem=8.16 GB.",
            "cuda_graph_end",
            "target",
            54.61,
            1.93,
            8.16,
        ),
        (
            "Capture draft cuda graph end. Time elapsed: 13.48 s. avail mem=31.31 GB. mem usage=1.10 GB.",
            "cuda_graph_end",
            "draft",
            13.48,
            1.1,
            31.31,
        ),
        (
            "Capture draft extend cuda graph begin (step 2). This can take up to several minutes. avail mem=31.31 GB",
            "cuda_graph_begin",
            "draft",
            None,
            None,
            31.31,
        ),
        (
            "Capture piecewise CUDA graph end. Time elapsed: 4.00 s. mem usage=0.20 GB. avail mem=9.00 GB.",
            "cuda_graph_end",
            "target",
            4.0,
            0.2,
            9.0,
        ),
        (
            "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, bs=[1, 2], avail mem=26.27 GB",
            "cuda_graph_begin",
            "target",
            None,
            None,
            26.27,
        ),
        (
            "Capture draft verify CUDA graph end. elapsed=4.26 s, mem usage=-0.01 GB, avail mem=7.68 GB.",
            "cuda_graph_end",
            "draft",
            4.26,
            -0.01,
            7.68,
        ),
        (
            "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=13.92 s, mem usage=0.77 GB, avail mem=11.24 GB.",
            "cuda_graph_end",
            "target",
            13.92,
            0.77,
            11.24,
        ),
        (
            "Capture target prefill CUDA graph begin. backend=piecewise, num_tokens=[4, 8], avail mem=13.10 GB",
            "cuda_graph_begin",
            "target",
            None,
            None,
            13.1,
        ),
    ],
)
def test_cuda_graph_variants(
    line: str, kind: str, role: str, elapsed: float | None, usage: float | None, avail: float | None
) -> None:
    out, _ = parse(f"[2026-01-01 00:00:00 TP0] {line}\n")
    e = one(out, kind)
    assert (e.role, e.elapsed_s, e.mem_usage_gb, e.avail_mem_gb, e.phase) == (
        role,
        elapsed,
        usage,
        avail,
        "cuda_graph",
    )


def test_old_style_draft_graph_after_the_target_graph() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=80.00 GB\n"
        "[2026-01-01 00:00:10 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB\n"
        "[2026-01-01 00:00:11 TP0] Load weight begin. avail mem=60.00 GB\n"
        "[2026-01-01 00:00:12 TP0] Load weight end. type=LlamaForCausalLMEagle, dtype=torch.bfloat16, avail mem=59.00 GB\n"
        "[2026-01-01 00:00:20 TP0] Capture cuda graph end. Time elapsed: 8.00 s\n"
        "[2026-01-01 00:00:25 TP0] Capture cuda graph end. Time elapsed: 5.00 s\n"
    )
    out, _ = parse(text)
    assert [e.role for e in events(out, "cuda_graph_end")] == ["target", "draft"]


def test_limits_and_negative_profile_and_timings() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] max_total_tokens=2000000 is larger than the profiled value -5123. Use the profiled value instead.\n"
        "[2026-01-01 00:00:01 TP0] max_total_num_tokens=903439, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=3529, context_len=131072, available_gpu_mem=10.26 GB\n"
        "max_total_num_tokens=481419\n"
        "[2026-01-01 00:00:02] Engine startup timings (s): load_weight=312.45, scheduler_e2e=361.83, tokenizer_e2e=366.77\n"
    )
    out, _ = parse(text)
    assert one(out, "profiled_tokens").num_tokens == -5123
    first, second = events(out, "limits")
    assert (first.num_tokens, first.avail_mem_gb) == (903439, 10.26)
    assert json.loads(first.detail or "{}")["max_running_requests"] == 3529
    assert (second.num_tokens, second.ts_inferred) == (481419, "previous")
    t = one(out, "startup_timings")
    assert t.elapsed_s == 361.83
    assert json.loads(t.detail or "{}") == {
        "load_weight": 312.45,
        "scheduler_e2e": 361.83,
        "tokenizer_e2e": 366.77,
    }


def test_uvicorn_startup_lines() -> None:
    text = (
        "[2025-07-22 06:18:35] INFO:     Started server process [163598]\n"
        "[2025-07-22 06:18:35] INFO:     Waiting for application startup.\n"
        "[2025-07-22 06:18:35] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
        "[2025-07-22 06:18:36] INFO:     Uvicorn running on 0.0.0.0:30001 with 4 SO_REUSEPORT workers\n"
    )
    out, ctx = parse(text)
    started = one(out, "uvicorn_started")
    assert started.pid == 163598
    ports = [json.loads(e.detail or "{}")["port"] for e in events(out, "uvicorn_running")]
    assert ports == [30000, 30001]
    assert (ctx.parsed_lines, ctx.ignored_lines) == (3, 1)


# --------------------------------------------------------------------------- batches


@pytest.mark.parametrize(
    ("line", "phase", "iteration", "running", "queue", "tokens", "usage", "graph"),
    [
        (
            "Decode batch. #running-req: 4, #token: 1180, token usage: 0.00, gen throughput (token/s): 120.35, #queue-req: 0",
            "decode",
            None,
            4,
            0,
            1180,
            0.0,
            None,
        ),
        (
            "Decode batch. #running-req: 64, #token: 180233, token usage: 0.37, gen throughput (token/s): 1510.21, largest-len: 3121, #queue-req: 5, ",
            "decode",
            None,
            64,
            5,
            180233,
            0.37,
            None,
        ),
        (
            "Decode batch [4160], #running-req: 301, #token: 9000, token usage: 0.20, cuda graph: True, gen throughput (token/s): 9.00, #queue-req: 0, ",
            "decode",
            4160,
            301,
            0,
            9000,
            0.2,
            True,
        ),
        (
            "Decode batch, #running-req: 62, #token: 167777, token usage: 0.81, cuda graph: True, gen throughput (token/s): 896.73, #queue-req: 2",
            "decode",
            None,
            62,
            2,
            167777,
            0.81,
            True,
        ),
        (
            "Decode batch, #running-req: 5, #full token: 800, full token usage: 0.25, mamba num: 5, mamba usage: 0.10, npu graph: False, gen throughput (token/s): 1.00, #queue-req: 0",
            "decode",
            None,
            5,
            0,
            800,
            0.25,
            False,
        ),
        (
            "Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 250, #cached-token: 12, cache hit rate: 4.58%, #running-req: 3, #queue-req: 0",
            "prefill",
            None,
            3,
            0,
            None,
            None,
            None,
        ),
        (
            "Prefill batch, #new-seq: 1, #new-token: 1024, #cached-token: 1024, full token usage: 0.00, swa token usage: 0.10, #running-req: 0, #queue-req: 0, #pending-token: 2128, cuda graph: False, input throughput (token/s): 593.64",
            "prefill",
            None,
            0,
            0,
            None,
            0.0,
            False,
        ),
    ],
)
def test_batch_headers_and_bodies(
    line: str,
    phase: str,
    iteration: int | None,
    running: int,
    queue: int,
    tokens: int | None,
    usage: float | None,
    graph: bool | None,
) -> None:
    out, _ = parse(f"[2026-01-01 00:00:00 TP0] {line}\n")
    (b,) = records_of(out, ServerStats)
    assert (b.phase, b.iteration, b.running_req, b.queue_req, b.num_tokens, b.token_usage, b.cuda_graph) == (
        phase,
        iteration,
        running,
        queue,
        tokens,
        usage,
        graph,
    )
    assert not issues_of(out)


def test_batch_speculative_and_hybrid_fields() -> None:
    out, _ = parse(
        "[2026-01-01 00:00:00 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.17, "
        "accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0, \n"
        "[2026-01-01 00:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 1024, #cached-token: 512, full token usage: 0.01, "
        "swa token usage: 0.10, #running-req: 0, #queue-req: 0, #pending-token: 2128, cuda graph: False, "
        "input throughput (token/s): 593.64, fwd occupancy: 87.5%\n"
    )
    d, p = records_of(out, ServerStats)
    assert (d.accept_len, d.accept_rate, d.gen_throughput) == (2.17, 0.54, 0.39)
    assert (
        p.new_seq,
        p.new_token,
        p.cached_token,
        p.swa_token_usage,
        p.pending_token,
        p.input_throughput,
    ) == (
        1,
        1024,
        512,
        0.1,
        2128,
        593.64,
    )
    assert json.loads(p.extra or "{}") == {"fwd occupancy": 87.5}


def test_unknown_batch_keys_give_one_warning_per_file() -> None:
    text = "".join(
        f"[2026-01-01 00:00:0{i} TP0] Decode batch, #running-req: {i}, new-thing-{i}: {i}, #queue-req: 0\n"
        for i in range(3)
    )
    out, ctx = parse(text)
    (issue,) = issues_of(out)
    assert (issue.line_no, issue.unparsed) == (1, False)
    assert "new-thing-0" in issue.reason
    assert [json.loads(b.extra or "{}") for b in records_of(out, ServerStats)] == [
        {"new-thing-0": 0},
        {"new-thing-1": 1},
        {"new-thing-2": 2},
    ]
    assert ctx.parsed_lines == 3


def test_batch_with_a_bad_value_and_a_bad_header() -> None:
    out, _ = parse(
        "[2026-01-01 00:00:00 TP0] Decode batch, #running-req: many, #queue-req: 0\n"
        "[2026-01-01 00:00:01 TP0] Decode batch of something else\n"
    )
    (b,) = records_of(out, ServerStats)
    assert (b.running_req, json.loads(b.extra or "{}")) == (None, {"#running-req": "many"})
    warn, bad = issues_of(out)
    assert (warn.unparsed, bad.unparsed, bad.reason) == (False, True, "malformed batch line")


# --------------------------------------------------------------------------- access log


def test_access_lines() -> None:
    text = (
        '[2025-01-23 19:35:28] INFO:     127.0.0.1:47208 - "GET /v1/models HTTP/1.1" 200 OK\n'
        '[2025-01-23 19:35:29] INFO:     127.0.0.1:51820 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
        '[2025-01-23 19:35:30] INFO:     10.0.0.1:9 - "POST /v1/chat/completions?stream=1 HTTP/2" 404 Not Found\n'
        '[2025-01-23 19:35:31] INFO:     10.0.0.1:9 - "GET /health HTTP/1.1" oops\n'
    )
    out, _ = parse(text)
    reqs = records_of(out, HttpRequest)
    assert [(r.client, r.method, r.path, r.http_version, r.status) for r in reqs] == [
        ("127.0.0.1:47208", "GET", "/v1/models", "1.1", 200),
        ("127.0.0.1:51820", "GET", "/health", "1.1", 503),
        ("10.0.0.1:9", "POST", "/v1/chat/completions?stream=1", "2", 404),
    ]
    (issue,) = issues_of(out)
    assert (issue.line_no, issue.reason) == (4, "malformed uvicorn access line")


# --------------------------------------------------------------------------- errors


def test_traceback_is_one_event_with_the_last_exception_and_the_phase_from_frames() -> None:
    text = (
        "[2026-01-01 00:00:00 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/s/model_executor/cuda_graph_runner.py", line 300, in capture\n'
        "    self.capture_one_batch_size(bs)\n"
        '  File "/s/model_executor/model_runner.py", line 900, in forward_decode\n'
        "    return self.model.forward(\n"
        "KeyError: 'x'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/s/managers/scheduler.py", line 10, in run_scheduler_process\n'
        "    raise\n"
        "RuntimeError: second failure\n"
        "[2026-01-01 00:00:01] Received sigquit from a child process. It usually means the child failed.\n"
    )
    out, ctx = parse(text)
    exc = one(out, "exception")
    assert (exc.line_no, exc.message, exc.phase, exc.ranks, exc.ts) == (
        13,
        "RuntimeError: second failure",
        "cuda_graph",
        "TP2",
        utc("2026-01-01T00:00:00"),
    )
    assert json.loads(exc.detail or "{}") == {
        "header_line_no": 1,
        "who": "Scheduler",
        "exception": "RuntimeError",
        "chain": ["KeyError: 'x'"],
    }
    assert one(out, "sigquit").line_no == 14
    assert (ctx.parsed_lines, ctx.ignored_lines) == (4, 10)


def test_traceback_survives_an_interleaved_prefixed_line() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "[2026-01-01 00:00:00] Received sigquit from a child process. It usually means the child failed.\n"
        '  File "/s/model_executor/model_runner.py", line 312, in init_memory_pool\n'
        "    self.token_to_kv_pool = MHATokenToKVPool(\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB. GPU 3 has a total capacity of 79.19 GiB of which 8.40 GiB is free.\n"
    )
    out, _ = parse(text)
    assert [e.kind for e in events(out)] == ["sigquit", "exception", "cuda_oom"]
    (oom,) = records_of(out, CudaOom)
    assert (oom.line_no, oom.gpu, oom.tried_mib, oom.total_mib, oom.free_mib, oom.phase, oom.ranks) == (
        5,
        3,
        12288.0,
        81090.56,
        8601.6,
        "kv_pool",
        "TP0",
    )


def test_incomplete_traceback_is_flushed_at_the_end() -> None:
    out, _ = parse(
        '[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
    )
    e = one(out, "exception")
    assert (e.line_no, e.message) == (1, "Traceback (incomplete: no exception line)")


def test_phase_from_the_startup_state_when_frames_say_nothing() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=80.00 GB\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/x", line 1, in <module>\n'
        "ValueError: boom\n"
    )
    out, _ = parse(text)
    e = one(out, "exception")
    assert (e.phase, e.ts_inferred, e.message) == ("weights", "previous", "ValueError: boom")


@pytest.mark.parametrize(
    ("lines", "kind", "exit_code"),
    [
        (
            ["Rank 0 scheduler is dead. Please check if there are relevant logs.", "Exit code: -9"],
            "scheduler_killed",
            -9,
        ),
        (
            ["Rank 1 scheduler is dead. Please check if there are relevant logs.", "Exit code: 1"],
            "scheduler_dead",
            1,
        ),
        (["Rank 0 scheduler is dead. Please check if there are relevant logs."], "scheduler_dead", None),
        (
            [
                "Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer."
            ],
            "scheduler_killed",
            -9,
        ),
        (
            ["Subprocess scheduler_3 (pid=77) crashed with exit code -9. Triggering SIGQUIT for cleanup..."],
            "scheduler_killed",
            -9,
        ),
        (
            ["Subprocess detokenizer (pid=78) crashed with exit code -6. Triggering SIGQUIT for cleanup..."],
            "subprocess_crashed",
            -6,
        ),
        (["Scheduler or DataParallelController 4301 terminated with -9"], "scheduler_killed", -9),
    ],
)
def test_scheduler_deaths(lines: list[str], kind: str, exit_code: int | None) -> None:
    out, ctx = parse("".join(f"[2026-01-01 00:00:00] {line}\n" for line in lines))
    e = one(out, kind)
    assert (e.exit_code, e.line_no) == (exit_code, 1)
    assert ctx.parsed_lines == len(lines)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Received sigquit from a child proces. It usually means the child failed.", "sigquit"),
        ("SIGQUIT received. signum=None, frame=None. It usually means one child failed.", "sigquit"),
        ("SIGTERM received. signum=15 frame=None. Draining requests and shutting down...", "sigterm"),
        ("Gracefully exiting... remaining number of requests 3", "graceful_exit"),
        ("Signal SIGTERM received while health check failed. Force exiting.", "forced_exit"),
        (
            "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.4012 -> 0.5000",
            "retract",
        ),
        ("decode out of memory happened, #retracted_reqs: 1, #new_token_ratio: 0.3 -> 0.4", "retract"),
        (
            "Testing retraction. #retracted_reqs: 1, #new_tokens_gained: 10, #new_token_ratio: 0.3 -> 0.4",
            "retract",
        ),
        ("Watchdog timeout (self.watchdog_timeout=300)", "watchdog"),
        ("DetokenizerManager watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "watchdog"),
        ("kill_process_tree called: parent_pid=4242, include_parent=True, pid=4242", "kill_process_tree"),
        ("Initialization failed. Please see the error messages above.", "initialization_failed"),
        (
            "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 10:41:30. last_heartbeat time: 10:41:09",
            "health_check_failed",
        ),
        (
            "token_to_kv_pool_allocator memory leak detected! self.max_total_num_tokens=1, available_size=0, evictable_size=0, protected_size=0",
            "kv_leak",
        ),
        (
            "alloc_req_slots runs out of memory. Please set a smaller number for --max-running-requests.",
            "kv_oom",
        ),
        (
            "The memory capacity is unbalanced. Some GPUs may be occupied by other processes.",
            "memory_unbalanced",
        ),
        (
            "Capture cuda graph failed: CUDA error: an illegal memory access was encountered",
            "cuda_graph_failed",
        ),
        (
            "Mamba Cache is allocated. max_mamba_cache_size: 38, conv_state size: 0.03GB",
            "mamba_cache_allocated",
        ),
    ],
)
def test_error_and_signal_lines(line: str, kind: str) -> None:
    out, _ = parse(f"[2026-01-01 00:00:00 TP0] {line}\n")
    assert [e.kind for e in events(out)] == [kind]


def test_retract_and_watchdog_details() -> None:
    out, _ = parse(
        "[2026-01-01 00:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 3310, "
        "#new_token_ratio: 0.4513 -> 0.6000\n"
        "[2026-01-01 00:00:01] TokenizerManager watchdog timeout (self.watchdog_timeout=600.0, self.soft=True)\n"
    )
    r, w = events(out)
    assert json.loads(r.detail or "{}") == {
        "retracted_reqs": 3,
        "new_tokens_gained": 3310,
        "new_token_ratio": [0.4513, 0.6],
    }
    assert (w.elapsed_s, json.loads(w.detail or "{}")) == (600.0, {"who": "TokenizerManager", "soft": True})


def test_not_enough_memory_in_a_traceback() -> None:
    text = (
        "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/s/model_executor/model_runner.py", line 1180, in init_memory_pool\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88\n"
    )
    out, _ = parse(text)
    e = one(out, "not_enough_memory")
    assert (e.line_no, e.phase, json.loads(e.detail or "{}")) == (4, "kv_pool", {"mem_fraction_static": 0.88})


# --------------------------------------------------------------------------- CUDA OOM generations


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # ≤1.3: "cached"
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
            (0, 1.0, 11438.08, 0.5625, 11161.6, 30.96),
        ),
        # 1.4–1.12
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB total capacity; 21.87 GiB already allocated; 19.06 MiB free; 22.36 GiB reserved in total by PyTorch)",
            (0, 20.0, 24258.56, 19.06, 22394.88, 22896.64),
        ),
        # 1.13–2.0 with "allowed"
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.35 GiB total capacity; 70.12 GiB already allocated; 1.05 GiB free; 76.00 GiB allowed; 75.50 GiB reserved in total by PyTorch)",
            (3, 2048.0, 81254.4, 1075.2, 71802.88, 77312.0),
        ),
        # 2.1 "capacty"
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB. GPU 0 has a total capacty of 23.65 GiB of which 51.06 MiB is free. Process 12345 has 23.59 GiB memory in use. Of the allocated memory 22.71 GiB is allocated by PyTorch, and 424.94 MiB is reserved by PyTorch but unallocated.",
            (0, 172.0, 24217.6, 51.06, 23255.04, 23679.98),
        ),
        # 2.2–2.3
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 1 has a total capacity of 79.15 GiB of which 2.47 GiB is free. Including non-PyTorch memory, this process has 75.65 GiB memory in use. 78.00 GiB allowed; Of the allocated memory 74.03 GiB is allocated by PyTorch, and 1.14 GiB is reserved by PyTorch but unallocated.",
            (1, 4003.84, 81049.6, 2529.28, 75806.72, 76974.08),
        ),
        # 2.4+ private pools, 2.5+ class name
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 2 has a total capacity of 139.72 GiB of which 312.19 MiB is free. Of the allocated memory 131.07 GiB is allocated by PyTorch, with 4.25 GiB allocated in private pools (e.g., CUDA Graphs), and 2.91 GiB is reserved by PyTorch but unallocated.",
            (2, 896.0, 143073.28, 312.19, 134215.68, 137195.52),
        ),
        # a JSON error body (escaped newlines)
        (
            '{"message": "CUDA out of memory. Tried to allocate 128.00 MiB. GPU 0 has a total capacity of 79.19 GiB of\\nwhich 100.25 MiB is free.", "code": 500}',
            (0, 128.0, 81090.56, 100.25, None, None),
        ),
        # raw runtime error: no sizes
        ("RuntimeError: CUDA error: out of memory", (None, None, None, None, None, None)),
    ],
)
def test_cuda_oom_generations(text: str, want: tuple[Any, ...]) -> None:
    o = parse_oom(text)
    assert o is not None
    assert (o.gpu, o.tried_mib, o.total_mib, o.free_mib, o.allocated_mib, o.reserved_mib) == want


def test_cuda_oom_golden_generations_in_a_log() -> None:
    out, _ = parse((FIXTURES / "cuda_ooms.log").read_text(), tz="UTC")
    ooms = records_of(out, CudaOom)
    assert [(o.tried_mib, o.total_mib, o.free_mib, o.phase) for o in ooms] == [
        (1.0, 11438.08, 0.5625, "weights"),
        (20.0, 24258.56, 19.06, "kv_pool"),
        (2048.0, 81254.4, 1075.2, "runtime"),
        (172.0, 24217.6, 51.06, "cuda_graph"),
        (4003.84, 81049.6, 2529.28, "runtime"),
        (896.0, 143073.28, 312.19, "cuda_graph"),
        (64.0, 81090.56, 18.0, "runtime"),  # wrapped over two lines
        (None, None, None, "runtime"),
        (2048.0, 196587.52, 1259.52, "kv_pool"),
        (0.000488, 81090.56, 0.25, "kv_pool"),
        (128.0, 81090.56, 100.25, None),
    ]
    assert [o.device for o in ooms][8] == "HIP"
    assert ooms[5].private_pool_mib == 4352.0
    assert len(events(out, "exception")) == 10
    assert len(events(out, "cuda_oom")) == 11


# --------------------------------------------------------------------------- unusable lines


def test_unusable_lines_are_counted_issues_in_a_file() -> None:
    out, ctx = parse(
        "random garbage\n[2026-01-01 00:00:00 TP0] Load weight end. type=broken\n[2026-01-01 00:00:00] Some INFO line\n"
    )
    assert [(i.line_no, i.reason, i.unparsed) for i in issues_of(out)] == [
        (1, "not an SGLang log line", True),
        (2, "malformed Load weight end line", True),
    ]
    assert ctx.ignored_lines == 1


# --------------------------------------------------------------------------- the stream API


def test_stream_uses_the_journal_time_unit_and_pid() -> None:
    ctx = ParseContext(zone=get_zone("America/Los_Angeles"), host="h1")
    s = SglangStream(ctx, unit="sglang-qwen.service", pid=5150)
    jts = datetime(2025, 3, 14, 9, 0, 20, 120000, tzinfo=UTC)
    (e,) = s.feed(7, "[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB", ts=jts)
    assert (e.ts, e.ts_raw, e.ts_inferred, e.unit, e.pid, e.host, e.line_no) == (
        jts,
        "2025-03-14 09:00:20",
        None,
        "sglang-qwen.service",
        5150,
        "h1",
        7,
    )
    assert s.status == SglangStream.PARSED
    assert list(s.feed(8, "Started sglang.service.", ts=jts)) == []
    assert s.status == SglangStream.UNPARSED
    (w,) = s.feed(9, "[2025-03-14 09:00:21 TP0] Load weight end. type=???", ts=jts)
    assert isinstance(w, ParseIssue)
    assert not w.unparsed
    assert ctx.parsed_lines == ctx.ignored_lines == 0


def test_stream_traceback_across_feeds_and_close() -> None:
    s = SglangStream(ParseContext())
    ts = datetime(2025, 1, 1, tzinfo=UTC)
    assert (
        list(
            s.feed(
                1,
                "[2025-01-01 00:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):",
                ts=ts,
            )
        )
        == []
    )
    assert s.expects_continuation
    assert list(s.feed(2, '  File "/s/model_loader/loader.py", line 3, in load_model', ts=ts)) == []
    assert (
        list(
            s.feed(
                3,
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.00 GiB is free.",
                ts=ts,
            )
        )
        == []
    )
    out = list(s.close())
    assert [type(o).__name__ for o in out] == ["ServerEvent", "ServerEvent", "CudaOom"]
    assert (out[0].phase, out[2].tried_mib, out[2].ranks) == ("weights", 2048.0, "TP1")
    assert not s.expects_continuation


def test_stream_message_with_continuation_lines_and_new_process() -> None:
    s = SglangStream(ParseContext())
    ts = datetime(2025, 1, 1, tzinfo=UTC)
    msg = '[2025-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File "a.py", line 1, in f\nValueError: x'
    assert list(s.feed(1, msg, ts=ts, pid=10)) == []
    # a new process (pid) flushes what the old one left open
    out = list(s.feed(2, "[2025-01-01 00:00:01 TP0] Load weight begin. avail mem=1.00 GB", ts=ts, pid=11))
    assert [getattr(o, "kind", None) for o in out] == ["exception", "load_weight_begin"]
    assert out[1].role == "target"
    assert out[1].pid == 11


def test_looks_like_sglang() -> None:
    assert looks_like_sglang("[2025-03-14 09:00:20 TP0] Load weight begin. avail mem=138.62 GB")
    assert looks_like_sglang("[10:00:00 DP1 TP3] Decode batch. #running-req: 1")
    assert looks_like_sglang("[gpu=0] Load weight begin. avail mem=1 GB")
    assert looks_like_sglang("x\r[2025-03-14 09:00:20 TP0] Decode batch. #running-req: 1, " + "." * 200)
    assert not looks_like_sglang("Started sglang-qwen.service - SGLang Qwen3-235B server.")
    assert not looks_like_sglang("[12345.678901] usb 1-1: new high-speed USB device")
    assert not looks_like_sglang("")


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.name)
def test_sniff_recognises_every_fixture(path: Path) -> None:
    parser = get_parser("sglang")
    assert parser is not None
    text = path.read_text(encoding="utf-8")
    head = Head(str(path), text.encode()[:65536], text.split("\n")[:200])
    assert parser.sniff(head) >= 60


@needs_real_samples()
@pytest.mark.corpus
def test_sniff_rejects_other_formats() -> None:
    parser = get_parser("sglang")
    assert parser is not None
    for path in sorted(REAL_SAMPLES.rglob("*.txt")) + sorted(REAL_SAMPLES.rglob("*.log")):
        data = path.read_bytes()[:65536]
        head = Head(str(path), data, data.decode("utf-8", "replace").split("\n")[:200])
        if path.name.startswith("journal.cat"):
            # journalctl -o cat of an SGLang unit is mostly SGLang's own lines: the journal's
            # cat parser must still win (it sees the systemd lifecycle sentences)
            best, _ = detect(head)
            assert best is not None
            assert best.name == "journal-cat"
            continue
        assert parser.sniff(head) <= 10, path.name


# --------------------------------------------------------------------------- the real samples


@needs_real_samples()
@pytest.mark.corpus
@pytest.mark.parametrize(
    "name", ["journal.short-iso.txt", "journal.export.txt", "journal.json.txt", "journal.short.txt"]
)
def test_real_journal_sglang_lines(name: str, tmp_path: Path, cli: Any) -> None:
    """Built: a text mode's server processes are linked to the unit started 2 s before each
    one's first line (``unit_links``); json and export name it themselves."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REAL_SAMPLES / "journal" / name, logs / name)
    db = tmp_path / "t.duckdb"
    args = ("--logs", logs, "--db", db, "--out", tmp_path / "out", "--tz", "UTC", "--year", "2025")
    assert cli("build", *args).code == 0
    store = Store.open_readonly(db)
    try:
        kinds = dict(store.fetchall("SELECT kind, count(*) FROM server_events GROUP BY kind ORDER BY kind"))
        assert kinds["load_weight_begin"] == 16
        assert kinds["load_weight_end"] == 16
        assert kinds["ready"] == 2
        assert kinds["server_args"] == 2
        assert kinds["kv_cache_allocated"] == 2
        graphs = store.fetchall(
            "SELECT strftime(ts, '%H:%M:%S'), elapsed_s, mem_usage_gb, avail_mem_gb, role, unit, pid "
            "FROM server_events WHERE kind = 'cuda_graph_end' ORDER BY ts"
        )
        assert graphs == [
            ("09:05:51", 27.2, 1.83, 2.27, "target", "sglang-qwen.service", 5150),
            ("11:48:23", 30.6, 1.83, 2.27, "target", "sglang-qwen.service", 6262),
        ]
        kv = store.fetchall(
            "SELECT num_tokens, mem_usage_gb FROM server_events WHERE kind = 'kv_cache_allocated'"
        )
        assert kv == [(912384, 59.71), (912384, 59.71)]
        cfg = store.fetchall(
            "SELECT model_path, tp_size, port, mem_fraction_static, cuda_graph_max_bs FROM server_configs"
        )
        assert cfg == [("/models/Qwen3-235B-A22B", 8, 30001, 0.88, 160)] * 2
        batches = store.fetchall("SELECT count(*), max(running_req), max(num_tokens) FROM server_stats")
        assert batches == [(6, 57, 345000)]
        reqs = store.fetchall("SELECT path, status, count(*) FROM http_requests GROUP BY ALL ORDER BY ALL")
        assert reqs == [("/get_model_info", 200, 2)]
    finally:
        store.close()


# --------------------------------------------------------------------------- robustness


_SAMPLE_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.log")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    out, ctx = parse_text("sglang", text)
    check_accounting(ctx, out, count_lines(text.replace("\r\n", "\n").encode()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, len(_SAMPLE_TEXT)),
    st.integers(0, 4000),
    st.sampled_from(["", "\r", "\x00", "[", '  File "x", line 1, in f\n']),
)
def test_never_raises_on_cut_and_spliced_samples(start: int, length: int, junk: str) -> None:
    text = _SAMPLE_TEXT[start : start + length] + junk + _SAMPLE_TEXT[: length // 3]
    out, ctx = parse_text("sglang", text)
    check_accounting(ctx, out, count_lines(text.replace("\r\n", "\n").encode()))


# --------------------------------------------------------------------------- the vectorised path


def _mixed_log(n: int, start: datetime) -> str:
    """A deterministic log with every line shape (starting at a local wall-clock time)."""
    import random

    rnd = random.Random(7)
    out = []
    t = start
    shapes = [
        lambda ts: (
            f"[{ts} TP0] Decode batch, #running-req: {rnd.randint(0, 64)}, #token: {rnd.randint(0, 9000)}, "
            f"token usage: {rnd.random():.2f}, cuda graph: True, gen throughput (token/s): {rnd.random() * 900:.2f}, #queue-req: 0"
        ),
        lambda ts: (
            f"[{ts} DP1 TP1] Decode batch. #running-req: 3, #token: 40, token usage: 0.01, accept len: 2.50, "
            "accept rate: 0.50, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 1, "
        ),
        lambda ts: (
            f"[{ts} TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, "
        ),
        lambda ts: (
            f"[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, full token usage: 0.00, "
            "swa token usage: 0.01, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00"
        ),
        lambda ts: (
            f'[{ts}] INFO:     10.0.0.{rnd.randint(1, 9)}:5{rnd.randint(1000, 9999)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        ),
        lambda ts: f'[{ts}] INFO:     127.0.0.1:4 - "GET /health HTTP/1.1" 200 OK',
        lambda ts: f'[{ts}] INFO:     127.0.0.1:4 - "GET /v1/models HTTP/1.1" 503 Service Unavailable',
        lambda ts: (
            f"[{ts} TP0] Decode batch [12], #running-req: 1, #token: 5, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0"
        ),
        lambda ts: (
            f"[{ts} TP0] Decode batch. #running-req: 1, #token: 5, token usage: 0.00, gen throughput (token/s): 1.00, largest-len: 9, #queue-req: 0, "
        ),
        lambda ts: f"[{ts} TP0] Decode batch, #running-req: x, #token: 5, #queue-req: 0",
        lambda ts: f"[{ts} TP0] Scheduler hit an exception: Traceback (most recent call last):",
        lambda ts: '  File "/s/model_executor/model_runner.py", line 9, in forward_decode',
        lambda ts: (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free."
        ),
        lambda ts: 'INFO:     127.0.0.1:9 - "GET /get_model_info HTTP/1.1" 200 OK',
        lambda ts: "sglang-1  | " + f"[{ts}] The server is fired up and ready to roll!",
        lambda ts: (
            f"[{ts}.{rnd.randint(0, 999):03d} TP0] Decode batch, #running-req: 2, #token: 9, token usage: 0.10, cuda graph: True, gen throughput (token/s): 2.00, #queue-req: 0"
        ),
        lambda ts: "Capturing batches (bs=1 avail_mem=1.00 GB): 100%|##| 4/4 [00:01<00:00,  3.10it/s]",
        lambda ts: f"[{ts} TP0] Cache flushed successfully!",
    ]
    weights = [30, 5, 10, 5, 25, 3, 2, 1, 2, 1, 1, 1, 1, 2, 1, 3, 1, 1]
    for _ in range(n):
        t += timedelta(seconds=rnd.choice((0, 1, 1, 2)))
        shape = rnd.choices(shapes, weights)[0]
        out.append(shape(t.strftime("%Y-%m-%d %H:%M:%S")))
    return "\n".join(out) + "\n"


def _rows(outputs: list[Any]) -> dict[str, list[tuple[Any, ...]]]:
    from postmortem.parsers.base import TableBatch
    from postmortem.records import RECORD_BY_TABLE, as_dict, field_names

    rows: dict[str, list[tuple[Any, ...]]] = {}
    for o in outputs:
        if isinstance(o, TableBatch):
            names = field_names(RECORD_BY_TABLE[o.table])
            assert set(o.data.column_names) == set(names), o.table
            for r in o.data.to_pylist():
                rows.setdefault(o.table, []).append(tuple(r[k] for k in names))
        elif isinstance(o, ParseIssue):
            rows.setdefault("parse_issues", []).append((o.line_no, o.reason, o.excerpt, o.unparsed))
        else:
            rows.setdefault(o.TABLE, []).append(tuple(as_dict(o).values()))
    return {k: sorted(v, key=lambda r: (r[0], repr(r))) for k, v in rows.items()}


@pytest.mark.parametrize(
    ("zone", "start"),
    [
        ("UTC", datetime(2025, 10, 26, 0, 30)),  # noqa: DTZ001
        ("Europe/Berlin", datetime(2025, 10, 26, 0, 30)),  # noqa: DTZ001 - the repeated hour
        ("Europe/Berlin", datetime(2025, 3, 30, 0, 30)),  # noqa: DTZ001 - the skipped hour
    ],
)
def test_vectorised_path_stores_what_the_python_path_stores(zone: str, start: datetime) -> None:
    from postmortem.parsers.base import LineChunk
    from postmortem.timeutil import get_zone

    text = _mixed_log(12000, start)
    parser = get_parser("sglang")
    assert parser is not None
    results = []
    for fast in ("1", "0"):
        ctx = ParseContext(zone=get_zone(zone), zone_given=zone == "UTC", options={"sglang_fast": fast})
        lines = text[:-1].split("\n")
        chunks = [LineChunk.from_lines(1 + i, lines[i : i + 5000]) for i in range(0, len(lines), 5000)]
        out = list(parser.parse(chunks, ctx))
        check_accounting(ctx, out, len(lines))
        results.append((_rows(out), ctx.parsed_lines, ctx.ignored_lines))
    (fast_rows, fp, fi), (slow_rows, sp, si) = results
    assert (fp, fi) == (sp, si)
    assert fast_rows.keys() == slow_rows.keys()
    for table in slow_rows:
        assert fast_rows[table] == slow_rows[table], table
    assert len(slow_rows["server_stats"]) > 5000 and len(slow_rows["http_requests"]) > 2000


def test_a_garbled_stamp_is_a_parse_issue_not_another_logger() -> None:
    """A line whose SGLang prefix is garbled (a digit lost, a NUL inside) was skipped as 'another
    logger's bracketed prefix', counted as ignored with no issue; a stamp that is no real date
    was stored with ts NULL and no word. Both are parse issues now."""
    from postmortem.records import ServerStats

    batch = "Decode batch. #running-req: 1, #token: 10, token usage: 0.01, gen throughput (token/s): 1.00, #queue-req: 0"
    text = (
        f"[2025-05-12 09:42:51 TP0] {batch}\n"
        f"[2025-05-12 09:4x2:51 TP0] {batch}\n"
        f"[2025-05-12 09:\x0042:51 TP0] {batch}\n"
        f"[2025-13-12 09:42:51 TP0] {batch}\n"
        "[Gloo] Rank 0 is connected to 7 peer ranks.\n"
    )
    out, ctx = parse_text("sglang", text, tz="UTC")
    check_accounting(ctx, out, 5)
    issues = {(i.line_no, i.unparsed): i.reason for i in issues_of(out)}
    assert issues == {
        (2, True): "not an SGLang log line",
        (3, True): "not an SGLang log line",
        (4, False): "stamp is not a real date and time; ts is NULL",
    }
    batches = records_of(out, ServerStats)
    assert [(b.line_no, b.ts is None) for b in batches] == [(1, False), (4, True)]
    assert ctx.ignored_lines == 1  # the Gloo line: another logger's


def test_the_hour_that_repeats_when_clocks_go_back_is_read_in_the_logs_order() -> None:
    """Los Angeles, 2025-11-02: 01:00–01:59 happens twice (PDT, then PST). A forward-moving log
    keeps its order in UTC, on the vectorised path (which leaves the repeated hour to the per-line
    one) as on the per-line path."""
    from postmortem.parsers.base import LineChunk
    from postmortem.records import ServerStats

    zone = get_zone("America/Los_Angeles")
    utc = datetime(2025, 11, 2, 7, 30, tzinfo=UTC)
    want = [utc + timedelta(seconds=30 * i) for i in range(240)]  # two hours, a line every 30 s
    lines = [
        f"[{t.astimezone(zone):%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: 1, #token: 10, "
        "token usage: 0.10, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0"
        for t in want
    ]
    parser = get_parser("sglang")
    assert parser is not None
    for fast in ("1", "0"):
        ctx = ParseContext(zone=zone, zone_given=True, options={"sglang_fast": fast})
        out = list(parser.parse([LineChunk.from_lines(1, lines)], ctx))
        assert [b.ts for b in records_of(out, ServerStats)] == want, fast


def test_a_crash_tail_without_prefixes_is_recognised_and_its_phase_read() -> None:
    """What people save of a dead server is often its last lines: a traceback through SGLang's
    server code (``docker logs``, a terminal). It is SGLang's log; the 0.4.x overlap thread's
    frames say the error came while serving."""
    from postmortem.parsers import detect

    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.12/site-packages/sglang/srt/managers/tp_worker_overlap_thread.py", '
        "line 111, in forward_thread_func\n"
        "    with torch.get_device_module(self.device).stream(self.forward_stream):\n"
        '  File "/env/lib/python3.12/site-packages/torch/cuda/__init__.py", line 595, in __exit__\n'
        "    torch.cuda.set_stream(self.src_prev_stream)\n"
        "RuntimeError: CUDA error: out of memory\n"
    )
    data = text.encode()
    parser, _score = detect(Head("x.log", data, text.split("\n")))
    assert parser is not None and parser.name == "sglang"
    out, _ctx = parse_text("sglang", text)
    (exc,) = [e for e in records_of(out, ServerEvent) if e.kind == "exception"]
    assert exc.phase == "runtime"


def test_hicaches_host_pool_is_an_event_with_its_size() -> None:
    """``--enable-hierarchical-cache`` allocates a host-memory pool per rank — host RAM the other
    lines do not show (it was an ignored line)."""
    text = (
        "[2025-06-12 11:34:13 TP0] Allocating 117.00 GB host memory for hierarchical KV cache.\n"
        "[2025-06-12 11:34:13 TP1] Allocating 117.00 GB host memory for hierarchical KV cache.\n"
    )
    out, ctx = parse_text("sglang", text, tz="UTC")
    events = [e for e in records_of(out, ServerEvent) if e.kind == "hicache_host_alloc"]
    assert [(e.ranks, e.mem_usage_gb) for e in events] == [("TP0", 117.0), ("TP1", 117.0)]
    assert ctx.parsed_lines == 2


def test_a_lone_oom_exception_line_is_an_exception_and_a_cuda_oom() -> None:
    """A pasted tail whose traceback frames were lost still ends in the exception line: it is an
    ``exception`` event (as the schema says of a lone ``XxxError:`` line) as well as a CUDA OOM."""
    text = (
        "[2025-11-03 10:00:00 TP0] Load weight begin. avail mem=23.10 GB\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total "
        "capacity of 23.52 GiB of which 13.00 MiB is free.\n"
    )
    out, _ = parse_text("sglang", text, tz="UTC")
    kinds = [e.kind for e in records_of(out, ServerEvent)]
    assert kinds == ["load_weight_begin", "exception", "cuda_oom"]


def test_kernel_lines_in_a_server_log_are_parse_issues_not_another_loggers() -> None:
    """A dmesg line (a stamp in seconds since boot) pasted or redirected into a server's log is
    no library's progress line: it is counted as a line not understood, so an OOM record there
    is seen, not ignored."""
    text = (
        "[2025-05-12 09:44:02] server_args=ServerArgs(model_path='/m', tp_size=1, port=30000)\n"
        "[482688.202206] Memory cgroup out of memory: Killed process 48221 (python3)\n"
        "[W socket.cpp:663] [c10d] The client socket has failed to connect.\n"
    )
    out, ctx = parse_text("sglang", text, tz="UTC", year=2025)
    issues = [o for o in out if isinstance(o, ParseIssue)]
    assert [(i.line_no, i.unparsed) for i in issues] == [(2, True)]
    assert ctx.ignored_lines == 1  # the [W socket.cpp] line is another logger's
