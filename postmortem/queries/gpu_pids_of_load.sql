-- The processes a load ran on the GPUs: pids nvidia-smi first listed no earlier than 30 s
-- before the load started (up to the kill); one listed before that (another job's) is not the
-- server's. Only on the unit's GPUs when they are known (another server's processes on the
-- others are not this one's, whenever nvidia-smi first saw them).
-- Parameters: $started, $kill, $host, $gpus (bus ids, UUIDs or indexes; NULL: any GPU).
SELECT pid
FROM gpu_processes
WHERE ts >= $started - INTERVAL 1 HOUR AND ts <= $kill
  AND ($host IS NULL OR host IS NULL OR host = $host)
  AND ($gpus IS NULL OR list_contains($gpus, bus_id) OR list_contains($gpus, gpu_uuid)
       OR list_contains($gpus, CAST(gpu_index AS VARCHAR)))
GROUP BY pid
HAVING min(ts) >= $started - INTERVAL 30 SECOND
ORDER BY pid
