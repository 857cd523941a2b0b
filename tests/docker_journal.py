"""An SGLang server in a Docker container that logs through Docker's ``journald`` log driver, as
``journalctl -o export`` and ``-o json`` render the host's journal.

The container's lines are entries dockerd sends (moby's ``daemon/logger/journald``): journald
stamps them ``_SYSTEMD_UNIT=docker.service``, ``_COMM=dockerd`` and dockerd's ``_PID``; the driver
adds ``CONTAINER_ID``, ``CONTAINER_ID_FULL``, ``CONTAINER_NAME``, ``CONTAINER_TAG`` and
``SYSLOG_IDENTIFIER`` (``--log-opt tag={{.Name}}``), ``IMAGE_NAME`` and ``PRIORITY`` (6 stdout, 3
stderr). systemd logs the container's scope (``docker-<id>.scope``, systemd's cgroup driver)
starting; the kernel's memory-cgroup OOM record names that scope.

The story (:func:`scenario`): the container ``sglang-qwen`` (``docker run --gpus device=0,1,2,3
--memory 96g --restart unless-stopped``) starts at 06:00:04 and is ready at 06:03:15; from 09:10
requests queue up; at 09:41:27.34 the kernel's memcg OOM killer kills its PID 1 (``python3``);
Docker's restart policy starts it again at 09:41:28.41 (``restart="policy"``), or an operator's
``sudo docker start sglang-qwen`` does at 09:41:52 (``"operator"``), or nothing does (``None``);
restarted, it is ready 92.8 s after its start. GPUs 0–3 are the container's; 4–7 stay idle.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

HOST = "infer-07"
BOOT = datetime(2025, 6, 2, 22, 4, 11, 902330, tzinfo=UTC)
BOOT_ID = "7da584b387ea6fd6941bca0baa6c0d3c"
MACHINE_ID = "662a5f59241ad7853297ecdd86ee5fc4"
CID = "3f2a9c0d1e4b05a2deee17089f494157a377a8c942734b7a3910db273d7faf0c"
NAME = "sglang-qwen"
IMAGE = "lmsysorg/sglang:v0.4.10-cu126"
SCOPE = f"docker-{CID}.scope"
DOCKERD = 1302
START1 = datetime(2025, 6, 10, 6, 0, 4, 512300, tzinfo=UTC)
KILL = datetime(2025, 6, 10, 9, 41, 27, 338114, tzinfo=UTC)
BY_POLICY = KILL + timedelta(seconds=1.071)  # Docker's restart policy: 100 ms, then its own start
BY_OPERATOR = KILL + timedelta(seconds=24.5)
LOAD_S = 92.8
PID1 = 2215401
SCHEDULERS = [2215467 + i for i in range(4)]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _us(ts: datetime) -> int:
    return (ts - EPOCH) // timedelta(microseconds=1)


class Journal:
    """Entries of the host's journal, rendered as journalctl renders them."""

    def __init__(self) -> None:
        self.entries: list[tuple[datetime, int, list[tuple[str, str]]]] = []

    def add(self, ts: datetime, fields: list[tuple[str, str]]) -> None:
        self.entries.append((ts, len(self.entries), fields))

    def systemd(self, ts: datetime, message: str, unit: str, message_id: str, priority: int = 6) -> None:
        self.add(
            ts,
            [
                ("_PID", "1"), ("_UID", "0"), ("_GID", "0"), ("_COMM", "systemd"),
                ("_EXE", "/usr/lib/systemd/systemd"), ("_CMDLINE", "/sbin/init splash"),
                ("_SYSTEMD_CGROUP", "/init.scope"), ("_SYSTEMD_UNIT", "init.scope"),
                ("_SYSTEMD_SLICE", "-.slice"), ("SYSLOG_FACILITY", "3"), ("SYSLOG_IDENTIFIER", "systemd"),
                ("_TRANSPORT", "journal"), ("PRIORITY", str(priority)), ("CODE_FILE", "src/core/unit.c"),
                ("UNIT", unit), ("MESSAGE_ID", message_id), ("MESSAGE", message),
            ],
        )  # fmt: skip

    def kernel(self, ts: datetime, message: str, priority: int = 6) -> None:
        mono = _us(ts) - _us(BOOT)
        self.add(
            ts + timedelta(microseconds=410),
            [
                ("_TRANSPORT", "kernel"), ("SYSLOG_FACILITY", "0"), ("SYSLOG_IDENTIFIER", "kernel"),
                ("PRIORITY", str(priority)), ("_SOURCE_MONOTONIC_TIMESTAMP", str(mono)), ("MESSAGE", message),
            ],
        )  # fmt: skip

    def container(self, ts: datetime, message: str, stream: str = "stderr") -> None:
        """One line the container printed, as dockerd's journald log driver sends it."""
        self.add(
            ts,
            [
                ("_TRANSPORT", "journal"), ("PRIORITY", "3" if stream == "stderr" else "6"),
                ("SYSLOG_IDENTIFIER", NAME), ("_PID", str(DOCKERD)), ("_UID", "0"), ("_GID", "0"),
                ("_COMM", "dockerd"), ("_EXE", "/usr/bin/dockerd"),
                ("_CMDLINE", "/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock"),
                ("_SYSTEMD_CGROUP", "/system.slice/docker.service"), ("_SYSTEMD_UNIT", "docker.service"),
                ("_SYSTEMD_SLICE", "system.slice"), ("CONTAINER_ID", CID[:12]), ("CONTAINER_ID_FULL", CID),
                ("CONTAINER_NAME", NAME), ("CONTAINER_TAG", NAME), ("IMAGE_NAME", IMAGE), ("MESSAGE", message),
            ],
        )  # fmt: skip

    def dockerd(self, ts: datetime, message: str) -> None:
        """dockerd's own log line (no container fields): docker.service's."""
        self.add(
            ts,
            [
                ("_TRANSPORT", "stdout"), ("PRIORITY", "6"), ("SYSLOG_FACILITY", "3"),
                ("SYSLOG_IDENTIFIER", "dockerd"), ("_PID", str(DOCKERD)), ("_UID", "0"), ("_GID", "0"),
                ("_COMM", "dockerd"), ("_EXE", "/usr/bin/dockerd"),
                ("_SYSTEMD_CGROUP", "/system.slice/docker.service"), ("_SYSTEMD_UNIT", "docker.service"),
                ("_SYSTEMD_SLICE", "system.slice"), ("MESSAGE", message),
            ],
        )  # fmt: skip

    def sudo(self, ts: datetime, command: str) -> None:
        self.add(
            ts,
            [
                ("_TRANSPORT", "syslog"), ("PRIORITY", "5"), ("SYSLOG_FACILITY", "10"),
                ("SYSLOG_IDENTIFIER", "sudo"), ("SYSLOG_PID", "771042"), ("_PID", "771042"), ("_UID", "0"),
                ("_GID", "1000"), ("_COMM", "sudo"), ("_SYSTEMD_UNIT", "session-12.scope"),
                ("MESSAGE", f"     bob : TTY=pts/0 ; PWD=/home/bob ; USER=root ; COMMAND={command}"),
            ],
        )  # fmt: skip

    def _rendered(self) -> list[list[tuple[str, str]]]:
        out = []
        for i, (ts, _, fields) in enumerate(sorted(self.entries, key=lambda e: (e[0], e[1]))):
            rt, mono = _us(ts), _us(ts) - _us(BOOT)
            head = [
                ("__CURSOR", f"s=6502bc9e3e2da6a2b1748e0f878c381f;i={i + 1:x};b={BOOT_ID};m={mono:x};t={rt:x}"),
                ("__REALTIME_TIMESTAMP", str(rt)), ("__MONOTONIC_TIMESTAMP", str(mono)),
                ("_BOOT_ID", BOOT_ID), ("_MACHINE_ID", MACHINE_ID), ("_HOSTNAME", HOST),
            ]  # fmt: skip
            out.append(head + fields)
        return out

    def export(self) -> bytes:
        """``journalctl -o export``: a value with a newline is a binary field."""
        out = bytearray()
        for fields in self._rendered():
            for name, value in fields:
                raw = value.encode()
                if b"\n" in raw:
                    out += name.encode() + b"\n" + len(raw).to_bytes(8, "little") + raw + b"\n"
                else:
                    out += name.encode() + b"=" + raw + b"\n"
            out += b"\n"
        return bytes(out)

    def json(self) -> str:
        """``journalctl -o json``: one object per line."""
        return "".join(json.dumps(dict(f), separators=(",", ":")) + "\n" for f in self._rendered())


