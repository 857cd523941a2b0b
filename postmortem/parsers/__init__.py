"""The parser registry: one module per log source, each registering its parsers by name.

Adding a source = one module under ``postmortem/parsers/``, its test data under
``tests/data/<name>/`` and one line in :data:`PARSER_MODULES`. An inference engine's parsers
live in its package (``postmortem/engines/<name>/``) and are loaded through the engine
registry (:attr:`postmortem.engines.Engine.parser_modules`).
"""

from __future__ import annotations

import importlib
from typing import TypeVar

from .base import Head, Parser

#: modules that register parsers, in load order (the registry line to add for a new source)
PARSER_MODULES: tuple[str, ...] = (
    "journal",
    "kernel",
    "nvidia",
    "kubernetes",
)

_REGISTRY: dict[str, Parser] = {}
_loaded = False

P = TypeVar("P", bound="type[Parser]")


class DuplicateParserError(RuntimeError):
    pass


def register(cls: P) -> P:
    """Class decorator: register a parser under ``cls.name``; a second use of a name fails."""
    name = cls.name
    if name in _REGISTRY:
        raise DuplicateParserError(f"parser name {name!r} registered twice")
    _REGISTRY[name] = cls()
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in PARSER_MODULES:
        importlib.import_module(f"{__name__}.{module}")
    from ..engines import engines

    for engine in engines().values():
        for module in engine.parser_modules:
            importlib.import_module(f"{engine.__module__}.{module}")


def all_parsers() -> dict[str, Parser]:
    _load()
    return dict(_REGISTRY)


def get_parser(name: str) -> Parser | None:
    _load()
    return _REGISTRY.get(name)


def detect(head: Head, threshold: int = 30) -> tuple[Parser | None, int]:
    """The best-scoring parser for ``head`` (or ``None`` below ``threshold``)."""
    best: Parser | None = None
    best_score = 0
    for parser in all_parsers().values():
        try:
            score = parser.sniff(head)
        except Exception:  # a sniffer must never break detection of other formats
            score = 0
        if score > best_score:
            best, best_score = parser, score
    if best_score < threshold:
        return None, best_score
    return best, best_score
