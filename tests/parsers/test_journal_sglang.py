"""SGLang output captured by a journal: the vectorised path (journal-short's Arrow pass plus the
SGLang module's batch/access pass, journal time winning) stores exactly what the per-line
reference path stores (every line through ``SglangStream.feed``)."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import pytest
from conftest import check_accounting, make_context, serialise
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postmortem.parsers.base import TableBatch, chunks_of
from postmortem.parsers.journal import sink, vector
from postmortem.parsers.journal.short import ShortState, entry_groups

_STAMPS = {
    "iso": "%Y-%m-%dT%H:%M:%S+0000",
    "iso-precise": "%Y-%m-%dT%H:%M:%S.{us}+00:00",
    "month": "%b %d %H:%M:%S",
    "unix": "{epoch}.{us}",
    "full": "%a %Y-%m-%d %H:%M:%S UTC",
}

_DECODE = (
    "Decode batch, #running-req: {a}, #token: {b}, token usage: 0.{c:02d}, cuda graph: True, "
    "gen throughput (token/s): {d}.{c:02d}, #queue-req: {e}"
)
_DECODE_OLD = (
    "Decode batch. #running-req: {a}, #token: {b}, token usage: 0.{c:02d}, accept len: 2.{e}1, "
    "accept rate: 0.4{e}, cuda graph: False, gen throughput (token/s): {d}.00, #queue-req: {e}, "
)
_PREFILL = (
    "Prefill batch, #new-seq: 1, #new-token: {b}, #cached-token: {a}, token usage: 0.{c:02d}, "
    "#running-req: {a}, #queue-req: {e}, cuda graph: False, input throughput (token/s): {d}.50"
)
_PREFILL_HYBRID = (
    "Prefill batch, #new-seq: 1, #new-token: {b}, #cached-token: 0, full token usage: 0.0{e}, "
    "swa token usage: 0.{c:02d}, #running-req: {a}, #queue-req: 0, #pending-token: {e}"
)


def _sglang_message(rnd: random.Random, prefix: str, prefix_ms: str) -> str:
    """One SGLang message: mostly batch and access lines, then everything that is not."""
    v = {"a": rnd.randint(0, 300), "b": rnd.randint(0, 900000), "c": rnd.randint(0, 99)}
    v |= {"d": rnd.randint(0, 3000), "e": rnd.randint(0, 9)}
    shapes: list[tuple[int, Any]] = [
        (30, lambda: f"[{prefix} TP0] " + _DECODE.format(**v)),
        (6, lambda: f"[{prefix} DP1 TP3] " + _DECODE_OLD.format(**v)),
        (6, lambda: f"[{prefix} TP0] " + _PREFILL.format(**v)),
        (3, lambda: f"[{prefix} TP1] " + _PREFILL_HYBRID.format(**v)),
        (3, lambda: f"[{prefix_ms} TP0] " + _DECODE.format(**v)),
        (14, lambda: f'[{prefix}] INFO:     10.0.0.{v["e"]}:{v["b"]} - "POST /generate HTTP/1.1" 200 OK'),
        (2, lambda: f'[{prefix}] INFO:     127.0.0.1:4 - "GET /health HTTP/1.1" {rnd.choice((200, 503))} x'),
        (1, lambda: f'[{prefix}] INFO:     1.2.3.4:5\tx - "GET /v1/models HTTP/1.1" 200 OK'),
        (1, lambda: f"[{prefix} TP0] Decode batch, #running-req: x, #token: 5, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch, #running-req: 1, largest-len: 9, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch, #running-req: 1, shiny: 3, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch [7], #running-req: 1, #token: 2, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch, #running-req: ٣, #token: 2, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch, #token: 99999999999999999999, #queue-req: 0"),
        (1, lambda: f"[{prefix} TP0] Decode batch, #token: 5, #full token: 7, token usage: 1e-3"),
        (1, lambda: "[2025-02-30 10:00:00 TP0] " + _DECODE.format(**v)),
        (1, lambda: f"[{prefix},123 TP0] " + _DECODE.format(**v)),
        (1, lambda: f"[{prefix}.١٢٣ TP0] " + _DECODE.format(**v)),  # non-ASCII digits
        (1, lambda: f"[{prefix} TP١] " + _DECODE.format(**v)),
        (1, lambda: f"[{prefix}.123456 EP2 DP1 TP3] " + _PREFILL.format(**v)),
        (1, lambda: f"[{prefix} TP0] Scheduler hit an exception: Traceback (most recent call last):"),
        (1, lambda: '  File "/sglang/srt/managers/scheduler.py", line 9, in event_loop_normal'),
        (1, lambda: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
        (1, lambda: f"[{prefix}] Rank 0 scheduler is dead. Please check if there are relevant logs."),
        (1, lambda: "Exit code: -9"),
        (1, lambda: f"[{prefix}] The server is fired up and ready to roll!"),
        (1, lambda: f"[{prefix} TP0] Load weight begin. avail mem=77.43 GB"),
        (1, lambda: f"[{prefix}] server_args=ServerArgs(model_path='/m', tp_size=2, port=30000)"),
        (1, lambda: f'[{prefix}] INFO:     1.2.3.4:5 - "GET /x HTTP/1.1" 200 OK hit an exception'),
        (1, lambda: f"[{prefix} TP0] " + _DECODE.format(**v) + f"\r[{prefix} TP0] " + _PREFILL.format(**v)),
        (
            1,
            lambda: (
                f'[{prefix}] INFO:     1.2.3.4:5 - "GET /x HTTP/1.1" 200 OK#012[{prefix} TP0] Decode batch, #token: 1'
            ),
        ),
        (1, lambda: "Capturing batches (bs=1 avail_mem=1.00 GB): 100%|##| 4/4 [00:01<00:00,  3.10it/s]"),
        (1, lambda: "some unrelated stdout line"),
    ]
    weights = [w for w, _ in shapes]
    return str(rnd.choices([f for _, f in shapes], weights)[0]())


def _oom_record(pid: int) -> list[str]:
    """The kernel lines of one memory-cgroup OOM kill (6.8 layout)."""
    return [
        "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        f"CPU: 3 PID: {pid} Comm: python3 Not tainted 6.8.0-60-generic #63-Ubuntu",
        "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 04/12/2024",
        "memory: usage 671088640kB, limit 671088640kB, failcnt 1",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name",
        f"[{pid:7d}]  1001 {pid:5d} 71254331 20344687 19893101   189442    262144 171999232        0             0 python3",
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,oom_memcg=/system.slice/"
        f"sglang.service,task_memcg=/system.slice/sglang.service,task=python3,pid={pid},uid=1001",
        f"Memory cgroup out of memory: Killed process {pid} (python3) total-vm:285017324kB, "
        "anon-rss:79572404kB, file-rss:757768kB, shmem-rss:1048576kB, UID:1001 pgtables:167968kB oom_score_adj:0",
    ]


def sglang_journal(seed: int, n: int, mode: str = "iso") -> str:
    """A journal export in ``mode`` mixing SGLang stdout of several processes and units with
    systemd, kernel, cron and odd lines (deterministic for a seed)."""
    rnd = random.Random(seed)
    fmt = _STAMPS[mode]
    t = 1_741_942_800 + rnd.randint(0, 86400)
    sglang_idents = ["python3[4242]:", "python3[4243]:", "sglang.service[77]:", "sglang.service[78]:"]
    out: list[str] = []
    for _ in range(n):
        t += rnd.choice((0, 0, 1, 2))
        tm = time.gmtime(t)
        us = f"{rnd.randint(0, 999_999):06d}"
        stamp = time.strftime(fmt.replace("{us}", us).replace("{epoch}", str(t)), tm)
        local = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t - rnd.choice((0, 0, 1))))
        host = "h1" if rnd.random() < 0.9 else "h2"
        r = rnd.random()
        if r < 0.80:
            ident = rnd.choices(sglang_idents, (8, 2, 2, 1))[0]
            msg = _sglang_message(rnd, local, f"{local}.{rnd.randint(0, 999):03d}")
            out.append(f"{stamp} {host} {ident} {msg}")
        elif r < 0.84:
            out.append(f"{stamp} {host} CRON[{rnd.randint(100, 120)}]: (root) CMD (healthcheck)")
        elif r < 0.875:
            out.append(f"{stamp} {host} kernel: mlx5_core 0000:1a:00.0: poll_health: device ok")
        elif r < 0.88:
            # an OOM record, its lines interleaved with other output: its plain lines ("CPU: …",
            # "Hardware name: …") belong to the record, the others stay kernel_messages only
            pid = rnd.randint(1000, 9999)
            for line in _oom_record(pid):
                out.append(f"{stamp} {host} kernel: {line}")
                if rnd.random() < 0.3:
                    out.append(f"{stamp} {host} kernel: mlx5_core 0000:1a:00.0: poll_health: device ok")
                if rnd.random() < 0.3:
                    out.append(
                        f"{stamp} {host} python3[4242]: [{local} TP0] "
                        + _DECODE.format(a=1, b=2, c=3, d=4, e=5)
                    )
        elif r < 0.90:
            unit = rnd.choice(("sglang.service", "other.service"))
            what = rnd.choice(
                (f"Started {unit} - X.", f"{unit}: Main process exited, code=killed, status=9/KILL")
            )
            out.append(f"{stamp} {host} systemd[1]: {what}")
        elif r < 0.93:
            out.append("    continued line")
        elif r < 0.94:
            out.append(rnd.choice(("", "junk", "░░ Subject: x", "-- Logs begin at x --")))
        elif r < 0.96:
            out.append(f"{stamp} python3[4242]: [{local} TP0] " + _DECODE.format(a=1, b=2, c=3, d=4, e=5))
        else:
            out.append(
                f'{stamp} {host} sglang-router[9]: [{local}] INFO:     1.1.1.1:1 - "GET / HTTP/1.1" 200 OK'
            )
    return "\n".join(out)


def _run(text: str, vector_path: bool, chunk_lines: int) -> tuple[list[str], tuple[int, int], Counter[str]]:
    ctx = make_context(year=2025, tz="UTC")
    state = ShortState(ctx)
    if not vector_path:
        state.vector = None
    out: list[Any] = []
    for group in entry_groups(chunks_of(text.split("\n"), 1, chunk_lines)):
        out.extend(state.chunk(group))
    out.extend(state.close())
    check_accounting(ctx, out, len(text.split("\n")))
    kinds: Counter[str] = Counter()
    for o in out:
        if isinstance(o, TableBatch):
            kinds[o.table] += o.data.num_rows
        else:
            kinds[type(o).__name__] += 1
    return sorted(serialise(out)), (ctx.parsed_lines, ctx.ignored_lines), kinds


@pytest.mark.parametrize(
    ("seed", "mode"), [(1, "iso"), (2, "iso-precise"), (3, "unix"), (4, "full"), (5, "month")]
)
def test_fast_sglang_routing_stores_what_the_per_line_path_stores(seed: int, mode: str) -> None:
    text = sglang_journal(seed, 6000, mode)
    fast, fast_counts, kinds = _run(text, True, 1500)
    slow, slow_counts, slow_kinds = _run(text, False, 1500)
    assert fast_counts == slow_counts
    assert fast == slow
    if mode == "month":
        return  # year inference keeps a chunk with host-less entries on the per-line path
    # the vectorised path did run: most batch and access rows came as Arrow blocks (one unit's
    # two processes and the odd shapes stay per-line)
    assert kinds["server_stats"] > 1500 and kinds["http_requests"] > 600, kinds
    assert slow_kinds["server_stats"] == 0 and slow_kinds["ServerStats"] > 3000
    # plain kernel lines came as blocks, the OOM records (plain lines inside them too) per line
    assert kinds["kernel_messages"] > 100 and kinds["OomKill"] > 5, kinds


def test_fast_sglang_with_a_tiny_check_budget_and_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector, "MIN_LINES", 0)
    monkeypatch.setattr(sink, "ENGINE_CHECK_BUDGET", 3)
    text = sglang_journal(11, 3000)
    for chunk_lines in (7, 64, 500):
        fast, fast_counts, kinds = _run(text, True, chunk_lines)
        slow, slow_counts, _ = _run(text, False, chunk_lines)
        assert fast_counts == slow_counts
        assert fast == slow
        assert kinds["server_stats"] > 500


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    n=st.integers(min_value=0, max_value=300),
    mode=st.sampled_from(sorted(_STAMPS)),
    chunk_lines=st.integers(min_value=1, max_value=120),
    budget=st.integers(min_value=1, max_value=40),
)
def test_fast_sglang_routing_property(seed: int, n: int, mode: str, chunk_lines: int, budget: int) -> None:
    text = sglang_journal(seed, n, mode)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vector, "MIN_LINES", 0)
        mp.setattr(sink, "ENGINE_CHECK_BUDGET", budget)
        fast, fast_counts, _ = _run(text, True, chunk_lines)
        slow, slow_counts, _ = _run(text, False, chunk_lines)
    assert fast_counts == slow_counts
    assert fast == slow


@pytest.mark.parametrize(
    "stamp",
    [
        "2025-03-14T02:00:00-0700",
        "2025-03-14T14:30:00+05:30",
        "2025-03-14T09:00:00Z",
        "2025-03-14T09:00:00+23:59",
        "2025-03-14T09:00:00+2400",  # not an offset fromisoformat takes
        "2025-02-30T09:00:00+00:00",  # no such day
        "0000-03-14T09:00:00+00:00",  # no year 0
        "2025-03-14T09:00:00",  # no zone: the --tz zone
        "1741942800",
        "99999999999",
        "999999999999",  # past year 9999
    ],
)
def test_vector_stamps_are_read_as_the_stamp_parser_reads_them(stamp: str) -> None:
    """Distinct stamps converted in Arrow (zone offsets, epoch seconds) equal StampParser's."""
    base = "2025-03-14T09:00:00+00:00" if "T" in stamp else "1741942800"
    lines = [f"{base} h app[1]: line {i}" for i in range(100)]
    lines[50] = f"{stamp} h app[1]: odd stamp"
    text = "\n".join(lines)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vector, "MIN_LINES", 0)
        fast, fast_counts, kinds = _run(text, True, 100)
        slow, slow_counts, _ = _run(text, False, 100)
    assert fast_counts == slow_counts
    assert fast == slow
    assert kinds["journal_entries"] >= 99


