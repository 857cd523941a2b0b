"""``postmortem hook install|uninstall|status UNIT``: start a capture when a unit fails.

``install`` writes two systemd files under ``--root`` (``/`` by default):
``etc/systemd/system/<UNIT>.d/50-postmortem-capture.conf`` (``OnFailure=postmortem-capture@%n.service``)
and the template unit ``etc/systemd/system/postmortem-capture@.service``, which runs the
collector (the single-file ``postmortem-collect.pyz`` under the host's ``python3`` by default)
for the failed unit into ``<dest>/<unit>/`` with a timeout and umask 077, then optionally a
command of yours with ``{bundle}`` replaced by the bundle it wrote. ``status`` says what is
installed and whether it is what ``install`` would write; ``uninstall`` removes the drop-in (and
the template when no drop-in names it any more). Words in ``templates/hook/``; docs/runbook.md
("Capture at the failure").
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .io import write_atomic
from .lazyre import lazy_re

#: a unit name systemd accepts: letters, digits, ``:-_.\\@``, with a known suffix
_UNIT = lazy_re(r"^[A-Za-z0-9:_.\\@-]{1,248}\.(service|socket|timer|mount|path|target|scope)$")
DROPIN = "50-postmortem-capture.conf"
TEMPLATE = "postmortem-capture@.service"
DEFAULT_COLLECTOR = "/usr/bin/python3 /usr/local/lib/postmortem/postmortem-collect.pyz"
DEFAULT_DEST = "/var/lib/postmortem"


@dataclass
class Hook:
    """What ``install`` writes (values checked)."""

    unit: str
    dest: str = DEFAULT_DEST
    collector: str = DEFAULT_COLLECTOR
    timeout_s: int = 300
    since: str = "-6h"
    then: str | None = None

    @property
    def collector_line(self) -> str:
        return _unit_escape(self.collector)

    @property
    def dest_unit(self) -> str:
        return f"{_unit_escape(self.dest)}/%I"

    @property
    def then_line(self) -> str:
        """``--then`` for ``ExecStartPost=``: its ``{bundle}`` is the newest bundle of the unit."""
        assert self.then is not None
        newest = f'"$(ls -1dt {shlex.quote(self.dest)}/"$1"/postmortem-* | head -n 1)"'
        script = self.then.replace("{bundle}", newest)
        return _unit_escape(f"/bin/sh -c {shlex.quote(script)} postmortem-then") + " %I"


def _unit_escape(text: str) -> str:
    """A command line as a unit file must hold it: ``%`` specifiers and ``$`` expansions doubled
    (the ``%I`` systemd fills in is added by the caller after this).

    >>> _unit_escape("echo $HOME 100%")
    'echo $$HOME 100%%'
    """
    return text.replace("%", "%%").replace("$", "$$")


def check(hook: Hook) -> Hook:
    """The hook, or a :class:`UsageError` naming what is wrong with it."""
    if not _UNIT.match(hook.unit) or hook.unit.startswith("postmortem-capture@"):
        raise UsageError(f"not a unit name systemd accepts: {hook.unit!r}")
    for name, value in (("--dest", hook.dest), ("--collector", hook.collector), ("--then", hook.then or "")):
        if any(c in value for c in "\n\r\x00"):
            raise UsageError(f"{name} must be one line")
    if not hook.dest.startswith("/") or ".." in Path(hook.dest).parts:
        raise UsageError(f"--dest must be an absolute path without '..': {hook.dest!r}")
    if not 10 <= hook.timeout_s <= 86400:
        raise UsageError("--timeout must be between 10 s and a day")
    return hook


def _paths(root: Path, unit: str) -> tuple[Path, Path]:
    base = root / "etc" / "systemd" / "system"
    return base / f"{unit}.d" / DROPIN, base / TEMPLATE


def _render(hook: Hook, template: str) -> str:
    from .text.templates import environment

    return environment().get_template(f"hook/{template}").render(h=hook).strip("\n") + "\n"


def install(root: Path, hook: Hook) -> list[Path]:
    """Write the drop-in and the template unit under ``root``; returns them."""
    check(hook)
    if not root.is_dir():
        raise UsageError(f"--root {root} is not a directory")
    dropin, template = _paths(root, hook.unit)
    dropin.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dropin, _render(hook, "dropin.conf.j2"))
    write_atomic(template, _render(hook, "capture@.service.j2"))
    return [dropin, template]


def uninstall(root: Path, unit: str) -> list[Path]:
    """Remove the unit's drop-in, and the template when no drop-in names it any more."""
    check(Hook(unit))
    dropin, template = _paths(root, unit)
    removed = []
    if dropin.is_file() and not dropin.is_symlink():
        dropin.unlink()
        removed.append(dropin)
        if not any(dropin.parent.iterdir()):
            dropin.parent.rmdir()
    if template.is_file() and not installed_units(root):
        template.unlink()
        removed.append(template)
    return removed


def installed_units(root: Path) -> list[str]:
    """The units whose drop-in directory holds the capture drop-in."""
    base = root / "etc" / "systemd" / "system"
    return sorted(p.parent.name[:-2] for p in base.glob(f"*.d/{DROPIN}") if p.is_file())


def status(root: Path, unit: str | None) -> list[tuple[str, str]]:
    """(unit, state) for ``unit`` or every hooked unit: ``installed`` (its drop-in is what
    ``install`` writes and the capture unit is there), ``differs`` (the drop-in was changed),
    ``no capture unit``, or ``not installed``; then the capture unit's command lines."""
    units = [unit] if unit else installed_units(root)
    out = []
    for name in units:
        dropin, template = _paths(root, check(Hook(name)).unit)
        if not dropin.is_file():
            out.append((name, "not installed"))
        elif not template.is_file():
            out.append((name, "no capture unit"))
        elif dropin.read_text() != _render(Hook(name), "dropin.conf.j2"):
            out.append((name, "differs"))
        else:
            out.append((name, "installed"))
    if template_lines := _commands(root):
        out.extend(("capture", line) for line in template_lines)
    return out


def _commands(root: Path) -> list[str]:
    template = _paths(root, "x.service")[1]
    if not template.is_file():
        return []
    return [ln for ln in template.read_text().splitlines() if ln.startswith(("ExecStart", "TimeoutStartSec"))]
