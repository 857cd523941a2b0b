-- Host RAM available over time, from earlyoom's periodic report in the journal
-- ("mem avail: 1245231 of 2063588 MiB (60.34%), ..."). Parameters: $host, $from, $to.
SELECT ts, host,
       -- TRY_CAST: a line in another shape (a unit other than MiB) is no sample, not an error
       TRY_CAST(NULLIF(regexp_extract(message, 'mem avail: *([0-9]+) of *[0-9]+ MiB', 1), '') AS BIGINT) AS avail_mib,
       TRY_CAST(NULLIF(regexp_extract(message, 'mem avail: *[0-9]+ of *([0-9]+) MiB', 1), '') AS BIGINT) AS total_mib,
       source_id, line_no
FROM journal_entries
WHERE ident = 'earlyoom' AND message LIKE 'mem avail:%'
  AND ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, line_no
