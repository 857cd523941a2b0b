-- Where and when nvidia-smi listed some pids (processes another one's CUDA OOM named as holding
-- GPU memory) in a window. Parameters: $pids (list of pids), $from, $to, $host.
SELECT pid, any_value(process_name) AS process_name, count(DISTINCT coalesce(gpu_uuid, bus_id)) AS gpus,
       min(ts) AS first_ts, max(ts) AS last_ts, max(used_mib) AS used_mib,
       arg_min(source_id, ts) AS source_id, arg_min(line_no, ts) AS line_no
FROM gpu_processes
WHERE list_contains($pids, pid) AND ts >= $from AND ts <= $to
  AND ($host IS NULL OR host IS NULL OR host = $host)
GROUP BY pid
ORDER BY pid
