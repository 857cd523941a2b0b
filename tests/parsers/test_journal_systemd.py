"""systemd lifecycle wording v219–v259, systemd-oomd and earlyoom lines (pure classifiers)."""

from __future__ import annotations

import pytest

from postmortem.parsers.journal import systemd
from postmortem.parsers.journal.systemd import (
    apply_fields,
    classify,
    earlyoom_kill,
    oomd_kill,
    parse_size,
    parse_timespan,
    unit_from_cgroup,
)

U = "sglang-demo.service"

# message → (unit, action, code, status, result, restart_count)
WORDING = [
    # main process exit: ≤v219 lower case, v220+, v250+ "(success)"
    (
        f"{U}: main process exited, code=exited, status=1/FAILURE",
        (U, "main_exited", "exited", "1/FAILURE", None, None),
    ),
    (
        f"{U}: Main process exited, code=killed, status=9/KILL",
        (U, "main_exited", "killed", "9/KILL", None, None),
    ),
    (
        f"{U}: Main process exited, code=dumped, status=6/ABRT",
        (U, "main_exited", "dumped", "6/ABRT", None, None),
    ),
    (
        f"{U}: Main process exited, code=exited, status=0/SUCCESS (success)",
        (U, "main_exited", "exited", "0/SUCCESS", None, None),
    ),
    (
        f"{U}: Main process exited, code=exited, status=143/n/a",
        (U, "main_exited", "exited", "143/n/a", None, None),
    ),
    # control process: ≤v219, v220–v239 (no comma, no name), v240+
    (f"{U}: control process exited, code=exited status=1", (U, "control_exited", "exited", "1", None, None)),
    (f"{U}: Control process exited, code=exited status=3", (U, "control_exited", "exited", "3", None, None)),
    (
        f"{U}: Control process exited, code=killed, status=15/TERM",
        (U, "control_exited", "killed", "15/TERM", None, None),
    ),
    # failure: ≤v219, v220+, failed state v220–v234 and ≤v219
    (f"{U} failed.", (U, "failed", None, None, None, None)),
    (f"{U}: Failed with result 'oom-kill'.", (U, "failed", None, None, "oom-kill", None)),
    (f"{U}: Failed with result 'exit-code'.", (U, "failed", None, None, "exit-code", None)),
    (f"{U}: Failed with result 'start-limit-hit'.", (U, "failed", None, None, "start-limit-hit", None)),
    (f"{U}: Unit entered failed state.", (U, "failed", None, None, None, None)),
    (f"Unit {U} entered failed state.", (U, "failed", None, None, None, None)),
    # success: v240–v248, v249+
    (f"{U}: Succeeded.", (U, "deactivated", None, None, "success", None)),
    (f"{U}: Deactivated successfully.", (U, "deactivated", None, None, "success", None)),
    # restart: v236+, v257+, hold-off forms (v219, v220–v235, v239+)
    (f"{U}: Scheduled restart job, restart counter is at 3.", (U, "restart_scheduled", None, None, None, 3)),
    (
        f"{U}: Scheduled restart job immediately on client request, restart counter is at 4.",
        (U, "restart_scheduled", None, None, None, 4),
    ),
    (f"{U}: Scheduled restart job.", (U, "restart_scheduled", None, None, None, None)),
    (f"{U} holdoff time over, scheduling restart.", (U, "restart_scheduled", None, None, None, None)),
    (
        f"{U}: Service hold-off time over, scheduling restart.",
        (U, "restart_scheduled", None, None, None, None),
    ),
    (
        f"{U}: Service RestartSec=100ms expired, scheduling restart.",
        (U, "restart_scheduled", None, None, None, None),
    ),
    (
        f"{U}: Service has no hold-off time (RestartSec=0), scheduling restart.",
        (U, "restart_scheduled", None, None, None, None),
    ),
    # start limit: ≤v219, v220+
    (
        f"start request repeated too quickly for {U}",
        (U, "start_limit_hit", None, None, "start-limit-hit", None),
    ),
    (
        f"{U}: Start request repeated too quickly.",
        (U, "start_limit_hit", None, None, "start-limit-hit", None),
    ),
    # kernel OOM seen: v243–v258, v259+; ancestor slices get the sentence too
    (
        f"{U}: A process of this unit has been killed by the OOM killer.",
        (U, "oom_killed", None, None, None, None),
    ),
    (
        f"{U}: The kernel OOM killer killed some processes in this unit.",
        (U, "oom_killed", None, None, None, None),
    ),
    (
        "system.slice: A process of this unit has been killed by the OOM killer.",
        ("system.slice", "oom_killed", None, None, None, None),
    ),
    # systemd-oomd seen: v247+, v252+
    (
        f"{U}: systemd-oomd killed 14 process(es) in this unit.",
        (U, "oomd_killed", None, None, "oom-kill", None),
    ),
    (
        f"{U}: systemd-oomd killed some process(es) in this unit.",
        (U, "oomd_killed", None, None, "oom-kill", None),
    ),
    # killing, timeouts, watchdog
    (
        f"{U}: Killing process 4242 (python3) with signal SIGKILL.",
        (U, "killing", None, "SIGKILL", None, None),
    ),
    (f"{U}: State 'stop-sigterm' timed out. Killing.", (U, "timeout", None, "stop-sigterm", "timeout", None)),
    # a stop that could not end a process stuck in the kernel (v237+)
    (
        f"{U}: Unit process 31878 (sglang::schedul) remains running after unit stopped.",
        (U, "left_running", None, "31878 (sglang::schedul)", None, None),
    ),
    # a start that found the last run's processes in the cgroup (KillMode=process or none)
    (
        f"{U}: Found left-over process 60288 (sglang::schedul) in control group while starting unit. Ignoring.",
        (U, "left_over", None, "60288 (sglang::schedul)", None, None),
    ),
    (
        f"{U}: Processes still around after final SIGKILL. Entering failed mode.",
        (U, "left_running", None, None, None, None),
    ),
    (f"{U}: Watchdog timeout (limit 3min)!", (U, "watchdog", None, None, "watchdog", None)),
    # job messages: plain description and the combined form (v249+)
    ("Starting SGLang demo server...", (None, "starting", None, None, None, None)),
    (f"Starting {U} - SGLang demo server...", (U, "starting", None, None, None, None)),
    ("Started SGLang demo server.", (None, "started", None, None, None, None)),
    (f"Started {U} - SGLang demo server.", (U, "started", None, None, None, None)),
    (f"Started {U}.", (U, "started", None, None, None, None)),
    ("Stopping SGLang demo server...", (None, "stopping", None, None, None, None)),
    ("Stopped SGLang demo server.", (None, "stopped", None, None, None, None)),
    ("Stopped (with error) SGLang demo server.", (None, "stopped", None, None, "error", None)),
    (f"Stopped {U} - SGLang demo server with error.", (U, "stopped", None, None, "error", None)),
    (f"Failed to start {U} - SGLang demo server.", (U, "start_failed", None, None, None, None)),
    ("Dependency failed for SGLang proxy.", (None, "dependency_failed", None, None, None, None)),
    ("Timed out starting SGLang demo server.", (None, "start_failed", None, None, "timeout", None)),
    (
        "Finished logrotate.service - Rotate log files.",
        ("logrotate.service", "finished", None, None, None, None),
    ),
    ("Reached target Multi-User System.", (None, "reached", None, None, None, None)),
    ("Reloading SGLang demo server...", (None, "reloading", None, None, None, None)),
    (
        "nvidia-persistenced.service was skipped because of an unmet condition check (ConditionPathExists=/dev/nvidia0).",
        ("nvidia-persistenced.service", "skipped", None, "ConditionPathExists=/dev/nvidia0", None, None),
    ),
    (
        "nvidia-persistenced.service skipped, unmet condition check ConditionPathExists=/dev/nvidia0",
        ("nvidia-persistenced.service", "skipped", None, "ConditionPathExists=/dev/nvidia0", None, None),
    ),
    # systemd starts the OnFailure= units: a fallback started by it, not by the operator
    (
        "sglang-demo.service: Triggering OnFailure= dependencies.",
        ("sglang-demo.service", "on_failure", None, None, None, None),
    ),
]


