-- anchor_journal: give a journal read without wall-clock times (`journalctl -o short-monotonic`)
-- its times from the lines it shares with dated sources.
--
-- Such a journal's entries keep monotonic_s (seconds since their boot) and ts NULL, and so do
-- the systemd lines read from them (unit_events): a unit's start or death could not be put
-- beside anything (finding F05). Each boot of the source (monotonic_s falls back by more than
-- 5 s at a reboot; less is two files' lines merged) is dated by the best of, in this order:
-- its kernel lines that a dated kernel log also holds (exact); the server lines it carries (an
-- engine's own prefix: boot = that time - the entry's monotonic_s, the median over them); its
-- header's times of the first and last entries (to the second); systemd's lines about an OOM
-- kill the kernel dated (a lower bound of the boot only: systemd logs them after the kill; it
-- also raises a boot dated to about a second); the same boot's lines in another file of the
-- journal (below).
-- Every entry of an anchored boot takes ts = boot + monotonic_s (ts_inferred = 'boot'), and the
-- rows read from those entries (unit_events, kernel_messages, oom_kills, gpu_xids) take their
-- entry's time. Rows that have a ts are never changed; no parameters; idempotent.

CREATE OR REPLACE TEMP TABLE anchor_journal_entries AS
SELECT source_id, line_no, monotonic_s,
       sum(CASE WHEN monotonic_s < prev - 5 THEN 1 ELSE 0 END)  -- (not a merge's jitter)
           OVER (PARTITION BY source_id ORDER BY line_no) AS boot_seq
FROM (
    SELECT source_id, line_no, monotonic_s,
           lag(monotonic_s) OVER (PARTITION BY source_id ORDER BY line_no) AS prev
    FROM journal_entries
    WHERE ts IS NULL AND monotonic_s IS NOT NULL AND monotonic_s BETWEEN 0 AND 3.2e9  -- (a century)
);

-- The journal's kernel lines carry the kernel's own stamps (journalctl prints a kernel entry's
-- _SOURCE_MONOTONIC_TIMESTAMP), the same as dmesg's: a line printed once in a boot of the
-- journal and once in a dated kernel log (dmesg -T or iso, a syslog file) gives that boot
-- exactly (boot = the dated line's time - the journal's seconds since boot; the median over
-- such lines; stamps in whole seconds, dmesg -T's, are truncated: half a second on).
-- method: how each boot was dated ('kernel' exact, 'kernel-s' to the second, 'server',
-- 'header', 'kill' a lower bound, 'follows' another file's); raised: moved up to the kill's
-- bound (below).
CREATE OR REPLACE TEMP TABLE anchor_journal_boots AS
WITH mine AS (
    SELECT e.source_id, e.boot_seq, k.host, k.message, any_value(k.monotonic_s) AS monotonic_s
    FROM anchor_journal_entries AS e
    JOIN kernel_messages AS k ON k.source_id = e.source_id AND k.line_no = e.line_no
    WHERE k.ts IS NULL AND k.monotonic_s IS NOT NULL
    GROUP BY e.source_id, e.boot_seq, k.host, k.message
    HAVING count(*) = 1
),
dated AS (
    SELECT source_id, host, message, any_value(ts) AS ts
    FROM kernel_messages
    WHERE ts IS NOT NULL AND coalesce(ts_inferred, '') NOT IN ('boot', 'minute', 'witness', 'previous')
    GROUP BY source_id, host, message
    HAVING count(*) = 1
)
SELECT m.source_id, m.boot_seq,
       CAST(median(epoch_us(d.ts) - CAST(round(m.monotonic_s * 1000000) AS BIGINT))
            + CASE WHEN bool_and(epoch_us(d.ts) % 1000000 = 0) THEN 500000 ELSE 0 END AS BIGINT) AS boot_us,
       CASE WHEN bool_and(epoch_us(d.ts) % 1000000 = 0) THEN 'kernel-s' ELSE 'kernel' END AS method,
       false AS raised
FROM mine AS m
JOIN dated AS d
  ON d.message = m.message AND d.source_id <> m.source_id
 AND (m.host IS NULL OR d.host IS NULL OR m.host = d.host)
GROUP BY m.source_id, m.boot_seq;

-- A boot no kernel line dates: the server lines in it.
INSERT INTO anchor_journal_boots
WITH witness AS (
    SELECT source_id, line_no, ts FROM server_stats
    WHERE ts IS NOT NULL AND coalesce(ts_inferred, '') NOT IN ('previous', 'boot')
    UNION ALL
    SELECT source_id, line_no, ts FROM server_events
    WHERE ts IS NOT NULL AND coalesce(ts_inferred, '') NOT IN ('previous', 'boot')
)
SELECT e.source_id, e.boot_seq,
       CAST(median(epoch_us(w.ts) - CAST(round(e.monotonic_s * 1000000) AS BIGINT))
            + CASE WHEN bool_and(epoch_us(w.ts) % 1000000 = 0) THEN 500000 ELSE 0 END AS BIGINT) AS boot_us,
       'server' AS method, false AS raised
FROM anchor_journal_entries AS e
JOIN witness AS w ON w.source_id = e.source_id AND w.line_no = e.line_no
WHERE NOT EXISTS (SELECT 1 FROM anchor_journal_boots AS b
                  WHERE b.source_id = e.source_id AND b.boot_seq = e.boot_seq)
GROUP BY e.source_id, e.boot_seq;

-- A boot no line of a dated source dates: the journal's own header ("-- Journal begins at …,
-- ends at … --", systemd before 250) gives the wall times of the whole journal's first and last
-- entries, to the second (truncated). Printed whole, the journal's first and last entries are
-- the file's: the boots they give ([begins - first line's seconds, 1 s on), the same with ends
-- and the last line) meet, and the middle of where they meet is the boot (a file of one boot,
-- one header). Printed filtered (-b, -u, --since), they do not: the header dates nothing.
INSERT INTO anchor_journal_boots
WITH heads AS (
    SELECT source_id, any_value(line_no) AS line_no, any_value(begins_ts) AS begins_ts,
           any_value(ends_ts) AS ends_ts
    FROM journal_headers
    GROUP BY source_id
    HAVING count(*) = 1 AND bool_and(ends_ts IS NOT NULL)
),
edges AS (
    SELECT j.source_id, min(j.line_no) AS first_line, max(j.line_no) AS last_line
    FROM journal_entries AS j
    WHERE j.source_id IN (SELECT source_id FROM heads)
    GROUP BY j.source_id
),
spans AS (
    SELECT h.source_id, f.boot_seq,
           epoch_us(h.begins_ts) - CAST(round(f.monotonic_s * 1000000) AS BIGINT) AS from_first,
           epoch_us(h.ends_ts) - CAST(round(l.monotonic_s * 1000000) AS BIGINT) AS from_last
    FROM heads AS h
    JOIN edges AS n ON n.source_id = h.source_id AND h.line_no < n.first_line
    JOIN anchor_journal_entries AS f ON f.source_id = n.source_id AND f.line_no = n.first_line
    JOIN anchor_journal_entries AS l
      ON l.source_id = n.source_id AND l.line_no = n.last_line AND l.boot_seq = f.boot_seq
)
SELECT s.source_id, s.boot_seq,
       (greatest(s.from_first, s.from_last) + least(s.from_first, s.from_last) + 1000000) // 2 AS boot_us,
       'header' AS method, false AS raised
FROM spans AS s
WHERE abs(s.from_first - s.from_last) < 1000000
  AND NOT EXISTS (SELECT 1 FROM anchor_journal_boots AS b
                  WHERE b.source_id = s.source_id AND b.boot_seq = s.boot_seq);

-- A boot nothing above dates (the servers log to files): systemd's lines in it about a unit's
-- OOM kill ("A process of this unit has been killed by the OOM killer.", "Main process exited,
-- code=killed") and the kernel's dated record of that kill (dmesg -T or iso). systemd logs them
-- after the kill — the first within milliseconds, the main process's exit up to seconds later —
-- so a pair gives a lower bound of the boot (kill time - the line's seconds since boot), never
-- the boot itself. A unit's lines less than 2 minutes apart are one kill's (event); its first
-- line gives its bound. Each (event, kill) pair of the same unit proposes a bound; the one most
-- events agree on (their bounds within the 2 s below it) wins, the earliest of a tie (a line
-- paired with another kill of the unit). Taking the highest bound of the agreeing events puts
-- none of systemd's lines about a kill before the kill (1 µs after it at the least: never on it).
CREATE OR REPLACE TEMP TABLE anchor_journal_kills AS
WITH lines AS (
    SELECT e.source_id, e.boot_seq, e.line_no, e.monotonic_s, u.unit, u.host,
           lag(e.monotonic_s) OVER (PARTITION BY e.source_id, e.boot_seq, u.unit
                                    ORDER BY e.monotonic_s, e.line_no) AS prev
    FROM anchor_journal_entries AS e
    JOIN unit_events AS u ON u.source_id = e.source_id AND u.line_no = e.line_no
    WHERE u.ts IS NULL
      AND (u.action = 'oom_killed' OR (u.action = 'main_exited' AND u.code IN ('killed', 'dumped')))
),
events AS (
    SELECT source_id, boot_seq, unit, host, monotonic_s,
           sum(CASE WHEN prev IS NULL OR monotonic_s > prev + 120 THEN 1 ELSE 0 END)
               OVER (PARTITION BY source_id, boot_seq, unit ORDER BY monotonic_s, line_no) AS event
    FROM lines
),
firsts AS (
    SELECT source_id, boot_seq, unit, event, any_value(host) AS host, min(monotonic_s) AS monotonic_s
    FROM events
    GROUP BY source_id, boot_seq, unit, event
),
pairs AS (
    SELECT f.source_id, f.boot_seq, f.unit, f.event,
           epoch_us(o.ts) - CAST(round(f.monotonic_s * 1000000) AS BIGINT) + 1 AS boot_us
    FROM firsts AS f
    JOIN oom_kills AS o
      ON o.unit = f.unit AND o.ts IS NOT NULL AND coalesce(o.ts_inferred, '') NOT IN ('minute', 'boot')
     AND (o.host IS NULL OR f.host IS NULL OR o.host = f.host)
),
support AS (
    SELECT c.source_id, c.boot_seq, c.boot_us, count(DISTINCT (p.unit, p.event)) AS events
    FROM (SELECT DISTINCT source_id, boot_seq, boot_us FROM pairs) AS c
    JOIN pairs AS p ON p.source_id = c.source_id AND p.boot_seq = c.boot_seq
     AND p.boot_us BETWEEN c.boot_us - 2000000 AND c.boot_us
    GROUP BY c.source_id, c.boot_seq, c.boot_us
)
SELECT source_id, boot_seq, arg_max(boot_us, events * 1e12 - boot_us / 1e6) AS boot_us
FROM support
GROUP BY source_id, boot_seq;

-- … and a boot dated to about a second (server lines, dmesg -T, the header) is no earlier than
-- that bound: none of systemd's lines about a kill before the kill (a bound more than 2 s
-- above is a line paired with another kill, or the clock stepped: the dating stands).
UPDATE anchor_journal_boots AS b
SET boot_us = k.boot_us, raised = true
FROM anchor_journal_kills AS k
WHERE b.source_id = k.source_id AND b.boot_seq = k.boot_seq AND b.method <> 'kernel'
  AND k.boot_us > b.boot_us AND k.boot_us <= b.boot_us + 2000000;

INSERT INTO anchor_journal_boots
SELECT k.source_id, k.boot_seq, k.boot_us, 'kill' AS method, false AS raised
FROM anchor_journal_kills AS k
WHERE NOT EXISTS (SELECT 1 FROM anchor_journal_boots AS b
                  WHERE b.source_id = k.source_id AND b.boot_seq = k.boot_seq);

-- A boot still without a time whose lines go on, in another file of the host's journal, from
-- where an anchored boot's lines stop (a capture rotated or split: journal.txt.1, journal.txt),
-- or stop where its lines begin: the same boot, as the monotonic clock says (a reboot would
-- start it again near 0; a later boot's clock landing within the hour of where the other
-- file's stopped would be a coincidence). Of several such boots, only one boot time is taken.
INSERT INTO anchor_journal_boots
WITH spans AS (
    SELECT e.source_id, e.boot_seq, any_value(j.host) AS host,
           min(e.monotonic_s) AS lo, max(e.monotonic_s) AS hi
    FROM anchor_journal_entries AS e
    JOIN journal_entries AS j ON j.source_id = e.source_id AND j.line_no = e.line_no
    GROUP BY e.source_id, e.boot_seq
),
follows AS (
    SELECT u.source_id, u.boot_seq, b.boot_us
    FROM spans AS u
    JOIN spans AS a ON a.source_id <> u.source_id
     AND (a.host = u.host
          OR ((a.host IS NULL OR u.host IS NULL)
              AND (SELECT count(DISTINCT host) FROM spans WHERE host IS NOT NULL) <= 1))
     AND (u.lo BETWEEN a.hi - 5 AND a.hi + 3600 OR a.lo BETWEEN u.hi - 5 AND u.hi + 3600)
    JOIN anchor_journal_boots AS b ON b.source_id = a.source_id AND b.boot_seq = a.boot_seq
    WHERE NOT EXISTS (SELECT 1 FROM anchor_journal_boots AS x
                      WHERE x.source_id = u.source_id AND x.boot_seq = u.boot_seq)
)
SELECT source_id, boot_seq, min(boot_us) AS boot_us, 'follows' AS method, false AS raised
FROM follows
GROUP BY source_id, boot_seq
HAVING max(boot_us) - min(boot_us) <= 2000000;

CREATE OR REPLACE TEMP TABLE anchor_journal_times AS
SELECT e.source_id, e.line_no,
       make_timestamptz(b.boot_us + CAST(round(e.monotonic_s * 1000000) AS BIGINT)) AS ts
FROM anchor_journal_entries AS e
JOIN anchor_journal_boots AS b ON b.source_id = e.source_id AND b.boot_seq = e.boot_seq;

UPDATE journal_entries AS j SET ts = a.ts, ts_inferred = 'boot'
FROM anchor_journal_times AS a
WHERE j.ts IS NULL AND j.source_id = a.source_id AND j.line_no = a.line_no;

UPDATE unit_events AS u SET ts = a.ts, ts_inferred = 'boot'
FROM anchor_journal_times AS a
WHERE u.ts IS NULL AND u.source_id = a.source_id AND u.line_no = a.line_no;

UPDATE kernel_messages AS k SET ts = a.ts, ts_inferred = 'boot'
FROM anchor_journal_times AS a
WHERE k.ts IS NULL AND k.source_id = a.source_id AND k.line_no = a.line_no;

UPDATE oom_kills AS o SET ts = a.ts, ts_inferred = 'boot'
FROM anchor_journal_times AS a
WHERE o.ts IS NULL AND o.source_id = a.source_id AND o.line_no = a.line_no;

UPDATE gpu_xids AS x SET ts = a.ts, ts_inferred = 'boot'
FROM anchor_journal_times AS a
WHERE x.ts IS NULL AND x.source_id = a.source_id AND x.line_no = a.line_no;

-- the source's span, now that its entries have times, and no more "no boot time known" note
UPDATE sources AS s
SET first_ts = least(coalesce(s.first_ts, t.first_ts), t.first_ts),
    last_ts = greatest(coalesce(s.last_ts, t.last_ts), t.last_ts),
    notes = nullif(trim(regexp_replace(coalesce(s.notes, ''),
                   'boot-relative kernel stamps and no boot time known[^;]*(; )?', ''), '; '), '')
FROM (
    SELECT source_id, min(ts) AS first_ts, max(ts) AS last_ts
    FROM anchor_journal_times
    GROUP BY source_id
) AS t
WHERE s.source_id = t.source_id;

-- … and how they were dated, in its notes (the report's Data coverage says it), once
UPDATE sources AS s
SET notes = concat_ws('; ', nullif(s.notes, ''), n.note)
FROM (
    SELECT b.source_id,
           'seconds since boot, dated by ' || string_agg(DISTINCT CASE b.method
               WHEN 'kernel' THEN 'its kernel lines, as a dated kernel log has them (exact)'
               WHEN 'kernel-s' THEN 'its kernel lines, as dmesg -T has them (to the second)'
               WHEN 'server' THEN 'the server lines it carries (their own stamps)'
               WHEN 'header' THEN 'its header''s first and last times (to the second)'
               WHEN 'kill' THEN 'systemd''s lines of an OOM kill the kernel dated (no earlier than the kill)'
               ELSE 'the lines of its boot in another file of the journal' END
               || CASE WHEN b.raised THEN ', no earlier than the OOM kill systemd''s lines report' ELSE '' END,
               ' and ') AS note
    FROM anchor_journal_boots AS b
    WHERE b.source_id IN (SELECT source_id FROM anchor_journal_times)
    GROUP BY b.source_id
) AS n
WHERE s.source_id = n.source_id AND NOT contains(coalesce(s.notes, ''), n.note);

DROP TABLE anchor_journal_times;
DROP TABLE anchor_journal_boots;
DROP TABLE anchor_journal_kills;
DROP TABLE anchor_journal_entries;
