#!/usr/bin/env python3
"""Assemble docs/schema.md from docs/schema_parts/*.md (in name order).

Each part's headings move down one level under the page title, so a part's ``## `table` `` becomes
``### `table` `` in the page. ``--check`` exits 1 when docs/schema.md is not up to date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def assemble() -> str:
    # 00_* opens the page, 9*_* closes it, the per-source parts come between in name order
    parts = sorted(
        (DOCS / "schema_parts").glob("*.md"),
        key=lambda p: (0 if p.name.startswith("0") else 2 if p.name.startswith("9") else 1, p.name),
    )
    out: list[str] = []
    for i, part in enumerate(parts):
        text = part.read_text(encoding="utf-8").rstrip() + "\n"
        if i == 0:
            out.append(text)  # the page's own title and store tables
            continue
        out.append("\n" + re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M))
    return "".join(out)


def main() -> None:
    text = assemble()
    target = DOCS / "schema.md"
    if "--check" in sys.argv:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            sys.exit("docs/schema.md is out of date: run python scripts/build_schema_doc.py")
        return
    target.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
