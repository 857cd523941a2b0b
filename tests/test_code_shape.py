"""The shape of the code: no function over 150 lines (ruff's C901 checks complexity). The
functions that were longer when the check was switched on are listed; the list may only shrink
(docs/dev/README.md, "Complexity debt")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "postmortem"
MAX_LINES = 150
#: (file, function) → its length when the check was switched on: it may not grow
LONG: dict[tuple[str, str], int] = {}


def _lengths() -> dict[tuple[str, str], int]:
    out = {}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                out[(path.relative_to(ROOT).as_posix(), node.name)] = node.end_lineno - node.lineno + 1
    return out


def test_no_function_is_over_150_lines_but_the_listed_ones_which_do_not_grow() -> None:
    lengths = _lengths()
    too_long = {k: n for k, n in lengths.items() if n > MAX_LINES and k not in LONG}
    assert too_long == {}, "split these functions"
    grown = {k: (lengths.get(k), n) for k, n in LONG.items() if lengths.get(k, 0) > n}
    assert grown == {}, "a listed long function grew"


def test_the_list_is_current() -> None:
    """A listed function that is now short enough (or gone) leaves the list."""
    lengths = _lengths()
    stale = [k for k in LONG if lengths.get(k, 0) <= MAX_LINES]
    assert stale == [], "remove these from LONG and from docs/dev/README.md"


def test_at_most_eight_files_outside_the_engines_name_sglang() -> None:
    """Engines are plug-ins (issue #26): outside ``postmortem/engines/`` and the migrations, at most
    8 files of ``postmortem/`` and ``templates/`` name SGLang (55 before the redesign)."""
    repo = ROOT.parent
    naming = sorted(
        p.relative_to(repo).as_posix()
        for top in (ROOT, repo / "templates")
        for p in top.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".sql", ".j2", ".md", ".toml", ".json", ".txt")
        and "engines" not in p.relative_to(ROOT if top == ROOT else top).parts
        and "migrations" not in p.parts
        and "sglang" in p.read_text(encoding="utf-8", errors="replace").lower()
    )
    assert len(naming) <= 8, naming
