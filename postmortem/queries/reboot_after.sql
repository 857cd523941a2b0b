-- Whether the host booted again after a kill, before $to: per journal, the first entry of
-- another boot than the one its last entry before the kill was of (boot ids from -o export or
-- json, or the "-- Boot <id> --" markers of the text modes), and the kernel's "Linux version"
-- banner dated in another source (a syslog kern.log). Each candidate with the last entry of
-- the old boot after the kill, the boot's start where a journal gave it (boots), and the first
-- start of $unit in the new boot. Parameters: $host, $kill, $to, $unit.
WITH last_known AS (
    -- (the time of each journal's last entry with a boot id; then only the entries of that
    -- second are read again: an arg_max over the six hours' (ts, line_no) pairs cost most of
    -- the query)
    SELECT source_id, max(ts) FILTER (WHERE boot_id IS NOT NULL) AS last_ts
    FROM journal_entries
    WHERE ts <= $kill AND ts >= $kill - INTERVAL 6 HOUR
      AND ($host IS NULL OR host IS NULL OR host = $host)
    GROUP BY source_id
), before AS (
    SELECT l.source_id, arg_max(j.boot_id, j.line_no) AS old_boot
    FROM last_known AS l
    LEFT JOIN journal_entries AS j
      ON j.source_id = l.source_id AND j.ts = l.last_ts AND j.boot_id IS NOT NULL
     AND ($host IS NULL OR j.host IS NULL OR j.host = $host)
    GROUP BY l.source_id
), after AS (
    SELECT j.source_id, j.line_no, j.ts, j.boot_id, b.old_boot
    FROM journal_entries AS j
    JOIN before AS b USING (source_id)
    WHERE j.ts > $kill AND j.ts <= $to AND ($host IS NULL OR j.host IS NULL OR j.host = $host)
), firsts AS (
    SELECT source_id,
           arg_min(ts, (ts, line_no)) AS first_ts,
           arg_min(line_no, (ts, line_no)) AS line_no,
           arg_min(boot_id, (ts, line_no)) AS boot_id
    FROM after
    WHERE boot_id IS DISTINCT FROM old_boot
    GROUP BY source_id
), candidates AS (
    -- (the message of the first line only, joined on its line: reading every message of the
    -- window cost more than the rest of the query)
    SELECT f.source_id, f.line_no, f.first_ts, f.boot_id, m.message,
           'journal' AS method,
           (SELECT max(a.ts) FROM after AS a
            WHERE a.source_id = f.source_id AND a.boot_id IS NOT DISTINCT FROM a.old_boot
              AND a.ts < f.first_ts) AS last_old_ts
    FROM firsts AS f
    LEFT JOIN journal_entries AS m
      ON m.source_id = f.source_id AND m.line_no = f.line_no AND m.ts = f.first_ts
    UNION ALL
    SELECT source_id, line_no, ts, boot_id, message, 'kernel', NULL
    FROM kernel_messages
    WHERE message LIKE 'Linux version %' AND ts > $kill AND ts <= $to
      AND ($host IS NULL OR host IS NULL OR host = $host)
)
SELECT c.*,
       (SELECT median(b.boot_ts)::TIMESTAMPTZ FROM boots AS b
        WHERE c.boot_id IS NOT NULL AND b.boot_id = c.boot_id) AS boot_ts,
       (SELECT min(u.ts) FROM unit_events AS u
        WHERE u.unit = $unit AND u.action IN ('starting', 'started') AND u.ts >= c.first_ts
          AND u.ts <= $to AND ($host IS NULL OR u.host IS NULL OR u.host = $host)) AS unit_started_ts
FROM candidates AS c
ORDER BY c.first_ts, c.method, c.source_id, c.line_no
