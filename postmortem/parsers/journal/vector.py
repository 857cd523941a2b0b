"""The vectorised path of ``journal-short``: whole chunks in Arrow compute, Python only per
distinct stamp, per distinct identifier token and per line that needs routing.

Most lines of a journal or syslog file have one layout: ``<stamp> <host> <ident>[<pid>]:
<message>`` with a stamp of a fixed number of space-separated tokens (the file's mode). Such
lines are split by Arrow (``split_pattern`` with a bounded split count), stamps are parsed once
per distinct value (zone-offset ISO stamps and epoch seconds in Arrow, the rest by
:class:`~.short.StampParser`; with the fraction split off, so precise modes parse once per
second), and identifier tokens once per distinct value. Every other line — continuation
lines, header and catalog lines, host-less or padded-day lines, garbage — goes through the
per-line reference path in line order; lines that need routing (systemd, kernel,
systemd-oomd, earlyoom, SGLang candidates) are routed in line order with their complete
messages.

SGLang output is most of what such journals hold: the batch and access lines of an SGLang
stream (one per identifier + pid, or unit) are stored by the SGLang module's vectorised pass
(:func:`~postmortem.parsers.sglang.fast.fast_messages`, with the journal's time, host, unit and
pid), and only that stream's other lines are fed to its ``SglangStream`` one by one, in line
order (:class:`_FastSglang`). Lines of a candidate that cannot start a stream (no ``[``, no
``server_args=``) only count against its check budget. The result is the same as the
per-line path's (property tests check it, with SGLang output, kernel, systemd and odd lines).
"""

from __future__ import annotations

import bisect
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..base import LineChunk, Output
from .short import CATALOG, FULL, ISO, MONTH, UNIX, _unescape, meta_line, split_line
from .sink import EPOCH, MAX_MESSAGE_CHARS, SPECIAL_IDENTS, _schema

if TYPE_CHECKING:
    from .short import ShortState

_US = timedelta(microseconds=1)
#: stands for a missing time in an int64 copy of a time column
_NO_TS = -(1 << 63)
#: what rsyslog's escapes turn into a newline or a tab (the only change ``_unescape`` makes)
_ESCAPE = re.compile("#01[12]")
#: a routed line past its SGLang check budget (see ``VectorShort.chunk``)
_HELD = object()
#: a chunk of fewer lines (about: 40 bytes a line) goes through the per-line path (Arrow
#: setup costs more)
MIN_LINES = 64


