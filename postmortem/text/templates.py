"""Jinja2 rendering: packaged templates, a user's directory searched first, StrictUndefined.

User templates are trusted code (Jinja can call methods on the context objects): point
``--templates`` only at directories you would also run Python from.

A rule's words live in ``templates/rules/<rule>.md.j2`` as named blocks (``title``, ``text``,
``action``, ``headline``, ``summary``, ``factor``, ``went_well``… —
:data:`postmortem.analysis.rules.words.BLOCKS`), rendered with the rule's finding data as
variables (:func:`render_blocks`); whitespace in a block is folded to single spaces, so a
template may wrap its sentences freely.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from ..errors import UsageError
from ..lazyre import lazy_re
from .formats import FILTERS
from .markdown import md_cell, md_code, md_inline, md_link_text, md_span, md_span_cell


def default_template_dir() -> Path:
    """``templates/`` of the source tree, or ``postmortem/templates`` inside a wheel."""
    packaged = resources.files("postmortem").joinpath("templates")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"


def environment(user_dirs: Sequence[str | Path] = (), *, prose: bool = False) -> jinja2.Environment:
    """The environment: ``prose`` keeps the line breaks around tags (a rule's blocks are
    paragraphs whose whitespace is folded: a line break is a space there)."""
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
        trim_blocks=not prose,
        lstrip_blocks=not prose,
        bytecode_cache=_bytecode_cache(prose),
    )
    env.filters.update(FILTERS)
    env.filters["cell"] = md_cell
    env.filters["inline"] = md_inline
    env.filters["code"] = md_code
    env.filters["span"] = md_span
    env.filters["span_cell"] = md_span_cell
    env.filters["linktext"] = md_link_text
    env.filters["url"] = _url
    return env


class _Compiled(jinja2.FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, in its per-user directory (:func:`_cache_dir`). A
    template is compiled again when its text changes (each entry holds its source's
    checksum). A cache that cannot be written or read is no cache: the template is compiled
    as without one."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        # an entry cut short or damaged: Jinja lets its checksum's unpickling errors through
        # (every build would fail until the file were removed); compiled again, it is rewritten
        try:
            super().load_bytecode(bucket)
        except Exception:
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


@lru_cache(maxsize=2)
def _bytecode_cache(prose: bool) -> jinja2.BytecodeCache | None:
    """Compiling the report's and the rules' templates took 0.15 s of a one-incident build of
    1.2 s; loading them compiled takes a few ms. ``POSTMORTEM_TEMPLATE_CACHE=0`` turns it off.
    The entries of the two environments are kept apart (the same file compiles differently
    with and without ``trim_blocks``)."""
    if os.environ.get("POSTMORTEM_TEMPLATE_CACHE", "1") == "0":
        return None
    directory = _cache_dir()
    if directory is None:
        return None
    # (Jinja's header names its bytecode format and Python's version, not Jinja's: code one
    # Jinja compiled is not handed to another)
    kind = "prose" if prose else "trim"
    return _Compiled(directory, pattern=f"postmortem-jinja{jinja2.__version__}-{kind}-%s.cache")


def _cache_dir() -> str | None:
    """Jinja's per-user directory, ``_jinja2-cache-<uid>`` in the temporary directory, made
    0700; ``None`` unless it is a directory of the user's that only the user can use. Checked
    here, without following a link: Jinja's own check changes the mode of whatever a link in
    its place points to before refusing the link, and makes a directory that others could
    write to 0700, keeping what they put there (code is loaded from it)."""
    path = os.path.join(tempfile.gettempdir(), f"_jinja2-cache-{os.getuid()}")
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # a link, a file, a read-only temporary directory
        return None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


@lru_cache(maxsize=8)
def cached_environment(user_dirs: tuple[str, ...], prose: bool = False) -> jinja2.Environment:
    """:func:`environment`, kept for the process (every compiled template with it)."""
    return environment(user_dirs, prose=prose)


def get_template(
    template: str, user_dirs: Sequence[str | Path] = (), *, prose: bool = False
) -> jinja2.Template:
    env = cached_environment(tuple(str(d) for d in user_dirs), prose)
    try:
        return env.get_template(template)
    except jinja2.TemplateNotFound as exc:
        raise UsageError(f"template {template!r} not found") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"template {exc.filename or template}, line {exc.lineno}: {exc.message}") from exc


def render(template: str, context: Any, user_dirs: Sequence[str | Path] = ()) -> str:
    """Render ``template`` with ``ctx=context``."""
    tpl = get_template(template, user_dirs)
    with _user_errors(tpl, template):
        return tpl.render(ctx=context)


def render_blocks(
    template: str, data: Mapping[str, Any], blocks: Sequence[str], user_dirs: Sequence[str | Path] = ()
) -> dict[str, str]:
    """The named blocks of ``template`` rendered with ``data`` as its variables, each with its
    whitespace folded (a missing block renders as ``""``)."""
    tpl = get_template(template, user_dirs, prose=True)
    out: dict[str, str] = {}
    with _user_errors(tpl, template):
        ctx = tpl.new_context(dict(data))
        for name in blocks:
            fn = tpl.blocks.get(name)
            out[name] = _fold("".join(fn(ctx))) if fn is not None else ""
    return out


_SPACE = lazy_re(r"\s+")


def _fold(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class _user_errors:
    """A user template's error → one :class:`UsageError` naming the template; ours → raised."""

    def __init__(self, tpl: jinja2.Template, name: str) -> None:
        self.tpl, self.name = tpl, name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            return
        tpl, template = self.tpl, self.name
        if isinstance(exc, jinja2.UndefinedError):
            raise UsageError(f"template {template!r}: {exc}") from exc
        if isinstance(exc, RecursionError):
            if _packaged(tpl):
                return
            raise UsageError(
                f"template {tpl.filename or template}: includes or extends itself (endless recursion)"
            ) from exc
        if isinstance(exc, (ArithmeticError, TypeError, ValueError, LookupError, jinja2.TemplateError)):
            if _packaged(tpl):
                return  # our own template failing is a bug
            raise UsageError(f"template {tpl.filename or template}: {type(exc).__name__}: {exc}") from exc


def _packaged(tpl: jinja2.Template) -> bool:
    """Whether ``tpl`` is one of postmortem's own templates (not one from --templates)."""
    own = str(default_template_dir().resolve())
    return bool(tpl.filename) and str(Path(str(tpl.filename)).resolve()).startswith(own)


def _url(value: Any) -> str:
    """A relative link target: percent-encoded so spaces and parentheses cannot break it."""
    from urllib.parse import quote

    return quote(str(value), safe="/._-")