@pytest.mark.parametrize(("message", "want"), WORDING, ids=[w[0][:60] for w in WORDING])
def test_lifecycle_wording(message: str, want: tuple[object, ...]) -> None:
    lc = classify(message)
    assert lc is not None
    assert (lc.unit, lc.action, lc.code, lc.status, lc.result, lc.restart_count) == want
    assert lc.action in systemd.ACTIONS


@pytest.mark.parametrize(
    "message",
    [
        "",
        "Reached the end of the tunnel.",
        "Started",
        "Starting ...",
        "foo: Main process exited, code=killed, status=9/KILL",  # 'foo' is not a unit name
        "Startup finished in 2.1s (kernel) + 5.3s (userspace) = 7.4s.",
        "Listening on D-Bus System Message Bus Socket",
    ],
)
def test_not_lifecycle(message: str) -> None:
    assert classify(message) is None


@pytest.mark.parametrize(
    ("body", "cpu", "wall", "peak"),
    [
        ("Consumed 1.234s CPU time", 1.234, None, None),  # v235–v239: no period
        ("Consumed 5.688s CPU time.", 5.688, None, None),
        ("Consumed 9h 41min 12.004s CPU time.", 34872.004, None, None),
        ("Consumed 2min 3.100s CPU time, read 1.2M from disk, written 0B to disk.", 123.1, None, None),
        ("Consumed 1min 2.345s CPU time, 1.2G memory peak, 0B memory swap peak.", 62.345, None, 1288490189),
        ("Consumed 512ms CPU time, 48.0M memory peak, 1.2M incoming IP traffic.", 0.512, None, 50331648),
        (
            "Consumed 12.250s CPU time over 3min 20s wall clock time, 48.0M memory peak.",
            12.25,
            200.0,
            50331648,
        ),
        ("Consumed 1d 2h CPU time over 1w wall clock time.", 93600.0, 604800.0, None),
    ],
)
def test_consumed(body: str, cpu: float, wall: float | None, peak: int | None) -> None:
    lc = classify(f"{U}: {body}")
    assert lc is not None
    assert (lc.action, lc.cpu_s, lc.wall_s, lc.memory_peak_bytes) == ("consumed", cpu, wall, peak)


