"""Regular expressions compiled when first used, not when their module is imported.

Detecting a file's format imports every parser, and each parser module defines its patterns
at the top: an ingest of one nvidia-smi CSV compiled about 250 patterns of postmortem's own
(31 ms of its start-up) and used a few dozen. A module defines its patterns with
:func:`lazy_re` instead of :func:`re.compile`; each is compiled by its first ``match``,
``search``, ``sub`` … (the standard library compiles it; nothing is cached across processes).

The object returned stands in for the compiled pattern wherever the code calls its methods or
reads its attributes. It is not a :class:`re.Pattern`: do not pass it to ``re.sub(pattern, …)``
or test it with ``isinstance`` (postmortem does neither; ``tests/test_startup.py`` checks that
every module-level pattern of the package is lazy and still compiles).
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

#: what a compiled pattern offers, bound on the stand-in at its first use (a later call then
#: finds the bound method in the instance's dictionary: no slower than on the pattern itself)
_MEMBERS = (
    "match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
    "pattern", "flags", "groups", "groupindex",
)  # fmt: skip


class LazyPattern:
    """``re.compile(pattern, flags)``, done by the first attribute asked for."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern[Any]:
        """The compiled pattern (compiling it now if it was not yet: a bad pattern raises here)."""
        pattern, flags = self._source
        compiled = re.compile(pattern, flags)
        for name in _MEMBERS:
            setattr(self, name, getattr(compiled, name))
        return compiled

    def __getattr__(self, name: str) -> Any:
        # only called for names not set yet: the first use
        if name.startswith("__") or name == "_source":
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __reduce__(self) -> tuple[type[LazyPattern], tuple[str | bytes, int]]:
        # (pickled and copied as its source: once used it holds the pattern's bound methods)
        return LazyPattern, self._source

    def __repr__(self) -> str:
        return f"lazy_re({self._source[0]!r})"


def lazy_re(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """A pattern compiled at its first use (typed as the compiled pattern it stands in for).

    >>> word = lazy_re(r"(?P<w>\\w+)")
    >>> word.search("  hello ").group("w"), word.groupindex["w"], word.sub("x", "a b")
    ('hello', 1, 'x x')
    """
    return cast("re.Pattern[AnyStr]", LazyPattern(pattern, int(flags)))
