"""The journal router's engine check budget: the lines of a token past its budget are held."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from postmortem.parsers.journal.vector import _past_budget


def _reference(
    routed: list[int], tix_all: list[int], limits: list[int]
) -> tuple[list[int], dict[int, list[int]]]:
    seen: dict[int, int] = {}
    kept: list[int] = []
    held: dict[int, list[int]] = {}
    for pos in routed:
        t = tix_all[pos]
        rank = seen.get(t, 0)
        seen[t] = rank + 1
        if limits[t] > 0 and rank >= limits[t]:
            held.setdefault(t, []).append(pos)
        else:
            kept.append(pos)
    return kept, held


@given(
    data=st.data(),
    n_tokens=st.integers(1, 6),
    n_lines=st.integers(0, 60),
)
def test_past_budget_equals_a_line_by_line_count(data: st.DataObject, n_tokens: int, n_lines: int) -> None:
    limits = data.draw(st.lists(st.integers(-1, 4), min_size=n_tokens, max_size=n_tokens))
    tix_all = data.draw(st.lists(st.integers(0, n_tokens - 1), min_size=n_lines, max_size=n_lines))
    routed = (
        sorted(data.draw(st.sets(st.integers(0, max(0, n_lines - 1)), max_size=n_lines))) if n_lines else []
    )
    kept, held = _past_budget(np, np.array(routed, dtype=np.int64), np.array(tix_all, dtype=np.int64), limits)
    want_kept, want_held = _reference(routed, tix_all, limits)
    assert kept.tolist() == want_kept
    assert {t: v.tolist() for t, v in held.items()} == want_held
