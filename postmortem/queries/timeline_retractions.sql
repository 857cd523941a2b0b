-- KV-cache retractions of one unit in time buckets: how many retraction events, how many
-- requests they retracted, and the first one (its time and line) in each bucket.
-- Parameters: $unit (NULL: the rows of $source, a server log nothing ties to a unit), $source, $from, $to, $bucket_s, $host, $origin (a bucket starts there: the kill).
SELECT time_bucket(to_microseconds(CAST($bucket_s * 1000000 AS BIGINT)), ts, $origin) AS bucket,
       count(*) AS retractions,
       sum(TRY_CAST(detail ->> '$.retracted_reqs' AS BIGINT)) AS retracted_reqs,
       min(ts) AS first_ts,
       arg_min(source_id, ts) AS first_source_id,
       arg_min(line_no, ts) AS first_line_no
FROM server_events
WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND kind = 'retract' AND ts >= $from AND ts <= $to
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY ALL
ORDER BY bucket
