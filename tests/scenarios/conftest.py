"""The scenario tests' known failures, summed up by finding instead of one line each.

``-ra`` (pyproject's addopts) lists every xfailed test; the scenarios have hundreds, one per
(night, check) a finding breaks. They are counted per finding here and dropped from that list;
failures and XPASSes (a fix landed) are listed as usual.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    xfailed = terminalreporter.stats.get("xfailed", [])
    ours = [r for r in xfailed if "tests/scenarios/" in r.nodeid]
    if not ours:
        return
    if len(ours) == len(xfailed):
        # no other test xfails: leave the counts alone, list none of them one by one
        terminalreporter.reportchars = terminalreporter.reportchars.replace("x", "")
    else:
        terminalreporter.stats["xfailed"] = [r for r in xfailed if r not in ours]
    by_finding: Counter[str] = Counter()
    nights: dict[str, set[str]] = {}
    for r in ours:
        reason = str(getattr(r, "wasxfail", "") or "?")
        night = r.nodeid.split("[", 1)[-1].split("-", 1)[0]
        for fid in reason.split("+"):
            by_finding[fid] += 1
            nights.setdefault(fid, set()).add(night)
    terminalreporter.write_sep("-", f"scenarios: {len(ours)} checks fail by a known finding (FINDINGS.md)")
    line = ", ".join(f"{fid} {n} ({len(nights[fid])} nights)" for fid, n in sorted(by_finding.items()))
    terminalreporter.write_line(line)
