"""The vLLM parser on hostile and random input: it never raises, every line is accounted for,
and lines made of vLLM's own pieces in any order stay parsed or ignored (never a crash)."""

from __future__ import annotations

from datetime import UTC, datetime

from conftest import check_accounting, count_lines, parse_text
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from postmortem.engines.vllm.stream import VllmStream
from postmortem.parsers.base import ParseContext

PIECES = [
    "INFO 05-25 20:03:11 [core.py:61] ",
    "ERROR 13-40 25:61:61 x.py:1] ",
    "(APIServer pid=1) ",
    "(Worker_TP0 pid=99999999999999999999) ",
    "\x1b[1;36m",
    "\x1b[0;0m",
    "2026-01-15T10:00:00.123456789Z stdout F ",
    "2026-01-15T10:00:00Z stderr P ",
    "INFO:     ",
    'x - "GET /health HTTP/1.1" 999 OK',
    "non-default args: {'model': ",
    "{'a': [[[[",
    "Initializing a V1 LLM engine (v0.8.5) with config: model='/m', speculative_config=SpeculativeConfig(",
    "Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 1e999 reqs, Waiting: -1 reqs, GPU KV cache usage: nan%",
    "SpecDecoding metrics: Mean acceptance length: nan, Avg Draft acceptance rate: 1e400%",
    "Model loading took 1e309 GiB and 99999999999999999999 seconds",
    "GPU KV cache size: 1,2,3 tokens",
    "Worker VllmWorkerProcess pid 1 died, exit code: -99999999999999999999",
    "Failed core proc(s): {'EngineCore_DP0': }",
    "CUDA out of memory. Tried to allocate 1e999 GiB. GPU 99999999999 has a total capacity of 0 B of which 0 B is free.",
    "\r",
    "\u202e",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=6).map("".join), max_size=12))
def test_pieces_of_vllm_lines_in_any_order_never_raise(lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode()
    outputs, ctx = parse_text("vllm", data, year=2026, tz="UTC")
    check_accounting(ctx, outputs, count_lines(data))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_any_text_inside_a_capture_never_raises(message: str) -> None:
    """The journal hands the stream a unit's messages: whatever they are, no exception."""
    stream = VllmStream(ParseContext(year=2026), unit="vllm.service")
    for line in message.splitlines() or [message]:
        list(stream.feed(1, line, ts=datetime(2026, 1, 15, tzinfo=UTC)))
    list(stream.close())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join), min_size=1, max_size=8)
)
@example([PIECES[3] + PIECES[0] + PIECES[16], PIECES[0] + PIECES[17], PIECES[0] + PIECES[13]])
def test_pieces_of_vllm_lines_load_into_a_store(lines: list[str]) -> None:
    """What the parser makes of them also fits the store's columns (a pid or a count of 20
    digits overflowed a BIGINT at load: the whole file failed)."""
    import tempfile
    from pathlib import Path

    from postmortem.ingest import IngestOptions, ingest_into
    from postmortem.timeutil import get_zone

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_text(
            "INFO 05-25 20:03:11 [api_server.py:1] vLLM API server version 0.8.5\n" + "\n".join(lines) + "\n"
        )
        opts = IngestOptions(zone=get_zone("UTC"), zone_given=True, year=2026, format="vllm", strict=True)
        summary = ingest_into(str(Path(tmp) / "pm.duckdb"), [str(log)], opts)
        assert [r.status for r in summary.files] == ["ingested"], summary.files


def test_a_cuda_oom_after_the_weights_is_the_kv_caches_not_the_weights() -> None:
    """A vLLM start whose weights loaded ("Model loading took …") and whose KV cache then did
    not fit (``_initialize_kv_caches``) was told as an OOM "while loading the weights"."""
    from conftest import records_of

    from postmortem.records import CudaOom

    def log(*lines: str) -> str:
        return "".join(
            f"(Worker_TP0 pid=7) INFO 11-12 19:41:{i:02d} [x.py:1] {m}\n" for i, m in enumerate(lines)
        )

    oom = "CUDA out of memory. Tried to allocate 14.58 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.20 GiB is free."
    for lines, phase in (
        (("Starting to load model /m...", oom), "weights"),
        (
            ("Starting to load model /m...", "Model loading took 40.25 GiB memory and 414.86 seconds", oom),
            "kv_pool",
        ),
    ):
        outputs, _ = parse_text("vllm", log(*lines), year=2026, tz="UTC")
        (got,) = records_of(outputs, CudaOom)
        assert got.phase == phase, lines


