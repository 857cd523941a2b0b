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
systemd-oomd, earlyoom, inference-server candidates) are routed in line order with their
complete messages.

Inference servers' output is most of what such journals hold: the statistics and access lines
of a server's stream (one per identifier + pid, or unit) are stored by its engine's vectorised
pass (:meth:`postmortem.engines.Engine.fast_messages`, with the journal's time, host, unit and
pid), and only that stream's other lines are fed to its message-level stream one by one, in
line order (:class:`_FastEngine`). Lines of a candidate that cannot start a stream (none of the
engines' start markers) only count against its check budget. The result is the same as the
per-line path's (property tests check it, with server output, kernel, systemd and odd lines).
"""

from __future__ import annotations

import bisect
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..base import LineChunk, Output, repeated
from .short import CATALOG, FULL, ISO, MONTH, UNIX, _unescape, meta_line, split_line
from .sink import EPOCH, MAX_MESSAGE_CHARS, SPECIAL_IDENTS, _schema

if TYPE_CHECKING:
    from .short import ShortState

_US = timedelta(microseconds=1)
#: stands for a missing time in an int64 copy of a time column
_NO_TS = -(1 << 63)
#: a routed line past its engine check budget (see ``VectorShort.chunk``)
_HELD = object()
#: a routed kernel line with a plain message: stored as its kernel_messages row in a block
#: unless an OOM record is open when its turn comes
_PLAIN = object()
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

    def _learn(self, chunk: LineChunk) -> bool:
        """Take the layout from the first regular line of the file (with a scratch stamp
        parser: the file's own must see its stamps in line order)."""
        from ..base import ParseContext
        from .short import StampParser

        stamps = StampParser(ParseContext(year=2000, zone=self.state.ctx.zone))
        data = chunk.data
        head = data[: 64 << 10]
        lines = head.decode("utf-8", "replace").split("\n", 200)[:200]
        if len(head) < len(data) and len(lines) > 1:
            lines = lines[:-1]  # the last one may be cut
        for line in lines:
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
            if not raw[: frac if frac >= 0 else len(raw)].isascii():
                return False  # byte offsets must be character offsets up to the fraction
            self.layout = (raw.count(" ") + 1, frac)
            self.kind = kind
            return True
        return False

    # ------------------------------------------------------------------ one chunk

    def chunk(self, chunk: LineChunk) -> list[Output] | None:  # noqa: C901 - 73 > 15: listed in docs/dev/README.md
        """Process one chunk (complete entry groups); None → use the per-line path."""
        if self.layout is None and (self.tried > 3 or not self._learn(chunk)):
            self.tried += 1
            if self.tried > 3:
                self.state.vector = None  # not a regular file: per-line from now on
            return None
        data = chunk.data
        if len(data) < MIN_LINES * 40:
            return None
        import numpy as np
        import pyarrow as _pa
        import pyarrow.compute as _pc

        from ..jit import gather_spans, large_strings, spans_to_arrow, to_arrow
        from .kernels import gather_messages, split_lines

        pa: Any = _pa  # the stubs are stricter than these compute chains need
        pc: Any = _pc
        assert self.layout is not None
        k, frac = self.layout
        state = self.state
        ctx, sink, stamps = state.ctx, state.sink, state.stamps
        first = chunk.first_line_no
        buf, starts, ends = chunk.buffer()
        n = len(starts)
        cand = np.empty(n, dtype=bool)
        ok = np.empty(n, dtype=bool)
        stamp_end = np.zeros(n, dtype=np.int64)
        host_end = np.zeros(n, dtype=np.int64)
        itok_end = np.zeros(n, dtype=np.int64)
        frac_us = np.empty(n, dtype=np.int64)
        ts_us = np.zeros(n, dtype=np.int64)
        ts_ok = np.empty(n, dtype=bool)
        count = split_lines(
            buf,
            starts,
            ends,
            k,
            frac,
            self.kind == MONTH and k == 3,
            self.kind == ISO,
            cand,
            ok,
            stamp_end,
            host_end,
            itok_end,
            frac_us,
            ts_us,
            ts_ok,
        )
        if count < n // 2:
            return None  # mostly irregular lines: the per-line path is as fast
        if _boot_marker(chunk, buf, starts, ends, ok):
            return None  # a boot marker switches the boot id in line order

        # identifier tokens: once per distinct value
        tok_rows = np.flatnonzero(ok)
        di = pc.dictionary_encode(spans_to_arrow(buf, host_end[tok_rows] + 1, itok_end[tok_rows]))
        ids: list[str | None] = []
        pids: list[int | None] = []
        units: list[str | None] = []
        wants: list[bool] = []
        limits: list[int] = []
        for t in di.dictionary.to_pylist():
            ident, pid, unit = state.ident(t)
            ids.append(ident)
            pids.append(pid)
            units.append(unit)
            limit = sink.route_limit(ident, pid, unit)
            limits.append(limit)
            wants.append(limit != 0)
        tok_of = np.full(n, -1, dtype=np.int64)
        tok_of[tok_rows] = di.indices.to_numpy(zero_copy_only=False)

        if self.kind == MONTH and self._entries_left_out(chunk, ok):
            return None  # year inference must see those stamps in line order

        # stamps the kernel did not convert: once per distinct value, in order of first
        # appearance (year inference)
        inferred_of: Any = None
        unread = np.flatnonzero(ok & ~ts_ok)
        if len(unread):
            offsets, keys_data = gather_spans(buf, starts[unread], stamp_end[unread], frac, 7)
            d = pc.dictionary_encode(large_strings(offsets, keys_data))
            cache = self._stamps
            if len(cache) > 1 << 17:
                cache.clear()
            nu = len(d.dictionary)
            us_np = np.zeros(nu, dtype=np.int64)
            known = np.zeros(nu, dtype=bool)
            inf_list: list[str | None] = [None] * nu
            last_folded = stamps.forward.last
            for q, u in enumerate(d.dictionary.to_pylist()):
                hit = cache.get(u)
                if hit is None:
                    stamps.forward.folded = False
                    ts, inferred, _kind = stamps.stamp(u)
                    if stamps.forward.folded:
                        # the hour that repeats when clocks go back: one value can be two
                        # instants, told apart only in line order
                        stamps.forward.last = last_folded
                        return None
                    hit = cache[u] = ((ts - EPOCH) // _US if ts is not None else None, inferred)
                if hit[0] is not None:
                    us_np[q] = hit[0]
                    known[q] = True
                inf_list[q] = hit[1]
            idx = d.indices.to_numpy(zero_copy_only=False)
            ts_us[unread] = us_np[idx] + frac_us[unread]
            ts_ok[unread] = known[idx]
            if any(x is not None for x in inf_list):
                inferred_of = np.full(n, -1, dtype=np.int64)
                inferred_of[unread] = idx
                inf_values = pa.array(inf_list, pa.string())
        ok &= ts_ok
        ok_idx = np.flatnonzero(ok)
        m = len(ok_idx)
        tix_ok = tok_of[ok_idx]
        tix_arr = to_arrow(tix_ok, pa.int64())

        escaped = np.empty(m, dtype=bool)
        offsets, msg_data, n_escaped = gather_messages(buf, itok_end[ok_idx] + 1, ends[ok_idx], escaped)
        message = raw_msgs = large_strings(offsets, msg_data).cast(pa.string())
        if n_escaped:  # rsyslog's #012 / #011: a newline or a tab
            message = pc.replace_substring(pc.replace_substring(message, "#012", "\n"), "#011", "\t")
        ident_col = pc.take(pa.array(ids, pa.string()), tix_arr)
        pid_col = pc.take(pa.array(pids, pa.int32()), tix_arr)
        unit_col = pc.take(pa.array(units, pa.string()), tix_arr)
        want_col = pc.take(pa.array(wants, pa.bool_()), tix_arr)
        ts_col = to_arrow(ts_us[ok_idx], pa.timestamp("us", tz="UTC"))
        raw_col = spans_to_arrow(buf, starts[ok_idx], stamp_end[ok_idx]).cast(pa.string())
        if inferred_of is None:
            inf_col = pa.nulls(m, pa.string())
        else:
            where = inferred_of[ok_idx]
            inf_col = pc.take(inf_values, to_arrow(where, pa.int64(), where >= 0))
        host_col = spans_to_arrow(buf, stamp_end[ok_idx] + 1, host_end[ok_idx]).cast(pa.string())
        line_no = to_arrow(ok_idx + first, pa.int64())

        # the lines the vector pass did not take, in order, through the per-line logic
        rest = np.flatnonzero(~ok)
        rest_lines: list[str] = [chunk.line(i) for i in rest.tolist()]
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
                        col = msg_cols[prev] = self._msg_col(chunk, raw_msgs, ok_list, prev)
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
        held: dict[int, Any] = {}  # server candidates' lines past their check budget
        if len(routed_pos) and any(lim > 0 for lim in limits):
            tix_all = tix_ok
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
        fast: _FastEngine | None = None

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

        plain_rows: list[int] = []  # kernel lines stored as a block (see _PLAIN)
        hosts: list[Any] | None = None

        def route(todo: list[tuple[int, int, Any]], settled: bool = False) -> None:  # noqa: C901 - 16 > 15: listed in docs/dev/README.md
            nonlocal hosts
            for _ln, pos_, entry in todo:
                if entry is _PLAIN:
                    if hosts is None:
                        hosts = host_col.to_pylist()
                    stream = sink.kernel_stream(hosts[pos_], boot)
                    if stream is None:
                        continue
                    if stream.idle():
                        plain_rows.append(pos_)
                        continue
                    entry = row_at(pos_)
                elif entry is None or entry is _HELD:
                    # materialised only when needed: a candidate's line no engine can claim
                    # (only its check counts), or one past its check budget (routed only if
                    # its stream has started, or the budget came back)
                    assert tix_all is not None
                    t = int(tix_all[pos_])
                    if entry is None:
                        if sink.no_engine(ids[t], pids[t], units[t]):
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
                tix_all = tix_ok
            fast = _FastEngine.build(
                sink,
                tix_all,
                np.concatenate([routed_pos, *held.values()]) if held else routed_pos,
                (ids, pids, units, limits),
                (line_no, ts_col, raw_col, inf_col, host_col, message),
                patches,
                (
                    chunk.contains("\r"),
                    chunk.contains(" hit an exception"),
                    message is not raw_msgs,  # #012 became a newline somewhere
                ),
                lambda pos_: route([(0, pos_, row_at(pos_))], settled=True),
            )
            if fast is not None:
                routed_pos = routed_pos[~fast.taken_of(routed_pos)]
        if len(routed_pos) or extra_rows or held:
            light = None
            if tix_all is not None and any(lim > 0 for lim in limits):
                light = _cannot_start(pa, pc, np, sink, message, tix_ok, routed_pos, (ids, units, limits))
                # keys whose every routed line here is such a line: counted at once — unless a
                # line of this chunk's per-line path (host-less, odd) may start a stream first
                markers = sink.start_markers
                if light is not None and not any(m in line for line in rest_lines for m in markers):
                    bulk = _bulk_checks(sink, np, tix_ok[routed_pos], light, (ids, pids, units, limits))
                    if bulk is not None:
                        routed_pos, light = routed_pos[~bulk], light[~bulk]
            plain = _plain_kernel(pa, pc, np, message, tix_ok, routed_pos, ids, patches)
            todo: list[tuple[int, int, Any]]
            ln_np = line_no.to_numpy() if held or light is not None or plain is not None else None
            materialise = np.ones(len(routed_pos), dtype=bool)  # routed as complete rows
            lanes: list[tuple[Any, Any]] = []
            for mask, marker in ((light, None), (plain, _PLAIN)):
                if mask is not None and mask.any():
                    materialise &= ~mask
                    lanes.append((routed_pos[mask], marker))
            todo = rows_at(routed_pos[materialise])
            for positions, marker in lanes:
                assert ln_np is not None
                todo.extend((int(ln_np[p]), p, marker) for p in positions.tolist())
            for positions in held.values():
                assert ln_np is not None
                todo.extend((int(ln_np[p]), p, _HELD) for p in positions.tolist())
            todo.extend((r[1], -1, tuple(r[1:])) for r in extra_rows)
            todo.sort(key=lambda t: t[0])
            route(todo)
        if fast is not None:
            fast.finish()
            fast = None
        if plain_rows:
            sink.add_output(
                _kernel_rows(pa, np, plain_rows, (line_no, ts_col, raw_col, inf_col, host_col, message), boot)
            )

        if patches:
            message = _patch(pa, pc, message, patches, m)
        if unit_patches:
            unit_col = _patch(pa, pc, unit_col, unit_patches, m)

        schema = _schema()
        boot_col = repeated(boot, m)
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
    def _entries_left_out(chunk: LineChunk, taken: Any) -> bool:
        """Whether lines the vector pass would leave out include entries (not continuation,
        header or blank lines)."""
        import numpy as np

        for i in np.flatnonzero(~taken).tolist():
            line = chunk.line(i)
            c = line[:1]
            if c == " ":
                if "月" in line[:5] or "월" in line[:5]:
                    return True
            elif c and c not in "\t-░":
                return True
        return False

    @staticmethod
    def _msg_col(chunk: LineChunk, raw_msgs: Any, ok_list: list[int], index: int) -> int:
        """Where the message starts in line ``index`` (continuation lines are indented to it)."""
        q = bisect.bisect_left(ok_list, index)
        line = chunk.line(index)
        return len(line) - len(raw_msgs[q].as_py())


def _patch(pa: Any, pc: Any, col: Any, patches: dict[int, str], m: int) -> Any:
    import numpy as np

    mask = np.zeros(m, dtype=bool)
    order = sorted(patches)
    mask[order] = True
    return pc.replace_with_mask(col, pa.array(mask), pa.array([patches[i] for i in order], col.type))


def _boot_marker(chunk: LineChunk, buf: Any, starts: Any, ends: Any, regular: Any) -> bool:
    """Whether a line that is not a regular entry is a ``-- Boot … --`` or ``-- Reboot --``
    marker."""
    import numpy as np

    rest = np.flatnonzero(~regular)
    rest = rest[ends[rest] > starts[rest]]
    for i in rest[buf[starts[rest]] == 45].tolist():
        line = chunk.line(i)
        if line.startswith("-- Boot ") or line == "-- Reboot --":
            return True
    return False


def _plain_kernel(
    pa: Any,
    pc: Any,
    np: Any,
    message: Any,
    tix: Any,
    positions: Any,
    ids: list[str | None],
    patches: dict[int, str],
) -> Any:
    """Of the stored lines at ``positions``, the kernel lines whose message is plain (see
    :data:`~postmortem.parsers.kernel.stream.NOT_PLAIN`): a kernel stream with no open OOM
    record only stores them as rows. None when there are none."""
    from ..kernel.stream import NOT_PLAIN

    kernel = np.array([i == "kernel" for i in ids], dtype=bool)
    rows = kernel[tix[positions]]
    if not rows.any():
        return None
    q = np.flatnonzero(rows)
    msgs = pc.take(message, pa.array(positions[q]))
    busy = pc.fill_null(pc.match_substring_regex(msgs, NOT_PLAIN), True).to_numpy(zero_copy_only=False)
    rows[q[busy]] = False
    if patches:
        rows &= ~np.isin(positions, np.fromiter(patches, dtype=np.int64, count=len(patches)))
    return rows


def _kernel_rows(pa: Any, np: Any, rows: list[int], cols: tuple[Any, ...], boot: str | None) -> Any:
    """The kernel_messages rows of the plain kernel lines at ``rows`` (as the kernel stream
    would store them: no level, sequence number or monotonic time in text modes)."""
    from ..base import TableBatch
    from ..kernel.stream import BATCH_SCHEMA

    line_no, ts_col, raw_col, inf_col, host_col, message = cols
    take = pa.array(np.array(rows, dtype=np.int64))
    k = len(rows)
    table = pa.Table.from_arrays(
        [
            line_no.take(take),
            ts_col.take(take),
            raw_col.take(take),
            inf_col.take(take),
            pa.nulls(k, pa.float64()),
            host_col.take(take),
            repeated(boot, k),
            pa.nulls(k, pa.int8()),
            pa.nulls(k, pa.int64()),
            message.take(take),
        ],
        schema=BATCH_SCHEMA,
    )
    return TableBatch("kernel_messages", table)


def _bulk_checks(sink: Any, np: Any, tix: Any, light: Any, per_token: tuple[list[Any], ...]) -> Any:
    """Of the routed lines (their identifier tokens ``tix``), those that only count against
    their key's engine check budget (``light``) where every routed line of that key in this
    chunk is such a line: the counts are added at once (:meth:`JournalSink.no_engine_many`)
    and the lines need no routing one by one. None when nothing was counted."""
    ids, pids, units, limits = per_token
    key_of = [units[t] or (ids[t], pids[t]) for t in range(len(ids))]
    busy: set[Any] = {key_of[t] for t in np.unique(tix[~light]).tolist()}
    uniq, counts = np.unique(tix[light], return_counts=True)
    todo: list[tuple[Any, Any, Any, int]] = []
    chosen: list[int] = []
    for t, count in zip(uniq.tolist(), counts.tolist(), strict=True):
        if key_of[t] not in busy:
            todo.append((ids[t], pids[t], units[t], count))
            chosen.append(t)
    if not chosen:
        return None
    # keys with several tokens: all their tokens' lines are light here, count them once each
    bound = sum(1 for lim in limits if lim > 0)
    if not sink.no_engine_many(todo, bound):
        return None
    return light & np.isin(tix, np.array(chosen, dtype=np.int64))


def _cannot_start(
    pa: Any,
    pc: Any,
    np: Any,
    sink: Any,
    message: Any,
    tix_all: Any,
    positions: Any,
    per_token: tuple[list[str | None], list[str | None], list[int]],
) -> Any:
    """Of the stored lines at ``positions``, those of server candidates (not streams yet) that
    cannot start a stream: not named after an engine, and none of the engines' start markers
    in the message (what their ``looks_like`` needs)."""
    ids, units, limits = per_token
    markers = sink.start_markers
    if not markers:
        return None
    plain = np.zeros(len(limits), dtype=bool)
    for t, lim in enumerate(limits):
        ident, unit = ids[t], units[t]
        plain[t] = lim > 0 and ident not in SPECIAL_IDENTS and not sink.names_engine(ident, unit)
    rows = plain[tix_all[positions]]
    if not rows.any():
        return None
    q = np.flatnonzero(rows)
    msgs = pc.take(message, pa.array(positions[q]))
    maybe = pc.match_substring(msgs, markers[0])
    for marker in markers[1:]:
        maybe = pc.or_(maybe, pc.match_substring(msgs, marker))
    rows[q[pc.fill_null(maybe, True).to_numpy(zero_copy_only=False)]] = False
    return rows


class _FastEngine:
    """The statistics and access lines of one engine's streams, stored by the engine's
    vectorised path (:meth:`postmortem.engines.Engine.fast_messages`) with the journal's time,
    host, unit and pid.

    Streams that existed when the chunk began have all their fast lines set aside at once;
    a candidate's lines are set aside from the moment its stream starts (within the chunk).
    The other lines of those streams are still fed one by one in line order (the reference
    path); before each of them (and at the end of the chunk) the fast lines that precede it
    are settled: while the stream cannot take fast lines (a traceback's message is open, a
    death line waits for its exit code, another process spoke last) they are fed too, the
    rest only move the stream's time (the stream's ``note_given``). A stream fed from
    several identifier tokens in one chunk (one unit, several pids) stays per-line.

    Positions are those of the chunk's stored lines (the vector pass's rows)."""

    def __init__(
        self,
        engine: str,
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
        self.engine = engine
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
    ) -> _FastEngine | None:
        import numpy as np
        import pyarrow as _pa

        from ...engines import engines

        engine = next((e for e in engines().values() if e.fast_messages() is not None), None)
        if engine is None:
            return None
        fast = engine.fast_messages()
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
                st = sink.engine_stream(ids[t], pids[t], units[t])
                if st is None or st.engine != engine.name:
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
        given = fast.Given(
            line_no=line_no,
            ts=ts_col,
            ts_raw=raw_col,
            ts_inferred=inf_col,
            host=host_col,
            unit=pa.nulls(m, pa.string()),  # set when the tables are handed over
            pid=pa.nulls(m, pa.int32()),
        )
        maybe_cr, maybe_hit, maybe_nl = hints
        fr = fast.fast_messages(
            message,
            given,
            rows=offered,
            maybe_cr=maybe_cr or maybe_nl,
            maybe_hit=maybe_hit,
            maybe_nl=maybe_nl,
        )
        if fr is None:
            return None
        return cls(engine.name, sink, fr, tix_all, (ids, pids, units), existing, candidates, ts_col, slow)

    def taken_of(self, positions: Any) -> Any:
        """Which of the stored lines at ``positions`` the fast path keeps for now."""
        return self.taken[positions]

    def _stream_of_candidate(self, t: int) -> int | None:
        s = self.tok_stream.get(t)
        if s is not None:
            return s
        if t not in self.candidates:
            return None
        st = self.sink.engine_stream(self.ids[t], self.pids[t], self.units[t])
        if st is None or st.engine != self.engine:
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
        st = self.sink.engine_stream(entry[6], entry[7], entry[8])
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