class VectorShort:
    def __init__(self, state: ShortState) -> None:
        self.state = state
        self.layout: tuple[int, int] | None = None  # (tokens in the stamp, fraction position)
        self.tried = 0
        self.kind: str | None = None
        self._stamps: dict[str, tuple[int | None, str | None]] = {}

    # ------------------------------------------------------------------ layout

    def _learn(self, text: str) -> bool:
        """Take the layout from the first regular line of the file (with a scratch stamp
        parser: the file's own must see its stamps in line order)."""
        from ..base import ParseContext
        from .short import StampParser

        stamps = StampParser(ParseContext(year=2000, zone=self.state.ctx.zone))
        for line in text.split("\n", 200)[:200]:
            c = line[:1]
            if not c or c in " \t-░":
                continue
            st = stamps.parse(line)
            if st is None:
                continue
            raw, kind = st[1], st[5]
            host, itok, _ = split_line(line, st[4])
            if kind not in (ISO, UNIX, MONTH, FULL) or host is None or itok is None:
                return False
            if "  " in raw:
                if kind != MONTH:
                    return False
                raw = " ".join(raw.split())  # a space-padded day
            frac = -1
            dot = raw.find(".")
            if dot > 0 and raw[dot + 1 : dot + 7].isdigit() and not raw[dot + 7 : dot + 8].isdigit():
                frac = dot
            self.layout = (raw.count(" ") + 1, frac)
            self.kind = kind
            return True
        return False

    # ------------------------------------------------------------------ one chunk

    def chunk(self, text: str, first: int) -> list[Output] | None:
        """Process one chunk (complete entry groups); None → use the per-line path."""
        if self.layout is None and (self.tried > 3 or not self._learn(text)):
            self.tried += 1
            if self.tried > 3:
                self.state.vector = None  # not a regular file: per-line from now on
            return None
        if len(text) < MIN_LINES * 40:
            return None
        import pyarrow as _pa
        import pyarrow.compute as _pc

        pa: Any = _pa  # the stubs are stricter than these compute chains need
        pc: Any = _pc
        assert self.layout is not None
        k, frac = self.layout
        state = self.state
        ctx, sink, stamps = state.ctx, state.sink, state.stamps
        big = 1 << 30
        lines = original = LineChunk(first, text).arrow().cast(pa.string())
        n = len(lines)
        if pc.any(pc.or_(pc.starts_with(lines, "-- Boot "), pc.equal(lines, "-- Reboot --"))).as_py():
            return None  # a boot marker switches the boot id in line order
        pad = None
        if self.kind == MONTH and k == 3:
            # RFC 3164 pads the day with a space ("Jan  1"): read it as "Jan 01", print it as is
            pad = pc.fill_null(
                pc.and_(
                    pc.equal(pc.utf8_slice_codeunits(lines, 3, 5), "  "),
                    pc.utf8_is_digit(pc.utf8_slice_codeunits(lines, 5, 6)),
                ),
                False,
            )
            if pc.any(pad).as_py():
                joined = pc.binary_join_element_wise(
                    pc.utf8_slice_codeunits(lines, 0, 4), pc.utf8_slice_codeunits(lines, 5, big), "0"
                )
                lines = pc.if_else(pad, joined, lines)
            else:
                pad = None
        import numpy as np

        parts = pc.split_pattern(lines, " ", max_splits=k + 2)
        offsets = np.asarray(parts.offsets)
        cand_np = np.flatnonzero(np.diff(offsets) == k + 3)
        if len(cand_np) < n // 2:
            return None  # mostly irregular lines: the per-line path is as fast
        cand_idx = pa.array(cand_np)
        # the tokens of candidate lines, straight from the split's value buffer
        values = parts.values
        starts = offsets[:-1] if len(cand_np) == n else offsets[:-1][cand_np]
        tok = [pc.take(values, pa.array(starts + j)) for j in range(k + 3)]
        stamp = tok[0] if k == 1 else pc.binary_join_element_wise(*tok[:k], " ")
        host, itok, msg = tok[k], tok[k + 1], tok[k + 2]
        ok = pc.and_(pc.ends_with(itok, ":"), pc.invert(pc.ends_with(host, ":")))

        frac_us = None
        if frac >= 0:
            fr = pc.utf8_slice_codeunits(stamp, frac + 1, frac + 7)
            good = pc.and_(
                pc.and_(pc.equal(pc.utf8_slice_codeunits(stamp, frac, frac + 1), "."), pc.utf8_is_digit(fr)),
                pc.and_(
                    pc.equal(pc.utf8_length(fr), 6),
                    pc.invert(pc.utf8_is_digit(pc.utf8_slice_codeunits(stamp, frac + 7, frac + 8))),
                ),
            )
            good = pc.fill_null(good, False)
            ok = pc.and_(ok, good)
            frac_us = pc.cast(pc.if_else(good, fr, "0"), pa.int64())
            key = pc.binary_join_element_wise(
                pc.utf8_slice_codeunits(stamp, 0, frac), pc.utf8_slice_codeunits(stamp, frac + 7, big), ""
            )
        else:
            key = stamp

        # identifier tokens: once per distinct value
        di = pc.dictionary_encode(itok)
        ids: list[str | None] = []
        pids: list[int | None] = []
        units: list[str | None] = []
        wants: list[bool] = []
        valid: list[bool] = []
        limits: list[int] = []
        for t in di.dictionary.to_pylist():
            ident, pid, unit = state.ident(t)
            ids.append(ident)
            pids.append(pid)
            units.append(unit)
            valid.append(len(t) > 1)
            limit = sink.route_limit(ident, pid, unit)
            limits.append(limit)
            wants.append(limit != 0)
        ok = pc.fill_null(pc.and_(ok, pc.take(pa.array(valid, pa.bool_()), di.indices)), False)

        if self.kind == MONTH and self._entries_left_out(pa, pc, original, cand_idx, ok, n):
            return None  # year inference must see those stamps in line order

        # stamps: once per distinct value, in order of first appearance (year inference)
        d = pc.dictionary_encode(key)
        cache = self._stamps
        if len(cache) > 1 << 17:
            cache.clear()
        exact = _exact_stamps(pa, pc, d.dictionary, self.kind)
        nu = len(d.dictionary)
        us_np = np.zeros(nu, dtype=np.int64)
        known = np.zeros(nu, dtype=bool)  # a time for that stamp
        if exact is not None:
            us_np[:] = exact[0]
            known[:] = exact[1]
        inf_list: list[str | None] | None = None
        todo_q = np.flatnonzero(~known) if exact is not None else np.arange(nu)
        if len(todo_q):
            inf_list = [None] * nu
            keys = (
                d.dictionary.to_pylist()
                if exact is None
                else pc.take(d.dictionary, pa.array(todo_q)).to_pylist()
            )
            for q, u in zip(todo_q.tolist(), keys, strict=True):
                hit = cache.get(u)
                if hit is None:
                    ts, inferred, _kind = stamps.stamp(u)
                    hit = cache[u] = ((ts - EPOCH) // _US if ts is not None else None, inferred)
                if hit[0] is not None:
                    us_np[q] = hit[0]
                    known[q] = True
                inf_list[q] = hit[1]
        ts_us = pc.take(pa.array(us_np, mask=~known), d.indices)
        if frac_us is not None:
            ts_us = pc.add(ts_us, frac_us)
        ok = pc.fill_null(pc.and_(ok, pc.is_valid(ts_us)), False)
        inferred_col = (
            pa.nulls(len(key), pa.string())
            if inf_list is None
            else pc.take(pa.array(inf_list, pa.string()), d.indices)
        )

        ok_pos = pc.indices_nonzero(ok)
        everything = len(ok_pos) == len(cand_np)
        ok_idx = cand_np if everything else cand_np[ok_pos.to_numpy()]
        m = len(ok_idx)

        def sel(col: Any) -> Any:
            return col if everything else pc.take(col, ok_pos)

        message = raw_msgs = sel(msg)
        if _ESCAPE.search(text) is not None and pc.any(pc.match_substring(message, "#0")).as_py():
            message = pc.replace_substring(pc.replace_substring(message, "#012", "\n"), "#011", "\t")
        ident_col = sel(pc.take(pa.array(ids, pa.string()), di.indices))
        pid_col = sel(pc.take(pa.array(pids, pa.int32()), di.indices))
        unit_col = sel(pc.take(pa.array(units, pa.string()), di.indices))
        want_col = sel(pc.take(pa.array(wants, pa.bool_()), di.indices))
        ts_col = pc.cast(sel(ts_us), pa.timestamp("us", tz="UTC"))
        raw_col = sel(stamp)
        if pad is not None:
            padded = pc.take(pad, pa.array(ok_idx))
            raw_col = pc.if_else(
                padded,
                pc.binary_join_element_wise(
                    pc.utf8_slice_codeunits(raw_col, 0, 4), pc.utf8_slice_codeunits(raw_col, 5, big), " "
                ),
                raw_col,
            )
        inf_col = sel(inferred_col)
        host_col = sel(host)
        line_no = pa.array(ok_idx + first, pa.int64())

        # the lines the vector pass did not take, in order, through the per-line logic
        taken = np.zeros(n, dtype=bool)
        taken[ok_idx] = True
        rest = np.flatnonzero(~taken)
        rest_lines: list[str] = pc.take(original, pa.array(rest)).to_pylist() if len(rest) else []
        ok_list: list[int] | None = None

        parsed = m
        ignored = 0
        issues: list[Output] = []
        extra_rows: list[list[Any]] = []  # per-line entries (line index, row fields…)
        cont: dict[int, list[str]] = {}  # entry line index → continuation texts
        last_extra = -1  # line index of the last per-line entry
        last_break = -1  # line index of the last line that ends an entry (header, garbage)
        msg_cols: dict[int, int] = {}
        boot = stamps.boot_id
        for i, line in zip(rest.tolist(), rest_lines, strict=True):
            c = line[:1]
            if c == " " or c == "\t":
                if not ("月" in line[:5] or "월" in line[:5]) or stamps.parse(line) is None:
                    if ok_list is None:
                        ok_list = ok_idx.tolist()
                    j = bisect.bisect_left(ok_list, i) - 1
                    prev_ok = ok_list[j] if j >= 0 else -1
                    prev = max(prev_ok, last_extra)
                    if prev < 0 or prev < last_break:
                        issues.append(ctx.issue(first + i, "continuation line before any entry", line))
                        continue
                    col = msg_cols.get(prev)
                    if col is None:
                        col = msg_cols[prev] = self._msg_col(lines, raw_msgs, ok_list, prev)
                    cont.setdefault(prev, []).append(line[col:] if not line[:col].strip() else line.lstrip())
                    parsed += 1
                    continue
            elif (c == "-" and line.startswith("--")) or (c == "░" and line.startswith(CATALOG)):
                meta_line(line, stamps, sink)
                ignored += 1
                last_break = i  # a header, marker or catalog line ends the entry above
                continue
            elif not c:
                ignored += 1
                continue
            st = stamps.parse(line)
            if st is None:
                issues.append(ctx.issue(first + i, "no journal/syslog timestamp", line))
                last_break = i
                continue
            ts, raw, inf, mono, pos, _kind = st
            h, it, mstart = split_line(line, pos)
            text_msg = line[mstart:]
            if "#0" in text_msg:
                text_msg = _unescape(text_msg)
            e_ident: str | None = None
            e_pid: int | None = None
            e_unit: str | None = None
            if it is not None:
                e_ident, e_pid, e_unit = state.ident(it)
            extra_rows.append(
                [
                    i,
                    first + i,
                    ts,
                    raw,
                    inf,
                    mono,
                    h or ctx.host,
                    e_ident,
                    e_pid,
                    e_unit,
                    None,
                    None,
                    boot,
                    text_msg,
                ]
            )
            msg_cols[i] = mstart
            last_extra = i
            parsed += 1
        if extra_rows or ok_list is not None or m:
            stamps.seen_entry = True

        # continuation lines complete their messages
        extra_by_index = {r[0]: r for r in extra_rows}
        patches: dict[int, str] = {}
        if cont:
            if ok_list is None:
                ok_list = ok_idx.tolist()
            for idx, texts in cont.items():
                row = extra_by_index.get(idx)
                base = row[13] if row is not None else message[bisect.bisect_left(ok_list, idx)].as_py()
                full = "\n".join([base, *texts])
                if len(full) >= MAX_MESSAGE_CHARS:
                    full = full[:MAX_MESSAGE_CHARS]
                if row is not None:
                    row[13] = full
                else:
                    patches[bisect.bisect_left(ok_list, idx)] = full

        # routing, in line order, with complete messages
        routed_pos = pc.indices_nonzero(want_col).to_numpy()
        tix_all = None  # identifier token of each stored line
        held: dict[int, Any] = {}  # SGLang candidates' lines past their check budget
        if len(routed_pos) and any(lim > 0 for lim in limits):
            tix_all = sel(di.indices).to_numpy()
            tix = tix_all[routed_pos]
            lim_of = np.array(limits, dtype=np.int64)
            # each routed line's rank among its token's lines (stable: in line order)
            order = np.argsort(tix, kind="stable")
            sorted_tix = tix[order]
            starts_at = np.searchsorted(sorted_tix, sorted_tix, side="left")
            rank = np.empty(len(tix), dtype=np.int64)
            rank[order] = np.arange(len(tix)) - starts_at
            beyond = (lim_of[tix] > 0) & (rank >= lim_of[tix])
            if beyond.any():
                for t in np.unique(tix[beyond]).tolist():
                    held[t] = routed_pos[beyond & (tix == t)]
                routed_pos = routed_pos[~beyond]
        cols = (line_no, ts_col, raw_col, inf_col, host_col, ident_col, pid_col, unit_col, message)

        ts_np = None  # the times as microseconds (pyarrow's tz-aware to_pylist is slow)

        def py_times(positions: Any) -> list[Any]:
            nonlocal ts_np
            if ts_np is None:
                ts_np = pc.fill_null(ts_col.cast(pa.int64()), _NO_TS).to_numpy()
            return [None if u == _NO_TS else EPOCH + _US * u for u in ts_np[positions].tolist()]

        def rows_at(positions: Any) -> list[tuple[int, int, Any]]:
            rp = pa.array(positions)
            ln, raw_, inf_, host_, ident_, pid_, unit_, msg_ = (
                pc.take(c, rp).to_pylist() for c in cols if c is not ts_col
            )
            ts_ = py_times(positions)
            return [
                (
                    ln[q],
                    pos_,
                    (
                        ln[q],
                        ts_[q],
                        raw_[q],
                        inf_[q],
                        None,
                        host_[q],
                        ident_[q],
                        pid_[q],
                        unit_[q],
                        None,
                        None,
                        boot,
                        patches.get(pos_, msg_[q]),
                    ),
                )
                for q, pos_ in enumerate(positions.tolist())
            ]

        unit_patches: dict[int, str] = {}
        fast: _FastSglang | None = None

        def row_at(q: int) -> tuple[Any, ...]:
            """One stored line as an entry tuple (scalar access: cheaper than rows_at for one)."""
            return (
                line_no[q].as_py(),
                py_times(np.array([q]))[0],
                raw_col[q].as_py(),
                inf_col[q].as_py(),
                None,
                host_col[q].as_py(),
                ident_col[q].as_py(),
                pid_col[q].as_py(),
                unit_col[q].as_py(),
                None,
                None,
                boot,
                patches.get(q, message[q].as_py()),
            )

        def route(todo: list[tuple[int, int, Any]], settled: bool = False) -> None:
            for _ln, pos_, entry in todo:
                if entry is None or entry is _HELD:
                    # materialised only when needed: a candidate's line that cannot be SGLang
                    # (only its check counts), or one past its check budget (routed only if
                    # its stream has started, or the budget came back)
                    assert tix_all is not None
                    t = int(tix_all[pos_])
                    if entry is None:
                        if sink.not_sglang(ids[t], pids[t], units[t]):
                            continue
                    elif sink.route_limit(ids[t], pids[t], units[t]) == 0:
                        continue
                    if fast is not None and not settled and fast.defer(pos_):
                        continue
                    entry = row_at(pos_)
                if pos_ < 0 and not sink.wants(entry[6], entry[7], entry[8]):
                    continue
                if fast is not None and not settled:
                    if fast.defer(pos_):
                        continue
                    fast.before(pos_, entry, ok_idx, first)
                unit = sink.route_now(entry)
                if unit is not None:
                    if pos_ >= 0:
                        unit_patches[pos_] = unit
                    else:
                        extra_by_index[entry[0] - first][9] = unit

        if len(routed_pos) or held:
            if tix_all is None:
                tix_all = sel(di.indices).to_numpy()
            fast = _FastSglang.build(
                sink,
                tix_all,
                np.concatenate([routed_pos, *held.values()]) if held else routed_pos,
                (ids, pids, units, limits),
                (line_no, ts_col, raw_col, inf_col, host_col, message),
                patches,
                (
                    "\r" in text,
                    " hit an exception" in text,
                    message is not raw_msgs,  # #012 became a newline somewhere
                ),
                lambda pos_: route([(0, pos_, row_at(pos_))], settled=True),
            )
            if fast is not None:
                routed_pos = routed_pos[~fast.taken_of(routed_pos)]
        if len(routed_pos) or extra_rows or held:
            light = None
            if tix_all is not None and any(lim > 0 for lim in limits):
                light = _not_sglang(pa, pc, np, message, tix_all, routed_pos, ids, units, limits)
            todo: list[tuple[int, int, Any]]
            ln_np = line_no.to_numpy() if held or light is not None else None
            if light is not None and light.any():
                assert ln_np is not None
                todo = rows_at(routed_pos[~light])
                todo.extend((int(ln_np[p]), p, None) for p in routed_pos[light].tolist())
            else:
                todo = rows_at(routed_pos)
            for positions in held.values():
                assert ln_np is not None
                todo.extend((int(ln_np[p]), p, _HELD) for p in positions.tolist())
            todo.extend((r[1], -1, tuple(r[1:])) for r in extra_rows)
            todo.sort(key=lambda t: t[0])
            route(todo)
        if fast is not None:
            fast.finish()
            fast = None

        if patches:
            message = _patch(pa, pc, message, patches, m)
        if unit_patches:
            unit_col = _patch(pa, pc, unit_col, unit_patches, m)

        schema = _schema()
        boot_col = pa.nulls(m, pa.string()) if boot is None else pa.array([boot] * m, pa.string())
        table = pa.Table.from_arrays(
            [
                line_no,
                ts_col,
                raw_col,
                inf_col,
                pa.nulls(m, pa.float64()),
                host_col,
                ident_col,
                pid_col,
                unit_col,
                pa.nulls(m, pa.int8()),
                pa.nulls(m, pa.string()),
                boot_col,
                message,
            ],
            schema=schema,
        )
        if extra_rows:
            extra_cols = list(zip(*[r[1:] for r in extra_rows], strict=True))
            extra = pa.Table.from_arrays(
                [pa.array(col, type=f.type) for col, f in zip(extra_cols, schema, strict=True)], schema=schema
            )
            table = pa.concat_tables([table, extra]).sort_by("line_no")
        ctx.parsed(parsed)
        ctx.ignored(ignored)
        sink.add_table(table)
        out: list[Output] = list(issues)
        out.extend(sink.drain(keep_last=False))
        return out

    @staticmethod
    def _entries_left_out(pa: Any, pc: Any, lines: Any, cand_idx: Any, ok: Any, n: int) -> bool:
        """Whether lines the vector pass would leave out include entries (not continuation,
        header or blank lines)."""
        import numpy as np

        taken = np.zeros(n, dtype=bool)
        taken[pc.take(cand_idx, pc.indices_nonzero(ok)).to_numpy()] = True
        rest = np.flatnonzero(~taken)
        if not len(rest):
            return False
        for line in pc.take(lines, pa.array(rest)).to_pylist():
            c = line[:1]
            if c == " ":
                if "月" in line[:5] or "월" in line[:5]:
                    return True
            elif c and c not in "\t-░":
                return True
        return False

    @staticmethod
    def _msg_col(lines: Any, raw_msgs: Any, ok_list: list[int], index: int) -> int:
        """Where the message starts in line ``index`` (continuation lines are indented to it)."""
        q = bisect.bisect_left(ok_list, index)
        line = lines[index].as_py()
        return len(line) - len(raw_msgs[q].as_py())


def _patch(pa: Any, pc: Any, col: Any, patches: dict[int, str], m: int) -> Any:
    import numpy as np

    mask = np.zeros(m, dtype=bool)
    order = sorted(patches)
    mask[order] = True
    return pc.replace_with_mask(col, pa.array(mask), pa.array([patches[i] for i in order], col.type))


_ISO_OFFSET_RE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:?\d{2})$"