def test_timespans_and_sizes() -> None:
    assert parse_timespan("1y 2month 3w 4d 5h 6min 7s 8ms 9us") == pytest.approx(
        31557600 + 2 * 2629800 + 3 * 604800 + 4 * 86400 + 5 * 3600 + 6 * 60 + 7 + 0.008 + 0.000009
    )
    assert parse_timespan("5μs") == 5e-6
    assert parse_timespan("") is None
    assert parse_timespan("5 parsecs") is None
    assert parse_size("1K") == 1024
    assert parse_size("1.5T") == 1649267441664
    assert parse_size("B") is None
    assert parse_size("x.yG") is None


def test_structured_fields_refine_and_create() -> None:
    lc = classify(f"{U}: Main process exited, code=killed, status=9/KILL")
    got = apply_fields(lc, {"UNIT": "other.service", "UNIT_RESULT": "signal"}, "")
    assert got is not None
    assert (got.unit, got.result) == ("other.service", "signal")
    # text not recognised: MESSAGE_ID + UNIT= still name the event
    got = apply_fields(
        None,
        {
            "MESSAGE_ID": "5eb03494b6584870a536b337290809b3",
            "USER_UNIT": "jupyter.service",
            "N_RESTARTS": "7",
        },
        "Geplanter Neustart",
    )
    assert got is not None
    assert (got.unit, got.action, got.restart_count) == ("jupyter.service", "restart_scheduled", 7)
    got = apply_fields(
        None,
        {
            "MESSAGE_ID": "ae8f7b866b0347b9af31fe1c80b127c0",
            "UNIT": U,
            "CPU_USAGE_NSEC": "5688000000",
            "MEMORY_PEAK": "1073741824",
        },
        "",
    )
    assert got is not None
    assert (got.action, got.cpu_s, got.memory_peak_bytes) == ("consumed", 5.688, 1073741824)
    got = apply_fields(
        None,
        {
            "MESSAGE_ID": "98e322203f7a4ed290d09fe03c09fe15",
            "UNIT": U,
            "EXIT_CODE": "killed",
            "EXIT_STATUS": "9",
        },
        "",
    )
    assert got is not None
    assert (got.action, got.code, got.status) == ("main_exited", "killed", "9")
    assert apply_fields(None, {"MESSAGE_ID": "0" * 32, "UNIT": U}, "") is None
    assert apply_fields(None, {"MESSAGE_ID": "fe6faa94e7774663a0da52717891d8ef"}, "") is None  # no unit


