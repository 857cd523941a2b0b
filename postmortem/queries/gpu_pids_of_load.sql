-- The processes a load ran on the GPUs: pids nvidia-smi first listed no earlier than 30 s
-- before the load started (up to the kill); one listed before that (another job's) is not the
-- server's. That needs nvidia-smi to have been looking before the load began: a loop started
-- later lists every server's processes as new, so then nothing is claimed — unless the unit's
-- GPUs are known, whose processes are the unit's whenever nvidia-smi first saw them.
-- Parameters: $started, $kill, $host, $gpus (bus ids, UUIDs or indexes; NULL: not known).
WITH looking_before AS (
    SELECT count(*) > 0 AS yes
    FROM (
        SELECT ts, host FROM gpu_processes
        UNION ALL SELECT ts, host FROM gpu_samples
    )
    WHERE ts >= $started - INTERVAL 1 HOUR AND ts < $started - INTERVAL 30 SECOND
      AND ($host IS NULL OR host IS NULL OR host = $host)
)
SELECT pid
FROM gpu_processes
WHERE ts >= $started - INTERVAL 1 HOUR AND ts <= $kill
  AND ($host IS NULL OR host IS NULL OR host = $host)
  AND ($gpus IS NULL OR list_contains($gpus, bus_id) OR list_contains($gpus, gpu_uuid)
       OR list_contains($gpus, CAST(gpu_index AS VARCHAR)))
GROUP BY pid
HAVING min(ts) >= $started - INTERVAL 30 SECOND
   AND ($gpus IS NOT NULL OR (SELECT yes FROM looking_before))
ORDER BY pid
