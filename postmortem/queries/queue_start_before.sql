-- When requests began to wait in a unit's queue before a time: the first batch line with
-- #queue-req > 0 after the last one with an empty queue (the current stretch of queuing).
-- Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $since, $before, $host.
WITH b AS (
    SELECT ts, engine, source_id, line_no, queue_req
    FROM server_stats
    WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts >= $since AND ts <= $before AND queue_req IS NOT NULL
      AND ($host IS NULL OR host IS NULL OR host = $host)
),
last_empty AS (
    SELECT max(ts) AS t FROM b WHERE queue_req = 0
)
SELECT ts, engine, source_id, line_no
FROM b
WHERE queue_req > 0 AND ts > coalesce((SELECT t FROM last_empty), $since - INTERVAL 1 SECOND)
ORDER BY ts, line_no
LIMIT 1
