-- The errors a host's servers answered between a kill and the recovery (what clients and
-- pollers got during the outage), by status and path. Parameters: $host, $from, $to.
SELECT status, split_part(path, '?', 1) AS path, count(*) AS requests
FROM http_requests
WHERE ts > $from AND ts < $to AND status >= 400 AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY status, split_part(path, '?', 1)
ORDER BY status, requests DESC, path
