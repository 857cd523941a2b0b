"""What a generated night is: the scenario (every knob, drawn from a seed) and the truth it implies.

A :class:`Scenario` is frozen and complete: :func:`scenarios.gen.write_night` turns it into files
without drawing anything that changes a fact (random draws inside the writer only pick numbers
that no check reads, such as throughputs or client ports). :func:`draw` picks one scenario from
``(seed, index)``; knobs are drawn independently where the real world lets them vary
independently, and constrained where it does not (systemd-oomd needs a journal, memory.oom.group
a 4.19+ kernel, ``StatusUnitFormat=`` systemd 249+). The engine (SGLang, or vLLM on about 40 % of
nights) is drawn last, from its own stream, so that a night drawn before it keeps every knob.

>>> s = draw(20251205, 0)
>>> s == draw(20251205, 0), s.index
(True, 0)
>>> s.page_kb in (4, 64) and s.systemd in {d.systemd for d in DISTROS}
True
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class Distro:
    name: str
    kernel: str  # the OOM record's format family (see kernel.py)
    systemd: int
    syslog: str  # rsyslog's file format: rfc3164 | rfc3339 | el7 (``systemd:`` without a pid)
    arm64: bool = False  # a 64 KiB-page arm64 kernel exists for it


DISTROS = (
    Distro("el7", "3.10", 219, "el7"),
    Distro("ubuntu18", "4.15", 237, "rfc3164"),
    Distro("el8", "4.18", 239, "rfc3164"),
    Distro("ubuntu20", "5.4", 245, "rfc3164"),
    Distro("debian11", "5.10", 247, "rfc3164"),
    Distro("ubuntu22", "5.15", 249, "rfc3164", arm64=True),
    Distro("el9", "5.14", 252, "rfc3339", arm64=True),
    Distro("ubuntu24", "6.8", 255, "rfc3164", arm64=True),
    Distro("debian13", "6.12", 257, "rfc3339", arm64=True),
    Distro("fedora43", "6.18", 259, "rfc3339", arm64=True),
)
DISTRO = {d.name: d for d in DISTROS}

ZONES = ("UTC", "America/Los_Angeles", "Europe/Berlin", "Asia/Tokyo", "America/New_York", "Asia/Kolkata")

#: kill causes; a start-up failure has its own (gpu_oom for a CUDA OOM loop, crash for an exit loop)
CAUSES = ("cgroup_oom", "host_oom", "oomd", "earlyoom", "gpu_oom")
RECOVERIES = ("restart", "operator", "fallback", "onfailure", "none")  # and "manual" (drawn later)
DMESG_FORMATS = ("raw", "ctime", "iso", "reltime", "prio", "decode", "kmsg")
JOURNAL_MODES = (
    "short",
    "short-iso",
    "short-precise",
    "short-monotonic",
    "short-full",
    "cat",
    "verbose",
    "export",
    "json",
    "syslog",
)
SGLANG_VERSIONS = ("0.4.6.post1", "0.5.2", "0.5.10", "0.5.17")
#: how the server's lines reach its file: as written, or inside another tool's envelope
ENVELOPES = ("plain", "pylogging", "cri", "ray", "supervisor")
NVIDIA_KINDS = (None, "loop", "nounits", "date-lines")
NOISE = ("oneshot", "failing-oneshot", "timer", "restarted-daemon", "session")

MODELS = (
    ("/models/Qwen3-235B-A22B", "Qwen3ForCausalLM", "qwen3"),
    ("/models/Kimi-K2.6", "DeepseekV3ForCausalLM", "k26"),
    ("/models/Llama-3.3-70B-Instruct", "LlamaForCausalLM", "llama70b"),
    ("/models/GLM-4.6", "Glm4MoeForCausalLM", "glm46"),
    ("/models/gpt-oss-120b", "GptOssForCausalLM", "gptoss"),
)
HOSTS = ("gpu-node-7", "h200-a03", "infer-12", "dgx-b7", "gh200-r2n4", "node-31")


@dataclass(frozen=True)
class Server:
    """One SGLang server unit on the host."""

    unit: str
    description: str
    model: str
    arch: str  # the model class in ``Load weight end. type=…``
    port: int
    tp: int
    gpus: tuple[int, ...]
    log_name: str  # its own log file's name (when its lines go to a file)


@dataclass(frozen=True)
class Scenario:
    index: int
    seed: int  # this night's own seed: numbers no check reads are drawn from it
    host: str
    zone: str
    distro: str
    kernel: str
    systemd: int
    arch: str  # x86_64 | aarch64
    page_kb: int  # 4 or 64: the task table's rss is in pages of this size
    status_format: str  # StatusUnitFormat=: description | combined | name (combined/name: v249+)
    cgroup_v2: bool
    cause: str
    startup: str | None  # None, "cuda_oom_loop" or "start_limit": the unit never got ready
    oom_group: bool
    recovery: str
    kernel_in: tuple[str, ...]  # where the kernel's OOM record is: "dmesg", "journal"
    dmesg_format: str
    journal_mode: str | None  # None: no journal at all
    sglang_in: str  # "file" or "journal"
    sglang_version: str
    envelope: str
    nvidia: str | None
    noise: tuple[str, ...]
    since_given: bool
    host_given: bool  # --host on the command line
    ident: str  # the server's SYSLOG_IDENTIFIER in the journal (python3, or SyslogIdentifier=)
    gpus: int
    gpu_total_mib: int
    server: Server
    other: Server | None  # a second, unrelated server on the same host
    fallback: Server | None
    journal_name: str
    dmesg_name: str
    nvidia_name: str
    kill_utc: datetime  # the kill, the crash, or a start-up failure's first failure
    boot_before_s: float  # how long the host had been up at the kill
    serving_s: float  # how long the killed run served before the kill (its load is before that)
    restart_sec: float
    react_s: float  # operator's reaction: kill → their systemctl command
    release_s: float  # kill → GPU memory released
    load_s: dict[str, float] = field(default_factory=dict)  # the recovery load's phase lengths
    mtime_after_s: float = 3 * 3600.0  # the files' mtime: collected this long after the night
    nvidia_interval_s: float = 5.0  # nvidia-smi's loop interval (-l)
    journal_split: bool = False  # the journal in two files (rotated, or exported in two parts)
    #: the servers' engine: "sglang" or "vllm" (then ``vllm_version``, and ``sglang_in``/``envelope``
    #: say where the vLLM servers' lines go)
    engine: str = "sglang"
    vllm_version: str = ""

    @property
    def tag(self) -> str:
        """A short description for test ids and findings."""
        kin = "+".join(self.kernel_in) or "-"
        parts = [
            f"n{self.index}",
            self.distro,
            self.cause if not self.startup else self.startup,
            f"rec={self.recovery}",
            f"j={self.journal_mode or '-'}",
            f"k={kin}:{self.dmesg_format}",
            f"sg={self.sglang_in}:{self.sglang_version}:{self.envelope}"
            if self.engine == "sglang"
            else f"vl={self.sglang_in}:{self.vllm_version}:{self.envelope}",
        ]
        return " ".join(parts)


@dataclass(frozen=True)
class Victim:
    pid: int
    comm: str


@dataclass(frozen=True)
class Truth:
    """What really happened, as the checks compare it with the report."""

    host: str
    cause: str  # the project's cause names: cgroup_oom host_oom oomd earlyoom gpu_oom crash
    unit: str  # the real unit, or "unknown" when nothing in the logs names it
    real_unit: str  # the real unit even when the logs do not name it
    victims: tuple[Victim, ...]
    chosen: Victim | None  # the kernel's (or oomd's/earlyoom's) chosen victim
    victim_anon_kb: int | None  # the chosen victim's anon-rss in kB (the kill line's)
    consumers_rss_kib: int | None  # the task table's total rss in KiB (pages × page size)
    kill_utc: datetime
    startup_failure: bool
    start_attempts: int  # start-up failures: how many starts failed
    recovery_unit: str | None
    #: other answers the logs cannot tell from it: the recovery unit's Description when no line
    #: names it (description-form job lines in a text journal), None when there is no journal
    recovery_aliases: tuple[str | None, ...]
    recovered_utc: datetime | None
    downtime_s: float | None
    recovery_load_s: float | None
    recovery_phases: dict[str, float]
    running_at_kill: int | None
    queued_at_kill: int | None
    last_activity_utc: datetime | None
    gpu_freed: bool | None  # None: nothing sampled the GPUs
    gpu_freed_utc: datetime | None
    restart_count: int
    unit_named: bool  # whether the logs' content names the unit (journal fields, cgroup path)
    year_evidence: bool  # a dated source or --since tells the year of year-less lines
    datable: bool  # some source gives the kill a wall-clock time (else only "undated" is right)
    killed_unit_back: bool  # the killed unit itself is active again after the kill
    death_utc: datetime | None = None  # systemd saw the main process exit (its failure follows)
    other_starts: tuple[tuple[str, datetime], ...] = ()  # units that are not servers starting
    journal_cut_utc: datetime | None = None  # a split journal's second file begins here
    sampled_after_kill: bool = False  # nvidia-smi sampled the GPUs in the 2 minutes after the kill
    first_sample_after_s: float | None = None  # the kill → nvidia-smi's next sample
    #: only dmesg -e/-H dates the kill, to its minute (no systemd line of it has a wall-clock time)
    minute_only: bool = False


def _pick(
    rng: random.Random, options: tuple[object, ...], weights: tuple[float, ...] | None = None
) -> object:
    return rng.choices(options, weights=weights)[0]


def night_seed(seed: int, index: int) -> int:
    """The seed of night ``index`` of a run with ``seed``: stable across Python versions."""
    return zlib.crc32(f"{seed}:{index}".encode())


def draw(seed: int, index: int) -> Scenario:  # noqa: C901 - 20 > 15: listed in docs/dev/README.md
    """Night ``index`` of the run with ``seed``."""
    rng = random.Random(night_seed(seed, index))
    distro = rng.choice(DISTROS)
    arch = "aarch64" if distro.arm64 and rng.random() < 0.35 else "x86_64"
    page_kb = 64 if arch == "aarch64" and rng.random() < 0.7 else 4
    status_format = "description"
    if distro.systemd >= 249:
        status_format = str(_pick(rng, ("description", "combined", "name"), (0.3, 0.55, 0.15)))
    cgroup_v2 = distro.systemd >= 247 or (distro.systemd >= 243 and rng.random() < 0.5)

    startup: str | None = None
    roll = rng.random()
    if roll < 0.08:
        startup = "cuda_oom_loop"
    elif roll < 0.13:
        startup = "start_limit"

    journal_mode = rng.choices((*JOURNAL_MODES, None), (3, 2, 2, 1, 1, 1, 1, 3, 2, 3, 1.5))[0]
    cause = str(_pick(rng, CAUSES, (4, 2.5, 1, 1, 1.2)))
    if journal_mode is None and cause in ("oomd", "earlyoom"):
        cause = "cgroup_oom"  # their lines exist only in the journal
    if cause == "oomd" and (distro.systemd < 248 or not cgroup_v2):
        cause = "host_oom"
    if journal_mode is None:
        startup = None  # a start-up loop is told by systemd's lines
    if journal_mode in ("cat", "short-monotonic"):
        cause, startup = "cgroup_oom", None  # no wall clock in the journal: dmesg -T/iso dates the kill
    if startup == "cuda_oom_loop":
        cause = "gpu_oom"
    elif startup == "start_limit":
        cause = "crash"

    kernel_oom = cause in ("cgroup_oom", "host_oom") and startup is None
    kernel_in: tuple[str, ...] = ()
    if kernel_oom:
        if journal_mode is None:
            kernel_in = ("dmesg",)
        else:
            kernel_in = rng.choices((("dmesg",), ("journal",), ("dmesg", "journal")), (2, 3, 2))[0]
    dmesg_format = str(rng.choice(DMESG_FORMATS))
    if journal_mode in ("cat", "short-monotonic"):
        kernel_in, dmesg_format = ("dmesg",), str(rng.choice(("ctime", "iso")))
    oom_group = (
        kernel_oom and cgroup_v2 and distro.kernel not in ("3.10", "4.15", "4.18") and rng.random() < 0.5
    )

    sglang_in = "journal" if journal_mode is not None and rng.random() < 0.4 else "file"
    if journal_mode == "cat" and sglang_in == "journal":
        sglang_in = "file"  # -o cat loses which process wrote a line
    sglang_version = str(rng.choice(SGLANG_VERSIONS))
    envelope = "plain"
    if sglang_in == "file" and rng.random() < 0.35:
        envelope = str(rng.choice(ENVELOPES[1:]))

    recovery = str(_pick(rng, RECOVERIES, (3, 2, 2, 1, 1.5)))
    if startup is not None:
        recovery = "none"
    if journal_mode is None and recovery in ("onfailure",):
        recovery = "fallback"

    tp = int(_pick(rng, (8, 4, 2, 1), (5, 3, 1, 1)))
    gpus = 8 if tp > 4 or rng.random() < 0.6 else 4
    two = tp <= gpus // 2 and rng.random() < 0.35
    model, model_arch, slug = MODELS[rng.randrange(len(MODELS))]
    unit_style = rng.randrange(5)
    unit = (
        f"sglang-{slug}.service",
        f"llm-{slug}.service",
        f"sglang@{slug}.service",
        "inference.service",
        f"serve-{slug}.service",
    )[unit_style]
    desc = (
        f"SGLang {model.rsplit('/', 1)[1]} server",
        f"LLM inference ({slug}, TP{tp})",
        f"SGLang server for {slug}",
        "Inference API",
        f"Serve {model.rsplit('/', 1)[1]}",
    )[unit_style]
    naming = rng.choices(("unit", "stem", "arbitrary"), (35, 15, 50))[0]
    log_name = _log_name(rng, unit, slug, str(naming))
    port = int(rng.choice((30000, 30001, 8000, 8080)))
    server = Server(unit, desc, model, model_arch, port, tp, tuple(range(tp)), log_name)
    other = None
    if two:
        o_model, o_arch, o_slug = MODELS[(MODELS.index((model, model_arch, slug)) + 1) % len(MODELS)]
        other = Server(
            f"sglang-{o_slug}.service",
            f"SGLang {o_slug} server",
            o_model,
            o_arch,
            port + 1,
            tp,
            tuple(range(tp, 2 * tp)),
            _log_name(rng, f"sglang-{o_slug}.service", o_slug, str(naming)),
        )
    fallback = None
    if recovery in ("fallback", "onfailure"):
        f_unit = str(
            rng.choice((f"{unit.removesuffix('.service')}-fallback.service", f"fallback-{slug}.service"))
        )
        fallback = Server(
            f_unit,
            f"Fallback for {slug}",
            model,
            model_arch,
            port,
            tp,
            tuple(range(tp)),
            _log_name(rng, f_unit, slug, str(naming)),
        )

    year = rng.choice((2024, 2025, 2026))
    if rng.random() < 0.12:  # near New Year: year-less logs cross a year
        kill_local = datetime(year, 1, 1, 0, 0, tzinfo=UTC) + timedelta(minutes=rng.uniform(5, 90))
    else:
        kill_local = datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=rng.uniform(2, 362))
    kill_utc = kill_local.replace(microsecond=rng.randrange(1_000_000))

    weights_s = rng.uniform(40, 420)
    load_s = {
        "pre": rng.uniform(4, 14),  # start → Load weight begin
        "weights": weights_s,
        "kv": rng.uniform(1.5, 6),
        "graphs": rng.uniform(15, 130),
        "post": rng.uniform(8, 25),  # graphs captured → ready
    }
    zone = str(rng.choice(ZONES))
    noise = tuple(n for n in NOISE if rng.random() < 0.45) if journal_mode is not None else ()
    scenario = Scenario(
        index=index,
        seed=night_seed(seed, index),
        host=str(rng.choice(HOSTS)),
        zone=zone,
        distro=distro.name,
        kernel=distro.kernel,
        systemd=distro.systemd,
        arch=arch,
        page_kb=page_kb,
        status_format=status_format,
        cgroup_v2=cgroup_v2,
        cause=cause,
        startup=startup,
        oom_group=oom_group,
        recovery=recovery,
        kernel_in=kernel_in,
        dmesg_format=dmesg_format,
        journal_mode=journal_mode,
        sglang_in=sglang_in,
        sglang_version=sglang_version,
        envelope=envelope,
        nvidia=rng.choice(NVIDIA_KINDS),
        noise=noise,
        since_given=rng.random() < 0.6,
        host_given=rng.random() < 0.25,
        ident=str(rng.choice(("python3", "python3", "python", unit.removesuffix(".service").split("@")[0]))),
        gpus=gpus,
        gpu_total_mib=int(rng.choice((81559, 143771, 97871))),
        server=server,
        other=other,
        fallback=fallback,
        journal_name=_journal_name(rng, journal_mode),
        dmesg_name=str(rng.choice(("dmesg.txt", "dmesg.log", "kernel.log", "dmesg-out.txt"))),
        nvidia_name=str(rng.choice(("nvidia-smi.csv", "gpu.csv", "smi-loop.log", "gpus.txt"))),
        kill_utc=kill_utc,
        boot_before_s=rng.uniform(4 * 3600, 20 * 86400),
        serving_s=rng.uniform(20 * 60, 70 * 60),
        restart_sec=float(rng.choice((5.0, 10.0, 30.0, 60.0))),
        react_s=rng.uniform(90, 900),
        release_s=rng.uniform(0.8, 9.0),
        load_s=load_s,
    )
    scenario = replace(scenario, **_later_knobs(rng, recovery, model, model_arch, port, tp, journal_mode))
    return _engine_knobs(scenario, seed, index)


VLLM_VERSIONS = ("0.4.3", "0.6.6", "0.8.5", "0.10.2", "0.20.1", "0.31.0")  # (tests/scenarios/vllm.py)
#: the envelopes a vLLM server's file comes in besides its own lines
VLLM_ENVELOPES = ("cri", "docker", "supervisor")


def _engine_knobs(s: Scenario, seed: int, index: int) -> Scenario:
    """The engine, drawn from its own stream so that every knob drawn before it stays as it was:
    about 40 % of nights run vLLM servers (the killed one, the fallback, the neighbour), renamed
    after it (``sglang-…`` units, files and Descriptions become ``vllm-…``)."""
    rng = random.Random(zlib.crc32(f"{seed}:{index}:engine".encode()))
    if rng.random() >= 0.4:
        return s
    version = str(rng.choice(VLLM_VERSIONS))
    if version == "0.4.3" and s.server.tp == 1 and s.cause == "earlyoom":
        # earlyoom's SIGTERM would reach 0.4.3's one process, uvicorn: a clean exit, no failure
        version = str(rng.choice(VLLM_VERSIONS[1:]))
    envelope = s.envelope if s.envelope == "plain" else str(rng.choice(VLLM_ENVELOPES))

    def renamed(x: Server | None) -> Server | None:
        if x is None:
            return None
        return replace(
            x,
            unit=x.unit.replace("sglang", "vllm"),
            description=x.description.replace("SGLang", "vLLM"),
            log_name=x.log_name.replace("sglang", "vllm"),
        )

    server = renamed(s.server)
    assert server is not None
    ident = s.ident.replace("sglang", "vllm")
    if ident in ("python3", "python") and rng.random() < 0.3:
        ident = "vllm"  # ``ExecStart=/usr/local/bin/vllm serve …``
    return replace(
        s,
        engine="vllm",
        vllm_version=version,
        envelope=envelope,
        ident=ident,
        server=server,
        other=renamed(s.other),
        fallback=renamed(s.fallback),
    )


def _later_knobs(
    rng: random.Random,
    recovery: str,
    model: str,
    model_arch: str,
    port: int,
    tp: int,
    journal_mode: str | None,
) -> dict[str, object]:
    """Knobs added after the first survey, drawn last so that earlier nights keep theirs."""
    out: dict[str, object] = {
        "mtime_after_s": 3 * 3600.0 if rng.random() < 0.6 else rng.uniform(40, 500) * 86400,
        "nvidia_interval_s": float(rng.choices((5.0, 10.0, 30.0), (6, 2, 2))[0]),
        "journal_split": journal_mode is not None and rng.random() < 0.2,
    }
    if recovery in ("operator", "fallback") and rng.random() < 0.3:
        # the operator starts a server by hand (nohup …), no unit: the service is back, no unit did it
        name = str(rng.choice(("nohup.out", "manual.log", "sglang-manual.log")))
        out["recovery"] = "manual"
        out["fallback"] = Server("", "", model, model_arch, port, tp, tuple(range(tp)), name)
    return out


def _journal_name(rng: random.Random, mode: str | None) -> str:
    if mode is None:
        return ""
    if mode == "syslog":
        return str(rng.choice(("syslog", "messages", "syslog.1")))
    if mode == "export":
        return str(rng.choice(("journal.export", "host.export", "journal-1.txt")))
    if mode == "json":
        return str(rng.choice(("journal.json", "journal-1.txt", "j.jsonl")))
    return str(rng.choice(("journal.txt", "journal-1.txt", "journalctl.log", "node7-journal.log")))


def _log_name(rng: random.Random, unit: str, slug: str, naming: str) -> str:
    """A server's own log file: named by ``StandardOutput=append:…/%n.log`` (the unit's name),
    by the unit's stem, or by nothing that says which unit writes it."""
    if naming == "unit":
        return f"{unit}.log"
    if naming == "stem":
        return f"{unit.removesuffix('.service')}.log"
    return str(
        rng.choice(("node7.log", "server.log", "launch.out", "sglang.log", f"{slug}.log", "journal-1.txt"))
    )
