-- GPU processes still listed after a kill whose pid was one of the killed unit's processes, up
-- to $until (later, a pid may be another process's).
-- Parameters: $pids (list of pids), $kill, $grace_s, $until, $host.
SELECT pid, process_name, coalesce(gpu_uuid, bus_id) AS gpu, min(ts) AS first_ts, max(ts) AS last_ts,
       max(used_mib) AS used_mib, count(*) AS samples
FROM gpu_processes
WHERE list_contains($pids, pid) AND ts > $kill + to_seconds($grace_s) AND ts <= $until
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY ALL
ORDER BY pid, gpu
