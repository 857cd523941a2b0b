"""What systemd (PID 1) writes about a unit, by version (v219 → v259) and ``StatusUnitFormat=``.

From /work/shared/reference/kernel-and-journal.md §5.1 (``src/core/`` format strings): job lines
(``Started``/``Stopped``/…) name the unit by its *Description* before v249 and wherever
``StatusUnitFormat=`` is ``description``; ``combined`` gives ``unit - description``, ``name`` the
bare unit. Unit lines (``<unit>: …``) carry the unit's name in every version.

>>> Systemd(219, "description").started("a.service", "A server")
'Started A server.'
>>> Systemd(255, "combined").started("a.service", "A server")
'Started a.service - A server.'
>>> Systemd(252, "name").stopped("a.service", "A server")
'Stopped a.service.'
>>> Systemd(219, "description").failed("a.service", "signal")
['Unit a.service entered failed state.', 'a.service failed.']
>>> Systemd(259, "combined").oom_sentence("a.service")
'a.service: The kernel OOM killer killed some processes in this unit.'
>>> Systemd(239, "description").restart("a.service", 10.0, 1)
['a.service: Service RestartSec=10s expired, scheduling restart.', 'a.service: Scheduled restart job, restart counter is at 1.']
"""

from __future__ import annotations

from dataclasses import dataclass

#: MESSAGE_IDs (``sd-messages.h``) of the lines that carry one
MESSAGE_ID = {
    "starting": "7d4958e842da4a758f6c1cdc7b36dcc5",
    "started": "39f53479d3a045ac8e11786248231fbf",
    "stopping": "de5b426a63be47a7b6ac3eaac82e2f6f",
    "stopped": "9d1aaa27d60140bd96365438aad20286",
    "failed": "d9b373ed55a64feb8242e02dbe79a49c",
    "exit": "98e322203f7a4ed290d09fe03c09fe15",
    "oom": "fe6faa94e7774663a0da52717891d8ef",
    "resources": "ae8f7b866b0347b9af31fe1c80b127c0",
    "restart": "5eb03494b6584870a536b337290809b3",
    "success": "7ad2d189f7e94e70a38c781354912448",
}


def _secs(s: float) -> str:
    """systemd's timespan: ``10s``, ``1min 30s``, ``100ms``."""
    if s < 1:
        return f"{round(s * 1000)}ms"
    m, sec = divmod(int(s), 60)
    return f"{m}min {sec}s" if m and sec else (f"{m}min" if m else f"{sec}s")


@dataclass(frozen=True)
class Systemd:
    version: int
    status_format: str = "description"

    def what(self, unit: str, desc: str) -> str:
        if self.version < 249 or self.status_format == "description":
            return desc
        return unit if self.status_format == "name" else f"{unit} - {desc}"

    def starting(self, unit: str, desc: str) -> str:
        return f"Starting {self.what(unit, desc)}..."

    def started(self, unit: str, desc: str) -> str:
        return f"Started {self.what(unit, desc)}."

    def finished(self, unit: str, desc: str) -> str:
        """A oneshot's done message (``Finished`` since v246, ``Started`` before)."""
        verb = "Finished" if self.version >= 246 else "Started"
        return f"{verb} {self.what(unit, desc)}."

    def stopping(self, unit: str, desc: str) -> str:
        return f"Stopping {self.what(unit, desc)}..."

    def stopped(self, unit: str, desc: str) -> str:
        return f"Stopped {self.what(unit, desc)}."

    def failed_to_start(self, unit: str, desc: str) -> str:
        return f"Failed to start {self.what(unit, desc)}."

    def main_exited(self, unit: str, code: str, status: str) -> str:
        head = "main process exited" if self.version <= 219 else "Main process exited"
        return f"{unit}: {head}, code={code}, status={status}"

    def failed(self, unit: str, result: str) -> list[str]:
        if self.version <= 219:
            return [f"Unit {unit} entered failed state.", f"{unit} failed."]
        out = [f"{unit}: Failed with result '{result}'."]
        if self.version < 235:
            out.append(f"{unit}: Unit entered failed state.")
        return out

    def oom_sentence(self, unit: str) -> str | None:
        if self.version < 243:
            return None
        if self.version >= 259:
            return f"{unit}: The kernel OOM killer killed some processes in this unit."
        return f"{unit}: A process of this unit has been killed by the OOM killer."

    def oomd_sentence(self, unit: str, n: int) -> str:
        return f"{unit}: systemd-oomd killed {n} process(es) in this unit."

    def consumed(self, unit: str, cpu: str, peak_gib: float, wall: str) -> str | None:
        if self.version < 235:
            return None
        if self.version < 240:
            return f"{unit}: Consumed {cpu} CPU time"
        if self.version < 255:
            return f"{unit}: Consumed {cpu} CPU time."
        if self.version < 259:
            return f"{unit}: Consumed {cpu} CPU time, {peak_gib:.1f}G memory peak."
        return f"{unit}: Consumed {cpu} CPU time over {wall} wall clock time, {peak_gib:.1f}G memory peak."

    def restart(self, unit: str, restart_sec: float, n: int) -> list[str]:
        if self.version <= 219:
            return [f"{unit} holdoff time over, scheduling restart."]
        if self.version < 236:
            return [f"{unit}: Service hold-off time over, scheduling restart."]
        if self.version < 239:
            return [f"{unit}: Scheduled restart job, restart counter is at {n}."]
        return [
            f"{unit}: Service RestartSec={_secs(restart_sec)} expired, scheduling restart.",
            f"{unit}: Scheduled restart job, restart counter is at {n}.",
        ]

    def start_limit(self, unit: str) -> str:
        if self.version <= 219:
            return f"start request repeated too quickly for {unit}"
        return f"{unit}: Start request repeated too quickly."

    def start_limit_result(self) -> str:
        return "start-limit-hit" if self.version >= 233 else "start-limit"

    def success(self, unit: str) -> str | None:
        if self.version < 240:
            return None
        return f"{unit}: {'Deactivated successfully' if self.version >= 249 else 'Succeeded'}."

    def on_failure(self, unit: str) -> str:
        return f"{unit}: Triggering OnFailure= dependencies."

    def oom_result(self, oomd: bool) -> str:
        """The result a kill ends in: ``oom-kill`` when systemd saw it (cgroup v2, v243+; oomd's
        from v251), else ``signal``."""
        if oomd:
            return "oom-kill" if self.version >= 251 else "signal"
        return "oom-kill" if self.version >= 243 else "signal"
