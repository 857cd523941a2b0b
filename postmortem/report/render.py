"""Writing rendered reports: the template environment is :mod:`postmortem.text.templates`'s."""

from __future__ import annotations

from pathlib import Path

from ..text.templates import default_template_dir, environment, render

__all__ = ["default_template_dir", "environment", "render", "write_whole"]


def write_whole(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all: aside, then renamed over it (a full disk or
    a kill leaves the previous report, never a cut one under its name); an error names the file."""
    import os

    part = path.with_name(f".{path.name}.part")
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    return path
