"""#29 item 8, the smaller findings, and the property the issue asks of every report field:
whatever text a log carries, the rendered report has no element or attribute the template did
not put there."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from hostile import build, elements, incident_report, journal, one_error_line, run, to_html, write_logs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from postmortem.report.redact import Redactor
from postmortem.text.markdown import md_cell, md_inline, md_span, md_span_cell


def test_anonymize_catches_compressed_ipv6_and_upper_case_host_names() -> None:
    a = Redactor(anonymize=True, hosts=["gpu-node-7"])
    text = a("GPU-NODE-7 talks to fe80::1 and 2001:DB8::8A2E:370:7334 (2001:db8::8a2e:370:7334) at 20:17:19")
    assert "gpu-node-7" not in text.lower() and "fe80" not in text and "8a2e" not in text.lower()
    assert text.count("host-1") == 1 and "20:17:19" in text  # a time is not an address
    # one address, one stand-in, whatever its spelling
    assert text.split("and ")[1].split(" ")[0] == text.split("(")[1].rstrip(")").split(")")[0]


def test_a_200_kb_operator_command_is_cut_in_the_report(tmp_path: Path) -> None:
    logs = write_logs(
        tmp_path, journal__txt=journal(operator=("/usr/bin/docker run --label x " + "A" * 200_000,))
    )
    _, out = build(logs, tmp_path)
    report = incident_report(out).read_text()
    longest = max(len(line) for line in report.splitlines())
    assert longest < 5_000, longest
    assert "characters cut" in report


def test_ingest_into_a_directory_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    logs = write_logs(tmp_path, journal__txt=journal())
    db = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    ran = run("ingest", logs, "--db", db)
    assert "no directory" in one_error_line(ran)
    assert not (tmp_path / "no").exists()


# --------------------------------------------------------------------------- the property

#: what the templates' own Markdown renders to around a value (a table cell, a code span)
ALLOWED = {"table", "thead", "tbody", "tr", "th", "td", "p", "code"}


def _table(value_cells: list[str]) -> str:
    head = "| " + " | ".join("h" for _ in value_cells) + " |\n|" + "---|" * len(value_cells) + "\n"
    return head + "| " + " | ".join(value_cells) + " |\n"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=80))
def test_no_text_makes_an_element_or_attribute_the_template_did_not_put_there(text: str) -> None:
    """Every way a value reaches a report (a cell, a code span in a cell or in a sentence,
    running text) renders to the template's own elements, none with an attribute."""
    markdown = _table([md_cell(text), md_span_cell(text)]) + "\nSaid: " + md_inline(text) + " and "
    markdown += (md_span(text) or "x") + ".\n"
    found = elements(to_html(markdown))
    extra = [(tag, attrs) for tag, attrs in found if tag not in ALLOWED or attrs]
    assert extra == [], (text, markdown)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("`![]()<>@#|*_~\\:/x. \n&;\u202e\x1b"), min_size=1, max_size=60))
def test_markdown_punctuation_alone_makes_no_element_either(text: str) -> None:
    markdown = _table([md_cell(text), md_span_cell(text)]) + "\n" + md_inline(text) + "\n"
    extra = [(tag, attrs) for tag, attrs in elements(to_html(markdown)) if tag not in ALLOWED or attrs]
    assert extra == [], (text, markdown)
    assert "\x1b" not in markdown and "\u202e" not in markdown


# GFM's extended autolinks as cmark-gfm (GitHub's renderer) finds them, looked for in the text
# a renderer shows outside code: ``www.`` at a word start (the line's, a space's, or after
# ``*_~(``); ``http://``, ``https://`` or ``ftp://`` (case aside) and a host character, after
# anything but an ASCII letter — cmark-gfm takes the letters before ``://`` as the scheme, so
# ``1https://`` or ``éhttps://`` is linked, where the spec says a word start; and
# ``local@domain.tld`` (local part of alphanumerics and ``.+-_``; domain parts of
# alphanumerics, ``-`` and ``_``, at least one period). Escapes split GFM's text nodes, which
# only ever prevents a link, so looking at the joined text over-reports and never misses one.
# GitLab also links any lowercase ``scheme://`` and what follows it, anywhere in a text node
# (its AutolinkFilter: ``ssh://``, ``smb://``, ``tcp://``).
_GFM_AUTOLINK = re.compile(
    r"(?i)(?:^|(?<=[\s*_~(]))www\.[A-Za-z0-9_-]"
    r"|(?<![A-Za-z])(?:https?|ftp)://[^\s!-/:-@\[-`{-~]"
    r"|[A-Za-z0-9.+_-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+"
    r"|[a-z][a-z0-9+.-]+://[^\s>]"
)


def _outside_code(html: str) -> str:
    """The text of ``html`` outside ``<code>`` elements, entities decoded."""
    return unescape(re.sub(r"<code>.*?</code>", " ", html, flags=re.S).replace("<", " <"))


_ADDRESS_PARTS = [
    *("ops", "sglang", "k26", "www", "http", "https", "://", "@", ".", "-", "_", "+", " ", "\n"),
    *("x", "a.b", "|", "`", "\\", "(", "*", "service", "io", "é", "ftp", "1", "HTTPS", "ssh", "[", "&"),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ADDRESS_PARTS), min_size=1, max_size=14).map("".join))
# cmark-gfm links a scheme after a digit, a non-ASCII letter, ``.`` or ``-``, and ``ftp://``
@example("1https://x.io")
@example("éhttp://x.io")
@example("v.https://x.io and -http://x.io")
@example("see ftp://x.io/a")
@example("FTP://x.io")
# GitLab: any scheme, and one followed by Markdown punctuation
@example("dist-init-addr tcp://10.0.0.1:5000, share smb://evil.example/s")
@example("ssh://`x` and git+ssh://|y")
def test_no_text_becomes_an_autolink_where_github_renders_the_report(text: str) -> None:
    """GitHub and GitLab link bare addresses and e-mail-like words (``sglang@k26.service``)
    even with every Markdown character escaped: each filter leaves them only inside code."""
    for markdown in (md_cell(text), md_inline(text)):
        shown = _outside_code(to_html(markdown))
        assert not _GFM_AUTOLINK.search(shown), (text, markdown, shown)