def test_lines_after_a_dropped_overlong_line_keep_their_numbers() -> None:
    """The reader drops an overlong line between two chunks: the entry carried over from the
    first chunk must not renumber the second chunk's lines (regression: they were one short)."""
    from postmortem.parsers.base import LineChunk

    first = [f"2025-03-14T09:00:{i:02d}+0000 h app[1]: line {i + 1}" for i in range(50)]
    second = [f"2025-03-14T09:01:{i:02d}+0000 h app[1]: line {i + 52}" for i in range(50)]
    for vector_path in (True, False):
        ctx = make_context(year=2025, tz="UTC")
        state = ShortState(ctx)
        if not vector_path:
            state.vector = None
        out: list[Any] = []
        chunks = [LineChunk.from_lines(1, first), LineChunk.from_lines(52, second)]  # line 51 dropped
        for group in entry_groups(chunks):
            out.extend(state.chunk(group))
        out.extend(state.close())
        rows = [r for o in out if isinstance(o, TableBatch) for r in o.data.to_pylist()]
        assert {r["line_no"]: r["message"] for r in rows}[52] == "line 52"
        assert sorted(r["line_no"] for r in rows) == [*range(1, 51), *range(52, 102)]


def test_a_host_less_line_that_starts_a_stream_is_seen_before_the_next_lines_are_counted() -> None:
    """Found by the property test: a host-less SGLang line (per-line path) starts the stream and
    the next line of the same process (vectorised, no '[') was counted against the check budget
    in bulk before it — its 'Exit code: -9' was lost. The per-line path stores the event."""
    text = "\n".join(
        [
            "Sat 2025-03-15 03:22:54 UTC h1 CRON[102]: (root) CMD (healthcheck)",
            "Sat 2025-03-15 03:22:55 UTC python3[4242]: [2025-03-15 03:22:54 TP0] "
            + _DECODE.format(a=1, b=2, c=3, d=4, e=5),
            "Sat 2025-03-15 03:22:56 UTC h2 python3[4242]: Exit code: -9",
            "Sat 2025-03-15 03:22:58 UTC h1 python3[4242]: [2025-03-15 03:22:58] INFO:     "
            '10.0.0.5:673289 - "POST /generate HTTP/1.1" 200 OK',
        ]
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vector, "MIN_LINES", 0)
        fast, fast_counts, _ = _run(text, True, 2)
        slow, slow_counts, _ = _run(text, False, 2)
    assert fast_counts == slow_counts
    assert fast == slow
    assert any('"kind": "scheduler_killed"' in row for row in fast)
