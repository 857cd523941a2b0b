-- Each source's path, format and whether its timestamps are an absolute reference clock.
SELECT source_id, path, format, host, tz, first_ts, last_ts
FROM sources
ORDER BY source_id