SERVER_ARGS = (
    "server_args=ServerArgs(model_path='/models/Qwen2.5-72B-Instruct', "
    "tokenizer_path='/models/Qwen2.5-72B-Instruct', tokenizer_mode='auto', load_format='auto', "
    "trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', quantization=None, "
    "served_model_name='qwen2.5-72b-instruct', host='0.0.0.0', port=30000, mem_fraction_static=0.87, "
    "max_running_requests=None, chunked_prefill_size=8192, tp_size=4, dp_size=1, base_gpu_id=0, "
    "gpu_id_step=1, speculative_algorithm=None, cuda_graph_max_bs=160, disable_cuda_graph=False)"
)


def _sglang(ts: datetime, message: str, rank: str = "") -> str:
    return f"[{ts:%Y-%m-%d %H:%M:%S}{' ' + rank if rank else ''}] {message}"


def _startup(j: Journal, start: datetime, weights_s: float) -> datetime:
    """SGLang 0.4's startup in the container, from the container's start; returns ready."""
    t = start + timedelta(seconds=2.3)
    j.container(t, _sglang(t, SERVER_ARGS))
    t += timedelta(seconds=3.9)
    j.container(t, _sglang(t, "Load weight begin. avail mem=78.63 GB", "TP0"))
    t += timedelta(seconds=weights_s)
    j.container(t, "Loading safetensors checkpoint shards: 100% Completed | 37/37", "stdout")
    j.container(
        t,
        _sglang(
            t,
            "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=44.45 GB, mem usage=34.18 GB.",
            "TP0",
        ),
    )
    t += timedelta(seconds=1.2)
    j.container(
        t, _sglang(t, "KV Cache is allocated. #tokens: 540672, K size: 16.50 GB, V size: 16.50 GB", "TP0")
    )
    j.container(t, _sglang(t, "Memory pool end. avail mem=11.45 GB", "TP0"))
    t += timedelta(seconds=0.9)
    j.container(
        t,
        _sglang(
            t, "Capture cuda graph begin. This can take up to several minutes. avail mem=10.85 GB", "TP0"
        ),
    )
    t += timedelta(seconds=36.2)
    j.container(
        t,
        _sglang(
            t, "Capture cuda graph end. Time elapsed: 36.20 s. mem usage=1.71 GB. avail mem=9.14 GB.", "TP0"
        ),
    )
    ready = max(t + timedelta(seconds=4.0), start + timedelta(seconds=LOAD_S))
    up = ready - timedelta(seconds=3.0)
    j.container(up, _sglang(up, "INFO:     Started server process [1]"))
    j.container(up, _sglang(up, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"))
    j.container(ready, _sglang(ready, "The server is fired up and ready to roll!"))
    return ready


def _batches(j: Journal, start: datetime, end: datetime) -> None:
    """Decode batch lines every 30 s: the queue fills from 09:10 on."""
    t = start
    while t < end:
        queued = 0 if t < datetime(2025, 6, 10, 9, 10, tzinfo=UTC) else int((t - start).total_seconds() / 60)
        j.container(
            t,
            _sglang(
                t,
                f"Decode batch. #running-req: 219, #token: 519045, token usage: 0.96, cuda graph: True, "
                f"gen throughput (token/s): 1599.78, #queue-req: {min(queued, 209)}, ",
                "TP0",
            ),
        )
        t += timedelta(seconds=30)
    last = KILL - timedelta(seconds=7.3)
    j.container(
        last,
        _sglang(
            last,
            "Decode batch. #running-req: 219, #token: 519045, token usage: 0.96, cuda graph: True, "
            "gen throughput (token/s): 1599.78, #queue-req: 209, ",
            "TP0",
        ),
    )


def _oom_record(j: Journal) -> None:
    """The kernel's memcg OOM record (5.15) of the container's scope, systemd's words after it."""
    cg = f"/system.slice/{SCOPE}"
    k = KILL - timedelta(microseconds=900)
    rec = [
        (4, "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"),
        (4, f"CPU: 37 PID: {PID1} Comm: python3 Tainted: P           OE     5.15.0-105-generic #115-Ubuntu"),
        (6, "memory: usage 100663296kB, limit 100663296kB, failcnt 1873"),
        (6, "swap: usage 0kB, limit 100663296kB, failcnt 0"),
        (6, "Tasks state (memory values in pages):"),
        (6, "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name"),
        (6, f"[{PID1}]     0 {PID1} 25165824 18612000 153444352        0             0 python3"),
        *[
            (6, f"[{p}]     0 {p} 11534336  1441792  14680064        0             0 sglang::schedul")
            for p in SCHEDULERS
        ],
        (
            6,
            f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={SCOPE},mems_allowed=0-1,"
            f"oom_memcg={cg},task_memcg={cg},task=python3,pid={PID1},uid=0",
        ),
        (
            3,
            f"Memory cgroup out of memory: Killed process {PID1} (python3) total-vm:100663296kB, "
            "anon-rss:74428000kB, file-rss:20000kB, shmem-rss:0kB, UID:0 pgtables:149848kB oom_score_adj:0",
        ),
    ]
    for i, (prio, msg) in enumerate(rec):
        j.kernel(k + timedelta(microseconds=17 * i), msg, prio)
    j.systemd(
        KILL + timedelta(milliseconds=190),
        f"{SCOPE}: A process of this unit has been killed by the OOM killer.",
        SCOPE,
        "fe6faa94e7774663a0da52717891d8ef",
        priority=5,
    )
    j.dockerd(
        KILL + timedelta(milliseconds=560),
        f'time="2025-06-10T09:41:27.898114331Z" level=info msg="ignoring event" container={CID} '
        'module=libcontainerd namespace=moby topic=/tasks/delete type="*events.TaskDelete"',
    )
    j.systemd(
        KILL + timedelta(milliseconds=610),
        f"{SCOPE}: Deactivated successfully.",
        SCOPE,
        "7ad2d189f7e94e70a38c781354912448",
    )


def _started(j: Journal, ts: datetime) -> None:
    j.systemd(ts, f"Started libcontainer container {CID}.", SCOPE, "39f53479d3a045ac8e11786248231fbf")


def scenario(restart: str | None = "policy") -> tuple[Journal, datetime | None, datetime | None]:
    """The journal, the restarted container's start and its ready time (None: not restarted)."""
    j = Journal()
    _started(j, START1)
    ready1 = _startup(j, START1, 138.2)
    _batches(j, ready1 + timedelta(seconds=30), KILL - timedelta(seconds=8))
    _oom_record(j)
    if restart is None:
        return j, None, None
    start2 = BY_POLICY if restart == "policy" else BY_OPERATOR
    if restart == "operator":
        j.sudo(start2 - timedelta(seconds=1.2), f"/usr/bin/docker start {NAME}")
    _started(j, start2)
    ready2 = _startup(j, start2, 41.3)
    return j, start2, ready2


GPU_HEADER = (
    "timestamp, index, uuid, pci.bus_id, name, memory.total [MiB], memory.reserved [MiB], memory.used [MiB], "
    "memory.free [MiB], utilization.gpu [%], utilization.memory [%], temperature.gpu, power.draw [W], pstate"
)
BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]


def nvidia_smi(start2: datetime | None, ready2: datetime | None) -> str:
    """``nvidia-smi --query-gpu=… --format=csv -l 5`` of the host's 8 GPUs, 09:20–10:00: the
    container's GPUs 0–3 empty at its death and fill again with its restart; 4–7 stay idle."""
    rows = [GPU_HEADER]
    t = datetime(2025, 6, 10, 9, 20, 0, 301000, tzinfo=UTC)
    while t < datetime(2025, 6, 10, 10, 0, tzinfo=UTC):
        for i in range(8):
            if i >= 4 or (
                KILL + timedelta(seconds=0.8) <= t and (start2 is None or t < start2 + timedelta(seconds=9))
            ):
                used = 0
            elif t < KILL or (ready2 is not None and t >= ready2):
                used = 71290 + 7 * i
            else:
                assert start2 is not None
                used = min(71330, 1100 + int((t - start2).total_seconds() * 1200))
            stamp = (t + timedelta(milliseconds=3 * i)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            util = 85 if used else 0
            rows.append(
                f"{stamp}, {i}, GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}, 00000000:{BUS[i]}:00.0, "
                f"NVIDIA H100 80GB HBM3, 81559 MiB, 511 MiB, {used} MiB, {81559 - 511 - used} MiB, {util} %, "
                f"{util // 2} %, {38 + util // 4}, {95 + util * 5.3:.2f} W, P0"
            )
        t += timedelta(seconds=5)
    return "\n".join(rows) + "\n"


def write(directory: Path, fmt: str = "export", restart: str | None = "policy") -> Path:
    """The scenario's journal (``journal.export`` or ``journal.json``) and ``nvidia-smi-gpu.csv``."""
    directory.mkdir(parents=True, exist_ok=True)
    j, start2, ready2 = scenario(restart)
    if fmt == "export":
        (directory / "journal.export").write_bytes(j.export())
    else:
        (directory / "journal.json").write_text(j.json())
    (directory / "nvidia-smi-gpu.csv").write_text(nvidia_smi(start2, ready2))
    return directory
