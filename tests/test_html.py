"""``--format html``: one self-contained page per incident — the figures embedded, nothing the
page did not make, nothing fetched — checked in a real headless browser (Debian's chromium)
when the machine has one (``.ci/run`` installs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

SAMPLE = REPO / "sample_logs"
#: the tags the Markdown report renders to (CommonMark and tables), and the page's frame
TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "ul", "ol", "li",
    "strong", "em", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "img", "a", "hr", "br",
}  # fmt: skip
#: hosts Chromium itself talks to in the background (not the page)
BROWSER_HOSTS = ("google.com", "googleapis.com", "gvt1.com", "gstatic.com")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from typer.testing import CliRunner

    from postmortem.cli import app

    tmp = tmp_path_factory.mktemp("html")
    r = CliRunner().invoke(
        app,
        ["build", "--since", "2025-05-25 20:00", "--tz", "UTC", "--logs", str(SAMPLE), "--db",
         str(tmp / "pm.duckdb"), "--out", str(tmp / "r"), "--format", "html"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (report,) = [p for p in (tmp / "r").glob("*.html") if p.name != "index.html"]
    return report


def test_the_page_is_self_contained(page: Path) -> None:
    text = page.read_text()
    p = _Tags()
    p.feed(text)
    tags = {t for t, _ in p.tags}
    assert tags <= TAGS, tags - TAGS
    assert "script" not in tags and "iframe" not in tags
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in str(csp[0]["content"])
    images = [a for t, a in p.tags if t == "img"]
    assert len(images) == 2  # the memory and the loads figure
    assert all(str(a["src"]).startswith("data:image/png;base64,") for a in images)
    links = [str(a.get("href")) for t, a in p.tags if t == "a"]
    assert links and all(h.startswith("#") for h in links)
    ids = {a.get("id") for t, a in p.tags if a.get("id")}
    assert {h[1:] for h in links} <= ids  # every anchor lands on a heading
    for section in ("Summary", "Trigger", "Action items", "Lessons learned", "A. Recommendations in full"):
        assert f">{section}</h2>" in text


def test_the_index_links_the_reports(page: Path) -> None:
    index = (page.parent / "index.html").read_text()
    assert f'href="{page.name}"' in index


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_chromium_shows_the_figures_and_fetches_nothing(page: Path, tmp_path: Path) -> None:
    shot, netlog = tmp_path / "page.png", tmp_path / "net.json"
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--log-net-log={netlog}", "--window-size=1280,2400",
         f"--screenshot={shot}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)[..., :3]
    assert img.shape[0] == 2400 and img.shape[1] == 1280
    # the figures' coloured lines: saturated pixels (the text is black and grey, links one blue)
    saturation = img.max(axis=2) - img.min(axis=2)
    assert int((saturation > 0.35).sum()) > 5000
    requested = _urls(netlog)
    page_made = [u for u in requested if u.startswith(("http:", "https:", "ws:", "ftp:"))]
    assert all(any(h in u.split("/")[2] for h in BROWSER_HOSTS) for u in page_made), page_made


def _urls(netlog: Path) -> set[str]:
    data: Any = json.loads(netlog.read_text())
    return {str(e["params"]["url"]) for e in data["events"] if "url" in e.get("params", {})}
