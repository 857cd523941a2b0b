"""Writing rendered reports: the template environment is :mod:`postmortem.text.templates`'s."""

from __future__ import annotations

from pathlib import Path

from ..text.templates import default_template_dir, environment, render

__all__ = ["default_template_dir", "environment", "render", "write_whole"]


def write_whole(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all: aside, then renamed over it (a full disk or
    a kill leaves the previous report, never a cut one under its name); an error names the file."""
    from ..io import write_atomic

    return write_atomic(path, text)
