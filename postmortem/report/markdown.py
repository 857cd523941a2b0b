"""Making untrusted log text inert in Markdown (GitHub and GitLab flavours).

Log lines are attacker-influenced: a request path, a model name or an exception message can
contain ``|``, backticks, HTML or link syntax. These helpers are the only way text from the
store reaches a report.

>>> md_cell("a | b <script>alert(1)</script>")
'a \\\\| b &lt;script&gt;alert(1)&lt;/script&gt;'
>>> md_inline("mem_fraction_static (0.85) *not* [a link](x)")
'mem_fraction_static (0.85) \\\\*not\\\\* \\\\[a link\\\\](x)'
>>> md_inline("1. not a list, _not emphasis_")
'1\\\\. not a list, \\\\_not emphasis\\\\_'
>>> md_code("x\\n```\\ny")
'````text\\nx\\n```\\ny\\n````'
"""

from __future__ import annotations

import re

# Characters that act anywhere in a line. ``(``, ``)``, ``!``, ``{``, ``}`` and ``+`` need no
# escape once ``[``/``]`` are escaped and HTML is entity-encoded (no link, image or autolink can
# form), and escaping them only makes the raw report hard to read. ``#`` stays escaped: GitHub
# and GitLab turn ``#123`` into an issue link when a report is pasted into a ticket.
_INLINE_SPECIAL = re.compile(r"([\\`*\[\]|~#])")
# ``_`` opens or closes emphasis only next to a non-alphanumeric character; ``mem_fraction``
# stays as it is.
_EDGE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# Block syntax that only matters at the start of the text (headings, lists, setext rules).
_BLOCK_START = re.compile(r"^([+\-=]|\d+(?=[.)]))")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_inline(text: object) -> str:
    """Plain text in running Markdown: HTML escaped, Markdown punctuation backslashed."""
    if text is None:
        return ""
    s = str(text).replace("\r", " ").replace("\n", " ")
    s = _html(s).lstrip()
    s = _INLINE_SPECIAL.sub(r"\\\1", s)
    s = _EDGE_UNDERSCORE.sub(r"\\_", s)
    m = _BLOCK_START.match(s)
    if m:
        s = m.group(0) + "\\" + s[m.end() :] if m.group(0)[0].isdigit() else "\\" + s
    return s


def md_cell(text: object) -> str:
    """Text inside a table cell: one line, ``|`` escaped, HTML escaped, backticks neutral."""
    if text is None:
        return ""
    s = str(text).replace("\r", " ").replace("\n", " ")
    s = _html(s)
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    s = s.replace("[", "\\[").replace("]", "\\]")
    return s


def md_code(text: object, lang: str = "text") -> str:
    """A fenced code block that the content cannot close: the fence is longer than any run
    of backticks inside."""
    s = "" if text is None else str(text)
    longest = max((len(m.group(0)) for m in re.finditer(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{s}\n{fence}"


def md_link_text(text: object) -> str:
    return md_cell(text)
