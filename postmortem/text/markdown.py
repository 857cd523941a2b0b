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
>>> md_span("a`![](//x.io)`b"), md_span_cell("x | y")
('``a`![](//x.io)`b``', '`x \\\\| y`')
>>> visible("\\x1b]52;c;aGk=\\x07 \\u202egnp.exe")
'\\\\x1b]52;c;aGk=\\\\x07 \\\\u202egnp.exe'
"""

from __future__ import annotations

import re

from ..lazyre import lazy_re

# Characters that act anywhere in a line. ``(``, ``)``, ``!``, ``{``, ``}`` and ``+`` need no
# escape once ``[``/``]`` are escaped and HTML is entity-encoded (no link, image or autolink can
# form), and escaping them only makes the raw report hard to read. ``#`` stays escaped: GitHub
# and GitLab turn ``#123`` into an issue link when a report is pasted into a ticket.
_INLINE_SPECIAL = lazy_re(r"([\\`*\[\]|~#])")
# ``_`` opens or closes emphasis only next to a non-alphanumeric character; ``mem_fraction``
# stays as it is.
_EDGE_UNDERSCORE = lazy_re(r"(?<![^\W_])_|_(?![^\W_])")
# A code span as CommonMark reads the simplest one: a lone backtick, text without one, a lone
# backtick (a line break is already a space here); every other backtick is escaped, so a reader
# pairs them as this does. Text with ``<``, ``>`` or ``&`` is not made a span: the report keeps
# no raw HTML-like text at all, even where a renderer would show it literally.
_CODE_SPAN = lazy_re(r"(?<!`)`[^`<>&]+`(?!`)")
# ``@name`` becomes a mention where ``@`` starts a word (``sglang@k26.service`` is none)
_MENTION = lazy_re(r"(?<!\w)@")
# Block syntax that only matters at the start of the text (headings, lists, setext rules).
_BLOCK_START = lazy_re(r"^([+\-=]|\d+(?=[.)]))")


# C0 and C1 controls (tab aside), DEL, and the bidirectional controls that reorder what a reader
# sees (U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C): shown as escapes, never raw — a
# terminal would act on them, and a reader of the report would see text that is not there
_INVISIBLE = lazy_re(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control and bidirectional-override character shown as ``\\xNN`` or
    ``\\uNNNN`` (a newline too: call it on one line, or on each line)."""
    return _INVISIBLE.sub(_escape_char, text)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# a bare web address or e-mail address: GitHub and GitLab link one (GFM's extended autolinks:
# ``www.``, ``http(s)://`` and ``ftp://``, and ``name@host.domain``, which a systemd template
# unit such as ``sglang@k26.service`` is too) even with every Markdown character escaped; inside
# a code span nothing is linked, so it is shown as one. cmark-gfm takes the ASCII letters before
# ``://`` as the scheme: ``xhttp://`` is none, but ``1https://``, ``éhttps://`` and ``_http://``
# are links (and ``www.`` after ``_``, ``*``, ``~``, ``(``). GitLab links any lowercase
# ``scheme://`` (``ssh://``, ``smb://``, ``tcp://``) and whatever follows it but a space, in
# any text: every scheme goes in the span, even with nothing after it the span can hold.
_BARE_URL = lazy_re(
    r"(?i)(?:[a-z][a-z0-9+.-]*://|(?<![a-z])www\.(?=[^\s<>&\"'`|\\\[\]]))[^\s<>&\"'`|\\\[\]]*"
    # (an address inside a path is spanned with the whole path: logs/vllm@k26.service.log:377)
    r"|(?<![\w./~+-])[\w./~+-]*?[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?::\d+)?"
)


def _spans(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is code, part): a pair of backticks around text without one is a code
    span, whatever wrote it — inside one nothing is markup (no HTML, link, emphasis or mention
    forms), so a span is kept as code rather than shown with escaped backticks."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        if m.start() > pos:
            out += _urls(text[pos : m.start()])
        out.append((True, m.group(0)))
        pos = m.end()
    if pos < len(text):
        out += _urls(text[pos:])
    return out


