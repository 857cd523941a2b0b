"""Jinja2 rendering: packaged templates, a user's directory searched first, StrictUndefined.

User templates are trusted code (Jinja can call methods on the context objects): point
``--templates`` only at directories you would also run Python from.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from ..errors import UsageError
from .markdown import md_cell, md_code, md_inline, md_link_text


def default_template_dir() -> Path:
    """``templates/`` of the source tree, or ``postmortem/templates`` inside a wheel."""
    packaged = resources.files("postmortem").joinpath("templates")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"


def environment(user_dirs: Sequence[str | Path] = ()) -> jinja2.Environment:
    search: list[str] = []
    for d in user_dirs:
        p = Path(d)
        if not p.is_dir():
            raise UsageError(f"{d}: template directory not found")
        search.append(str(p))
    search.append(str(default_template_dir()))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = md_cell
    env.filters["inline"] = md_inline
    env.filters["code"] = md_code
    env.filters["linktext"] = md_link_text
    env.filters["url"] = _url
    env.filters["num"] = _num
    env.filters["dur"] = _duration
    env.filters["offset"] = _offset
    return env


@lru_cache(maxsize=8)
def _cached_environment(user_dirs: tuple[str, ...]) -> jinja2.Environment:
    return environment(user_dirs)


def render(template: str, context: Any, user_dirs: Sequence[str | Path] = ()) -> str:
    """Render ``template`` with ``ctx=context`` (the environment, and so every compiled template,
    is kept for the process)."""
    env = _cached_environment(tuple(str(d) for d in user_dirs))
    try:
        tpl = env.get_template(template)
    except jinja2.TemplateNotFound as exc:
        raise UsageError(f"template {template!r} not found") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"template {exc.filename or template}, line {exc.lineno}: {exc.message}") from exc
    try:
        return tpl.render(ctx=context)
    except jinja2.UndefinedError as exc:
        raise UsageError(f"template {template!r}: {exc}") from exc
    except RecursionError as exc:
        if _packaged(tpl):
            raise
        raise UsageError(
            f"template {tpl.filename or template}: includes or extends itself (endless recursion)"
        ) from exc
    except (ArithmeticError, TypeError, ValueError, LookupError, jinja2.TemplateError) as exc:
        if _packaged(tpl):
            raise  # our own template failing is a bug
        raise UsageError(f"template {tpl.filename or template}: {type(exc).__name__}: {exc}") from exc


def _packaged(tpl: jinja2.Template) -> bool:
    """Whether ``tpl`` is one of postmortem's own templates (not one from --templates)."""
    own = str(default_template_dir().resolve())
    return bool(tpl.filename) and str(Path(str(tpl.filename)).resolve()).startswith(own)


def _url(value: Any) -> str:
    """A relative link target: percent-encoded so spaces and parentheses cannot break it."""
    from urllib.parse import quote

    return quote(str(value), safe="/._-")


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _offset(seconds: float) -> str:
    """A clock offset: ``-0.00038`` → ``-0.38 ms``; ``7200`` → ``+7200.0 s (2.0 h)``."""
    s = float(seconds)
    if abs(s) < 1:
        return f"{s * 1000:+.2f} ms"
    text = f"{s:+.1f} s"
    if abs(s) >= 3600:
        text += f" ({s / 3600:+.1f} h)" if abs(s) < 86400 * 2 else f" ({s / 86400:+.2f} d)"
    return text


def _duration(seconds: float | None) -> str:
    """``570`` → ``9 min 30 s``; ``None`` → ``—``."""
    if seconds is None:
        return "—"
    s = float(seconds)
    if s < 0:
        return "-" + _duration(-s)
    if s < 60:
        return f"{s:.0f} s" if s >= 10 or s == int(s) else f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    if m < 60:
        return f"{m} min {sec} s" if sec else f"{m} min"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


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
