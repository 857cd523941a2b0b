-- For each signal: first and last sample in a window and the sample count, to report gaps.
-- Parameters: $unit, $host, $from, $to.
SELECT 'gpu_samples' AS series, min(ts) AS first_ts, max(ts) AS last_ts, count(DISTINCT ts) AS samples
FROM gpu_samples WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT 'server_stats', min(ts), max(ts), count(*)
FROM server_stats WHERE unit = $unit AND ts >= $from AND ts <= $to
UNION ALL
SELECT 'http_requests', min(ts), max(ts), count(*)
FROM http_requests WHERE unit = $unit AND ts >= $from AND ts <= $to
UNION ALL
SELECT 'host_memory', min(ts), max(ts), count(*)
FROM journal_entries WHERE ident = 'earlyoom' AND message LIKE 'mem avail:%' AND ts >= $from AND ts <= $to
UNION ALL
SELECT 'journal', min(ts), max(ts), count(*)
FROM journal_entries WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY series
