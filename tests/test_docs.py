"""The documentation stays true to the tree: the README stays short and names only commands that
exist, every relative link in the README and docs/ leads somewhere, and docs/cli.md is what
``scripts/build_cli_doc.py`` generates from the current ``--help``."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_LIMIT = 15_000

#: fenced code blocks (``` or ~~~, any length) and inline code spans: links there are text
_FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
#: [text](target) and ![alt](target), the target up to whitespace or the closing parenthesis
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _prose(text: str) -> str:
    """The text with code blocks and code spans blanked out."""
    return _SPAN.sub("", _FENCE.sub("", text))


def _code(text: str) -> list[str]:
    """The contents of the text's code blocks and code spans."""
    blocks = [m.group(0) for m in _FENCE.finditer(text)]
    rest = _FENCE.sub("", text)
    return blocks + [m.group(0).strip("`") for m in _SPAN.finditer(rest)]


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and GitLab make it.

    >>> _slug("`postmortem build`"), _slug("C. Memory pressure"), _slug("Times and durations")
    ('postmortem-build', 'c-memory-pressure', 'times-and-durations')
    """
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for m in _HEADING.finditer(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = _slug(m.group(1))
        n = 1
        unique = slug
        while unique in found:  # GitHub numbers repeated headings: slug, slug-1, slug-2…
            unique = f"{slug}-{n}"
            n += 1
        found.add(unique)
    return found


def _relative_links(page: Path) -> list[str]:
    targets = _LINK.findall(_prose(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)]  # no scheme


def test_readme_is_short() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text) <= README_LIMIT, f"README.md has {len(text):,} characters (limit {README_LIMIT:,})"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target}: no heading '#{fragment}' in {dest.relative_to(REPO)}")
    assert broken == [], f"{page.relative_to(REPO)}: {broken}"


def test_link_check_sees_links() -> None:
    """The checker finds links in prose and ignores those in code."""
    page = DOCS / "cli.md"
    assert "inputs.md#times-and-durations" in _relative_links(page)
    assert _LINK.findall(_prose("`[a](b.md)`\n```\n[c](d.md)\n```\n[e](f.md)\n")) == ["f.md"]


def _cli_doc_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_cli_doc", REPO / "scripts" / "build_cli_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_doc_is_up_to_date() -> None:
    expected = _cli_doc_script().generate()
    actual = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert actual == expected, "docs/cli.md is out of date: run make docs (python scripts/build_cli_doc.py)"


def _cli_commands() -> set[str]:
    import typer.main

    from postmortem.cli import app

    group = typer.main.get_command(app)
    return set(getattr(group, "commands", {}))


def test_readme_names_only_existing_commands() -> None:
    named: set[str] = set()
    for code in _code(README.read_text(encoding="utf-8")):
        named.update(re.findall(r"(?:^|[\s/])postmortem[ \t]+([a-z][a-z-]*)", code, re.M))
    known = _cli_commands()
    assert named, "the README names no command"
    assert named <= known, f"README names commands the CLI lacks: {sorted(named - known)}"
    # the command table lists every command
    missing = [c for c in sorted(known) if f"`postmortem {c}" not in README.read_text(encoding="utf-8")]
    assert missing == [], f"README's command table lacks {missing}"


def test_readme_lists_every_exit_code() -> None:
    """The README's exit-code table names each ``ExitCode`` and the signal codes."""
    from postmortem.errors import ExitCode

    text = README.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\|\s*(\d+(?:,\s*\d+)*)\s*\|", text, re.M))
    listed = {int(code) for row in rows for code in row.split(",")}
    expected = {int(c) for c in ExitCode} | {129, 130, 141, 143}
    assert expected <= listed, f"README's exit codes lack {sorted(expected - listed)}"


def test_readme_links_every_user_page() -> None:
    """Each page directly under docs/ is reachable from the README."""
    linked = {t.partition("#")[0] for t in _relative_links(README)}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages <= linked, f"README links none of {sorted(pages - linked)}"
