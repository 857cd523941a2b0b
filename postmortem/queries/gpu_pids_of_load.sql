-- The processes a load ran on the GPUs: pids nvidia-smi first listed no earlier than 30 s
-- before the load started (up to the kill); one listed before that (another job's) is not the
-- server's.
-- Parameters: $started, $kill, $host.
SELECT pid
FROM gpu_processes
WHERE ts >= $started - INTERVAL 1 HOUR AND ts <= $kill
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY pid
HAVING min(ts) >= $started - INTERVAL 30 SECOND
ORDER BY pid