def _exact_stamps(pa: Any, pc: Any, keys: Any, kind: str | None) -> tuple[Any, Any] | None:
    """UTC microseconds of distinct stamp keys that need no inference, computed in Arrow:
    ISO stamps with a zone offset (as ``datetime.fromisoformat`` reads them) and whole
    epoch seconds. Returns (microseconds, done) per key — a key not done is left to
    :class:`StampParser` — or None when none is done."""
    import numpy as np

    n = len(keys)
    if not n or kind not in (ISO, UNIX):
        return None
    if kind == UNIX:
        ok = pc.fill_null(
            pc.and_(pc.ascii_is_decimal(keys), pc.less_equal(pc.binary_length(keys), 11)), False
        )
        if not pc.any(ok).as_py():
            return None
        us = pc.multiply(pc.cast(pc.if_else(ok, keys, "0"), pa.int64()), 1_000_000)
        return us.to_numpy(), ok.to_numpy(zero_copy_only=False)
    ok = pc.fill_null(
        pc.and_(pc.match_substring_regex(keys, _ISO_OFFSET_RE), pc.invert(pc.starts_with(keys, "0000"))),
        False,
    )
    if not pc.any(ok).as_py():
        return None
    ok_np = ok.to_numpy(zero_copy_only=False)
    sub = keys if ok_np.all() else pc.filter(keys, ok)
    try:
        naive = pc.cast(pc.utf8_slice_codeunits(sub, 0, 19), pa.timestamp("us"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # an impossible date among them: StampParser judges each
    zulu = pc.equal(pc.utf8_slice_codeunits(sub, 19, 20), "Z")
    colon = pc.equal(pc.utf8_slice_codeunits(sub, 22, 23), ":")
    hh = pc.cast(pc.if_else(zulu, "0", pc.utf8_slice_codeunits(sub, 20, 22)), pa.int64())
    mm = pc.cast(
        pc.if_else(
            zulu,
            "0",
            pc.if_else(colon, pc.utf8_slice_codeunits(sub, 23, 25), pc.utf8_slice_codeunits(sub, 22, 24)),
        ),
        pa.int64(),
    )
    sign = np.where(pc.equal(pc.utf8_slice_codeunits(sub, 19, 20), "-").to_numpy(zero_copy_only=False), -1, 1)
    hh_np, mm_np = hh.to_numpy(), mm.to_numpy()
    fine = (hh_np < 24) & (mm_np < 60)  # fromisoformat refuses larger offsets
    us = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    where = np.flatnonzero(ok_np)
    us[where] = naive.cast(pa.int64()).to_numpy() - sign * (hh_np * 3600 + mm_np * 60) * 1_000_000
    done[where] = fine
    return us, done


def _not_sglang(
    pa: Any,
    pc: Any,
    np: Any,
    message: Any,
    tix_all: Any,
    positions: Any,
    ids: list[str | None],
    units: list[str | None],
    limits: list[int],
) -> Any:
    """Of the stored lines at ``positions``, those of SGLang candidates (not streams yet) that
    cannot start a stream: not named after SGLang, and neither a ``[`` nor a ``\\r`` nor
    ``server_args=`` in the message (what :func:`looks_like_sglang` needs)."""
    plain = np.zeros(len(limits), dtype=bool)
    for t, lim in enumerate(limits):
        ident, unit = ids[t], units[t]
        named = (unit and "sglang" in unit.lower()) or (ident and "sglang" in ident.lower())
        plain[t] = lim > 0 and not named and ident not in SPECIAL_IDENTS
    rows = plain[tix_all[positions]]
    if not rows.any():
        return None
    q = np.flatnonzero(rows)
    msgs = pc.take(message, pa.array(positions[q]))
    maybe = pc.or_(
        pc.or_(pc.match_substring(msgs, "["), pc.match_substring(msgs, "\r")),
        pc.match_substring(msgs, "server_args="),
    )
    rows[q[pc.fill_null(maybe, True).to_numpy(zero_copy_only=False)]] = False
    return rows


class _FastSglang:
    """The batch and access lines of SGLang streams, stored by the SGLang module's vectorised
    path with the journal's time, host, unit and pid.

    Streams that existed when the chunk began have all their fast lines set aside at once;
    a candidate's lines are set aside from the moment its stream starts (within the chunk).
    The other lines of those streams are still fed one by one in line order (the reference
    path); before each of them (and at the end of the chunk) the fast lines that precede it
    are settled: while the stream cannot take fast lines (a traceback's message is open, a
    death line waits for its exit code, another process spoke last) they are fed too, the
    rest only move the stream's time (:meth:`SglangStream.note_given`). A stream fed from
    several identifier tokens in one chunk (one unit, several pids) stays per-line.

    Positions are those of the chunk's stored lines (the vector pass's rows)."""

    def __init__(
        self,
        sink: Any,
        fr: Any,
        tix: Any,
        tokens: tuple[list[str | None], list[int | None], list[str | None]],
        existing: dict[int, Any],
        candidates: set[int],
        ts_col: Any,
        slow: Any,
    ) -> None:
        import numpy as np

        self._np = np
        self.sink = sink
        self.fr = fr
        self.tix = tix  # identifier token of each stored line
        self.ids, self.pids, self.units = tokens
        self.candidates = candidates
        self.ts_col = ts_col
        self.slow = slow
        self.accepted = fr.mask  # lines the fast path can store
        self.taken = np.zeros(len(tix), dtype=bool)  # lines it keeps
        self.streams: list[Any] = []
        self.stream_pid: list[int | None] = []
        self.tok_stream: dict[int, int] = {}  # token → stream index
        self.index: dict[int, int] = {}  # id(stream) → stream index
        self.pending: list[list[int]] = []  # lines set aside one by one, per stream
        self.pend: list[Any] = []  # lines set aside, per stream (sorted)
        self.ptr: list[int] = []  # settled so far, per stream
        for t, st in existing.items():
            s = self._register(t, st)
            mine = self.accepted & (tix == t)
            self.taken |= mine
            self.pend[s] = np.flatnonzero(mine)

    def _register(self, t: int, st: Any) -> int:
        s = len(self.streams)
        self.streams.append(st)
        self.stream_pid.append(self.pids[t] if self.pids[t] is not None else st.pid)
        self.tok_stream[t] = s
        self.index[id(st)] = s
        self.pending.append([])
        self.pend.append(None)
        self.ptr.append(0)
        return s

    @classmethod
    def build(
        cls,
        sink: Any,
        tix_all: Any,
        routed_pos: Any,
        per_token: tuple[list[Any], list[Any], list[Any], list[int]],
        columns: tuple[Any, ...],
        patches: dict[int, str],
        hints: tuple[bool, bool, bool],
        slow: Any,
    ) -> _FastSglang | None:
        import numpy as np
        import pyarrow as _pa

        from ..sglang.fast import Given, fast_messages

        pa: Any = _pa
        ids, pids, units, limits = per_token
        keys: dict[Any, list[int]] = {}
        existing: dict[int, Any] = {}
        for t, lim in enumerate(limits):
            if lim == 0 or ids[t] in SPECIAL_IDENTS or sink.cat_mode:
                continue
            key = units[t] or (ids[t], pids[t])
            keys.setdefault(key, []).append(t)
            if lim == -1:
                st = sink.sglang_stream(ids[t], pids[t], units[t])
                if st is None:
                    continue
                existing[t] = st
        usable = np.zeros(len(limits), dtype=bool)
        candidates: set[int] = set()
        for toks in keys.values():
            if len(toks) == 1:  # one token per stream (several → pids may alternate)
                t = toks[0]
                if t in existing or limits[t] > 0:
                    usable[t] = True
                    if t not in existing:
                        candidates.add(t)
        if not usable.any():
            return None
        m = len(tix_all)
        offered = np.zeros(m, dtype=bool)
        offered[routed_pos] = True
        offered &= usable[tix_all]
        if patches:
            offered[np.fromiter(patches, dtype=np.int64, count=len(patches))] = False
        if not offered.any():
            return None
        line_no, ts_col, raw_col, inf_col, host_col, message = columns
        given = Given(
            line_no=line_no,
            ts=ts_col,
            ts_raw=raw_col,
            ts_inferred=inf_col,
            host=host_col,
            unit=pa.nulls(m, pa.string()),  # set when the tables are handed over
            pid=pa.nulls(m, pa.int32()),
        )
        maybe_cr, maybe_hit, maybe_nl = hints
        fr = fast_messages(
            message,
            given,
            rows=offered,
            maybe_cr=maybe_cr or maybe_nl,
            maybe_hit=maybe_hit,
            maybe_nl=maybe_nl,
        )
        if fr is None:
            return None
        return cls(sink, fr, tix_all, (ids, pids, units), existing, candidates, ts_col, slow)

    def taken_of(self, positions: Any) -> Any:
        """Which of the stored lines at ``positions`` the fast path keeps for now."""
        return self.taken[positions]

    def _stream_of_candidate(self, t: int) -> int | None:
        s = self.tok_stream.get(t)
        if s is not None:
            return s
        if t not in self.candidates:
            return None
        st = self.sink.sglang_stream(self.ids[t], self.pids[t], self.units[t])
        if st is None:
            return None
        return self._register(t, st)

    def defer(self, pos: int) -> bool:
        """A candidate's line that the fast path can store, its stream started: set it aside."""
        if pos < 0 or not self.accepted[pos]:
            return False
        t = int(self.tix[pos])
        if t not in self.candidates:
            return False
        s = self._stream_of_candidate(t)
        if s is None:
            return False
        self.taken[pos] = True
        self.pending[s].append(pos)
        return True

    def before(self, pos: int, entry: tuple[Any, ...], ok_idx: Any, first: int) -> None:
        """Settle the fast lines of ``entry``'s stream that come before it."""
        st = self.sink.sglang_stream(entry[6], entry[7], entry[8])
        if st is None:
            return
        s = self.index.get(id(st))
        if s is None:
            return
        np = self._np
        upto = pos if pos >= 0 else int(np.searchsorted(ok_idx, entry[0] - first))
        self._settle(s, upto)

    def finish(self) -> None:
        """Settle every stream's remaining fast lines and hand over the tables (with each
        line's unit and pid as the stream gives them)."""
        import pyarrow as _pa
        import pyarrow.compute as _pc

        from ..base import TableBatch

        pa: Any = _pa
        pc: Any = _pc
        for s in range(len(self.streams)):
            self._settle(s, 1 << 62)
        if not self.tok_stream:
            return
        n_tok = max(self.tok_stream) + 1
        unit_tok: list[str | None] = [None] * n_tok
        pid_tok: list[int | None] = [None] * n_tok
        for t, s in self.tok_stream.items():
            unit_tok[t] = self.units[t] or self.streams[s].unit
            pid_tok[t] = self.stream_pid[s]
        units = pa.array(unit_tok, pa.string())
        pids = pa.array(pid_tok, pa.int32())
        for table, data, pos in self.fr.blocks:
            keep = self.taken[pos]
            if not keep.any():
                continue
            if not keep.all():
                data = data.filter(pa.array(keep))
                pos = pos[keep]
            tok = pa.array(self.tix[pos])
            data = data.set_column(data.schema.get_field_index("unit"), "unit", pc.take(units, tok))
            data = data.set_column(data.schema.get_field_index("pid"), "pid", pc.take(pids, tok))
            self.sink.add_output(TableBatch(table, data))

    def _settle(self, s: int, upto: int) -> None:
        np = self._np
        if self.pending[s]:  # lines set aside one by one since the last settling
            more = np.array(self.pending[s], dtype=np.int64)
            self.pend[s] = more if self.pend[s] is None else np.concatenate([self.pend[s], more])
            self.pending[s] = []
        pend = self.pend[s]
        if pend is None:
            return
        i = self.ptr[s]
        j = int(np.searchsorted(pend, upto))
        if j <= i:
            return
        self.ptr[s] = j
        st = self.streams[s]
        pid = self.stream_pid[s]
        while i < j and not st.accepts_fast_lines_of(pid):
            p = int(pend[i])
            self.taken[p] = False
            self.slow(p)
            i += 1
        if i < j:
            st.note_given(EPOCH + _US * self.ts_col[int(pend[j - 1])].value, pid)