def _urls(text: str) -> list[tuple[bool, str]]:
    """Plain ``text`` with each bare web address made a code span (never a link).

    >>> _urls("see http://evil.example/x?a=1 now")
    [(False, 'see '), (True, '`http://evil.example/x?a=1`'), (False, ' now')]
    >>> _urls("1ftp://a.b to smb://evil/s|x")
    [(False, '1'), (True, '`ftp://a.b`'), (False, ' to '), (True, '`smb://evil/s`'), (False, '|x')]
    >>> _urls("mail ops+oom@corp.example, unit sglang@k26.service, not root@host")
    [(False, 'mail '), (True, '`ops+oom@corp.example`'), (False, ', unit '), (True, '`sglang@k26.service`'), (False, ', not root@host')]
    >>> _urls("logs/vllm@k26.service.log:377 and /var/log/a@b.log")
    [(True, '`logs/vllm@k26.service.log:377`'), (False, ' and '), (True, '`/var/log/a@b.log`')]
    """
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in _BARE_URL.finditer(text):
        if m.start() > pos:
            out.append((False, text[pos : m.start()]))
        out.append((True, f"`{m.group(0)}`"))
        pos = m.end()
    if pos < len(text) or not out:
        out.append((False, text[pos:]))
    return out


def md_inline(text: object) -> str:
    """Plain text in running Markdown: HTML escaped, Markdown punctuation backslashed; a
    `` `code span` `` stays one."""
    if text is None:
        return ""
    s = visible(str(text).replace("\r", " ").replace("\n", " ").lstrip())
    out = []
    for i, (code, part) in enumerate(_spans(s)):
        if code:
            out.append(part)
            continue
        part = _MENTION.sub(r"\\@", _INLINE_SPECIAL.sub(r"\\\1", _html(part)))
        part = _EDGE_UNDERSCORE.sub(r"\\_", part)
        if i == 0:
            m = _BLOCK_START.match(part)
            if m:
                part = m.group(0) + "\\" + part[m.end() :] if m.group(0)[0].isdigit() else "\\" + part
        out.append(part)
    return "".join(out)


def md_cell(text: object) -> str:
    """Text inside a table cell: one line, ``|`` escaped, HTML escaped, stray backticks
    neutral; a `` `code span` `` stays one (with its ``|`` escaped, as GFM tables read it)."""
    if text is None:
        return ""
    s = visible(_cut(str(text)).replace("\r", " ").replace("\n", " "))
    out = []
    for code, part in _spans(s):
        if code:
            out.append(part.replace("|", "\\|"))
            continue
        # backslashes, backticks, emphasis, links and strike-through escaped; ``@name`` and
        # ``#123`` too (mentions and issue links when a report is pasted into a ticket)
        part = _INLINE_SPECIAL.sub(r"\\\1", _html(part))
        part = _EDGE_UNDERSCORE.sub(r"\\_", part)
        out.append(_MENTION.sub(r"\\@", part))
    return "".join(out)


#: the longest text a table cell shows (a 200 KB operator command made one 200,000-character
#: row); the rest is said to be cut, and the cited line has it all
CELL_MAX = 1000


def _cut(text: str, limit: int = CELL_MAX) -> str:
    """``text`` cut at ``limit`` characters, saying how many were left out.

    >>> _cut("x" * 1005, 1000)[-30:]
    'xxxxxxxxxx… [5 characters cut]'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} characters cut]"


def md_span(text: object, *, in_table: bool = False) -> str:
    """``text`` as one whole code span, which the text cannot close: the fence is longer than
    any run of backticks inside (a template never wraps a value in backticks of its own: a
    value's balanced backticks would close them and open live Markdown). Inside a code span
    nothing is markup; ``in_table``: ``|`` escaped, as GFM tables read it."""
    if text is None:
        return ""
    s = visible(str(text).replace("\r", " ").replace("\n", " "))
    if not s:
        return ""
    if in_table:
        s = _cut(s)
        s = s.replace("|", "\\|")
    longest = max((len(m.group(0)) for m in re.finditer(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    if s[0] in "` " or s[-1] in "` ":
        s = f" {s} "  # CommonMark strips one space each side: a backtick at an edge stays text
    return f"{fence}{s}{fence}"


def md_span_cell(text: object) -> str:
    """:func:`md_span` for a table cell; the dash of a missing value stays a dash.

    >>> md_span_cell("—"), md_span_cell("a|b")
    ('—', '`a\\\\|b`')
    """
    if text == "—":
        return "—"
    return md_span(text, in_table=True)


def md_code(text: object, lang: str = "text") -> str:
    """A fenced code block that the content cannot close: the fence is longer than any run
    of backticks inside."""
    s = "" if text is None else "\n".join(visible(line) for line in str(text).split("\n"))
    longest = max((len(m.group(0)) for m in re.finditer(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{s}\n{fence}"


def md_link_text(text: object) -> str:
    return md_cell(text)
