"""Reports: typed contexts, plots and Jinja rendering of the derived tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..query import run_named_dicts
from ..store.db import Store
from .render import render

if TYPE_CHECKING:
    from ..build import BuildOptions


@dataclass
class Written:
    reports: list[Path] = field(default_factory=list)
    index: Path | None = None
    incidents: int = 0
    bundles: list[Path] = field(default_factory=list)


def write_reports(store: Store, options: BuildOptions) -> Written:
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    sources = run_named_dicts(store, "sources_overview")
    text = render("index.md.j2", {"sources": sources}, options.templates)
    index = out / "index.md"
    index.write_text(text, encoding="utf-8")
    return Written(index=index)
