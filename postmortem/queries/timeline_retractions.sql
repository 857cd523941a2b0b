-- KV-cache retractions of one unit in time buckets. Parameters: $unit, $from, $to, $bucket_s.
SELECT time_bucket(to_microseconds(CAST($bucket_s * 1000000 AS BIGINT)), ts) AS bucket,
       count(*) AS retractions
FROM sglang_events
WHERE unit = $unit AND kind = 'retract' AND ts >= $from AND ts <= $to
GROUP BY ALL
ORDER BY bucket