def test_a_bare_traceback_before_ready_is_the_servers_exception() -> None:
    """vLLM 0.6.6's `vllm serve` on a model directory without config.json: a bare traceback, no
    vLLM envelope. Its lines were all ignored, so the report quoted no error at all."""
    from conftest import records_of

    from postmortem.records import ServerEvent

    text = (
        "INFO 11-18 00:43:13 api_server.py:712] vLLM API server version 0.6.6\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/vllm", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "OSError: /models/m does not appear to have a file named config.json.\n"
    )
    outputs, _ = parse_text("vllm", text, year=2024, tz="UTC")
    (ev,) = [e for e in records_of(outputs, ServerEvent) if e.kind == "exception"]
    assert ev.line_no == 5 and ev.message.startswith("OSError: /models/m")
    assert (
        ev.detail is not None and '"header_line_no": 2' in ev.detail and '"exception": "OSError"' in ev.detail
    )


def _engine_first(gap_s: int) -> str:
    """A CRI log whose engine core prints its configuration before its API server's version and
    args lines (seed 161803, night 0: vLLM 0.31), those ``gap_s`` seconds later."""

    def line(s: int, who: str, msg: str) -> str:
        return f"2024-11-07T04:03:{20 + s:02d}.087660000Z stdout F ({who}) INFO 11-07 04:03:{20 + s:02d} [x.py:1] {msg}\n"

    return (
        line(
            0,
            "EngineCore pid=5183",
            "Initializing a V1 LLM engine (v0.31.0) with config: model='/m/l', tensor_parallel_size=8",
        )
        + line(gap_s, "APIServer pid=5174", "vLLM server version 0.31.0, serving model /m/l")
        + line(
            gap_s,
            "APIServer pid=5174",
            "non-default args: {'model': '/m/l', 'port': 30000, 'tensor_parallel_size': 8}",
        )
        + line(gap_s + 2, "Worker_TP0 pid=5175", "Starting to load model /m/l...")
    )


def test_an_engine_config_printed_ahead_of_its_api_args_is_one_start() -> None:
    """The engine core's line came first and was recorded as a run's configuration, then the API
    server's version line began a run of its own: one start read as two, the first (an engine
    line and nothing else) never ready, and systemd's start claimed by it (a phantom load)."""
    from conftest import records_of

    from postmortem.records import ServerConfig, ServerEvent

    outputs, _ = parse_text("vllm", _engine_first(0), year=2024, tz="UTC")
    (cfg,) = records_of(outputs, ServerConfig)
    assert (cfg.line_no, cfg.pid, cfg.port, cfg.tp_size) == (3, 5174, 30000, 8)
    assert [e.line_no for e in records_of(outputs, ServerEvent) if e.kind == "server_args"] == [3]


def test_an_engine_config_long_before_the_next_version_line_is_its_own_run() -> None:
    """A run that printed its engine's configuration and nothing else, then a restart (its
    version line after the new process's imports): two starts, in line order."""
    from conftest import records_of

    from postmortem.records import ServerConfig

    outputs, _ = parse_text("vllm", _engine_first(30), year=2024, tz="UTC")
    assert [c.line_no for c in records_of(outputs, ServerConfig)] == [1, 3]
    text = "\n".join(_engine_first(0).splitlines()[::3]) + "\n"  # the engine line, then loading
    outputs, _ = parse_text("vllm", text, year=2024, tz="UTC")
    assert [(type(r).__name__, r.line_no) for r in outputs if hasattr(r, "line_no")][:3] == [
        ("ServerConfig", 1),
        ("ServerEvent", 1),
        ("ServerEvent", 2),
    ]
