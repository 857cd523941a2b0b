-- For each signal: first and last sample in a window and the sample count, to report gaps, and
-- whether the store holds any of it for the host (or the unit) at all: a source never ingested
-- has no gap.
-- Parameters: $unit (NULL: the rows of $source, a server log nothing ties to a unit), $source,
-- $host, $from, $to.
SELECT 'gpu_samples' AS series, min(ts) AS first_ts, max(ts) AS last_ts, count(DISTINCT ts) AS samples,
       EXISTS (SELECT 1 FROM gpu_samples WHERE ($host IS NULL OR host IS NULL OR host = $host)) AS held
FROM gpu_samples WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT 'server_stats', min(ts), max(ts), count(*),
       EXISTS (SELECT 1 FROM server_stats
               WHERE unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source))
FROM server_stats WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source))
  AND ts >= $from AND ts <= $to
UNION ALL
SELECT 'http_requests', min(ts), max(ts), count(*),
       EXISTS (SELECT 1 FROM http_requests
               WHERE unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source))
FROM http_requests WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source))
  AND ts >= $from AND ts <= $to
UNION ALL
-- (earlyoom's reports and the limit it prints at a kill: timeline_host_memory.sql's samples)
SELECT 'host_memory', min(ts), max(ts), count(*),
       EXISTS (SELECT 1 FROM journal_entries
               WHERE ident = 'earlyoom' AND (message LIKE 'mem avail:%' OR message LIKE 'low memory!%')
                 AND ($host IS NULL OR host IS NULL OR host = $host))
FROM journal_entries
WHERE ident = 'earlyoom' AND (message LIKE 'mem avail:%' OR message LIKE 'low memory!%')
  AND ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
-- (a journal printed without times, journalctl -o cat, has no window to be silent in)
SELECT 'journal', min(ts), max(ts), count(*),
       EXISTS (SELECT 1 FROM journal_entries
               WHERE ts IS NOT NULL AND ($host IS NULL OR host IS NULL OR host = $host))
FROM journal_entries WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY series