@pytest.mark.parametrize(
    ("message", "cgroup"),
    [
        (
            "Killed /system.slice/sglang-demo.service due to memory pressure for /system.slice being 62.18% > 50.00% for > 20s with reclaim activity",
            "/system.slice/sglang-demo.service",
        ),
        (
            "Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope due to memory used (63400001536) / total (64000000000) and swap used (0) / total (0) being more than 90.00%",
            "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope",
        ),
        (
            "Marked /system.slice/sglang-demo.service for killing due to memory pressure",
            "/system.slice/sglang-demo.service",
        ),
        (
            "Memory pressure for /system.slice is greater than 10 for more than 20 seconds and there was reclaim activity",
            None,
        ),
        ("Considered 3 cgroups for killing, top candidates were:", None),
        ("oomd attempting to kill 4242 with SIGKILL", None),
        ("Killed something else", None),
    ],
)
def test_oomd(message: str, cgroup: str | None) -> None:
    assert oomd_kill(message) == cgroup


@pytest.mark.parametrize(
    ("message", "want"),
    [
        (
            'sending SIGTERM to process 4242 "python3": badness 812, VmRSS 61234 MiB',
            ("SIGTERM", 4242, None, "python3", None),
        ),  # v1.3
        (
            'sending SIGTERM to process 4242 uid 1000 "python3": badness 812, VmRSS 61234 MiB',
            ("SIGTERM", 4242, 1000, "python3", None),
        ),  # v1.4–1.7
        (
            'sending SIGKILL to process 7 uid 0 "VLLM Worker 1": oom_score 900, VmRSS 1 MiB, cmdline "x"',
            ("SIGKILL", 7, 0, "VLLM Worker 1", None),
        ),  # v1.8
        (
            'sending SIGTERM to process 7 uid 0 "a": oom_score 900, oom_score_adj -100, VmRSS 1 MiB, cmdline "a b"',
            ("SIGTERM", 7, 0, "a", -100),
        ),  # v1.9
    ],
)
def test_earlyoom(message: str, want: tuple[object, ...]) -> None:
    k = earlyoom_kill(message)
    assert k is not None
    assert (k.signal, k.pid, k.uid, k.name, k.oom_score_adj) == want


@pytest.mark.parametrize(
    "message",
    [
        "sending SIGTERM when mem avail <= 10.00% and swap free <= 10.00%,",
        "low memory! at or below SIGTERM limits: mem  9.80%, swap  0.00%",
        "escalating to SIGKILL after 0.5 seconds",
        "process 4242 exited after 1.234 seconds",
    ],
)
def test_earlyoom_non_kill_lines(message: str) -> None:
    assert earlyoom_kill(message) is None


def test_unit_from_cgroup() -> None:
    assert unit_from_cgroup("/system.slice/docker-0123abcd.scope") == "docker-0123abcd.scope"
    assert unit_from_cgroup("/system.slice/sglang.service/payload") == "sglang.service"
    assert unit_from_cgroup("/user.slice/user-1000.slice") == "user-1000.slice"
    assert unit_from_cgroup("/kubepods/burstable/pod1234") is None
