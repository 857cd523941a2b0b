"""``--format html``: one self-contained HTML file per report, for ticket systems that do not
render Markdown with images.

The HTML is the Markdown report rendered by markdown-it (CommonMark and tables) with raw HTML
off, so nothing in the Markdown — log text included — becomes a tag the renderer did not make.
The figures beside the report are embedded as ``data:`` URIs; every other image is dropped (its
alt text stays), a link is kept only when it points at a heading of the page itself, and a
Content-Security-Policy forbids the page any fetch, script or frame. Headings get GitHub-style
ids so the report's ``#appendix`` links work.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STYLE = """
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 72rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; margin-top: 1.8rem; }
table { border-collapse: collapse; margin: .6rem 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(2n) td { background: #fbfcfd; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa;
       padding: .1rem .25rem; border-radius: 4px; overflow-wrap: anywhere; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; }
pre code { padding: 0; background: none; }
img { max-width: 100%; border: 1px solid #d0d7de; }
hr { border: 0; border-top: 2px solid #d0d7de; margin: 2rem 0; }
"""

#: what the page may load: its own inline style and embedded images, nothing from anywhere
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("A. Recommendations in full"), slug("Root cause and contributing factors")
    ('a-recommendations-in-full', 'root-cause-and-contributing-factors')
    """
    text = re.sub(r"[^\w\- ]", "", text.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _renderer(images: Mapping[str, Path], pages: frozenset[str]) -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    # a link or image target the page may have: an anchor of its own, a figure beside it, or a
    # page postmortem wrote beside it (the index's reports)
    md.validateLink = lambda url: url.startswith("#") or url in images or url in pages  # type: ignore[method-assign]
    return md


def _embed(tokens: list[Any], images: Mapping[str, Path]) -> None:
    """Images → data: URIs of the figures beside the report; headings → ids."""
    seen: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            base = slug(tokens[i + 1].content)
            n = seen.get(base, 0)
            seen[base] = n + 1
            tok.attrSet("id", base if n == 0 else f"{base}-{n}")
        for child in tok.children or []:
            if child.type == "image":
                src = str(child.attrGet("src") or "")
                data = base64.b64encode(images[src].read_bytes()).decode("ascii")
                child.attrSet("src", f"data:image/png;base64,{data}")


def markdown_to_html(
    markdown: str, title: str, images: Mapping[str, Path], pages: frozenset[str] = frozenset()
) -> str:
    """The whole page for a Markdown report; ``images`` maps the figure names the report links
    to the files to embed; ``pages`` are the other pages it may link to."""
    md = _renderer(images, pages)
    tokens = md.parse(markdown)
    _embed(tokens, images)
    body = md.renderer.render(tokens, md.options, {})
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )


def figures_of(report_dir: Path, names: list[str | None]) -> dict[str, Path]:
    """The figures a report links to that exist beside it (by their link target, percent-encoded
    as the templates write it)."""
    from urllib.parse import quote

    out: dict[str, Path] = {}
    for name in names:
        if name and (report_dir / name).is_file():
            out[quote(name, safe="/._-")] = report_dir / name
    return out
