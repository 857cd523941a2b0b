-- A server's serving signals of one unit in time buckets.
-- Parameters: $unit (NULL: the rows of $source, a server log nothing ties to a unit), $source, $host, $from, $to, $bucket_s (seconds), $origin (a bucket starts there: the kill).
SELECT time_bucket(to_microseconds(CAST($bucket_s * 1000000 AS BIGINT)), ts, $origin) AS bucket,
       avg(token_usage) AS token_usage,
       max(token_usage) AS token_usage_max,
       max(running_req) AS running_req,
       max(queue_req) AS queue_req,
       avg(gen_throughput) FILTER (WHERE phase = 'decode') AS gen_throughput,
       avg(accept_len) AS accept_len,
       count(*) AS samples
FROM server_stats
WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY ALL
ORDER BY bucket
