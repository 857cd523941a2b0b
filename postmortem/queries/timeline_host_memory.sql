-- Host RAM available over time, from earlyoom's lines in the journal: its periodic report
-- ("mem avail: 1245231 of 2063588 MiB (60.34%), ...") and, at a kill, the limit it found
-- available RAM at or below ("low memory! at or below SIGTERM limits: mem  9.87%, swap 100.00%";
-- earlyoom prints its configured limits there, not a reading). A limit row has limit_pct set:
-- its avail_mib is that share of the host's total RAM as earlyoom's latest line before it gave
-- it ("mem avail: … of N MiB", or "mem total: N MiB" at its start), an upper bound. A limit
-- line within a second of a report (earlyoom 1.6–1.7 print one before it) is left out: the
-- report is a reading. Parameters: $host, $from, $to.
WITH lines AS (
    SELECT ts, host, message, source_id, line_no
    FROM journal_entries
    WHERE ident = 'earlyoom' AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
      AND (message LIKE 'mem avail:%' OR message LIKE 'mem total:%' OR message LIKE 'low memory!%')
),
totals AS (
    SELECT ts, coalesce(host, '') AS host_key,
           TRY_CAST(NULLIF(regexp_extract(message, '^mem (avail: *[0-9]+ of|total:) *([0-9]+) MiB', 2), '') AS BIGINT)
               AS total_mib
    FROM lines WHERE message NOT LIKE 'low memory!%'
),
readings AS (
    SELECT ts, host,
           -- TRY_CAST: a line in another shape (a unit other than MiB) is no sample, not an error
           TRY_CAST(NULLIF(regexp_extract(message, 'mem avail: *([0-9]+) of *[0-9]+ MiB', 1), '') AS BIGINT) AS avail_mib,
           TRY_CAST(NULLIF(regexp_extract(message, 'mem avail: *[0-9]+ of *([0-9]+) MiB', 1), '') AS BIGINT) AS total_mib,
           source_id, line_no
    FROM lines WHERE message LIKE 'mem avail:%' AND ts >= $from
),
limits AS (
    SELECT ts, host, coalesce(host, '') AS host_key, source_id, line_no,
           TRY_CAST(NULLIF(regexp_extract(message, '^low memory! at or below SIG[A-Z]+ limits: mem *([0-9.]+) *%', 1), '')
               AS DOUBLE) AS limit_pct
    FROM lines l
    WHERE message LIKE 'low memory!%' AND ts >= $from
      AND NOT EXISTS (
          SELECT 1 FROM readings r
          WHERE r.avail_mib IS NOT NULL AND coalesce(r.host, '') = coalesce(l.host, '')
            AND r.ts BETWEEN l.ts - INTERVAL 1 SECOND AND l.ts + INTERVAL 1 SECOND
      )
)
SELECT ts, host, avail_mib, total_mib, CAST(NULL AS DOUBLE) AS limit_pct, source_id, line_no
FROM readings
UNION ALL
SELECT l.ts, l.host, round(l.limit_pct * t.total_mib / 100) AS avail_mib, t.total_mib, l.limit_pct,
       l.source_id, l.line_no
FROM limits l
ASOF JOIN (SELECT * FROM totals WHERE total_mib IS NOT NULL) t ON l.host_key = t.host_key AND l.ts >= t.ts
WHERE l.limit_pct IS NOT NULL
ORDER BY ts, line_no
