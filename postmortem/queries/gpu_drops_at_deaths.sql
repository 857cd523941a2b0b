-- Whether each nvidia-smi source's GPUs emptied at a death on the reference clock: a sample
-- with ≥ 50 % of a GPU's memory used followed by one with ≤ 10 %, within 120 s of an OOM kill
-- or a main-process exit, as stamped ($shift_s = 0) or moved by $shift_s seconds.
-- Parameters: $sources (list of source ids), $shift_s.
WITH s AS (
    SELECT source_id, ts, mem_used_mib, mem_total_mib,
           lag(mem_used_mib) OVER w AS prev_used, lag(mem_total_mib) OVER w AS prev_total
    FROM gpu_samples
    WHERE list_contains($sources, source_id) AND ts IS NOT NULL AND mem_total_mib > 0
    WINDOW w AS (PARTITION BY source_id, coalesce(gpu_uuid, bus_id, CAST(gpu_index AS VARCHAR)) ORDER BY ts)
),
drops AS (
    SELECT source_id, ts - to_microseconds(CAST($shift_s * 1000000 AS BIGINT)) AS ts
    FROM s
    WHERE prev_used >= 0.5 * prev_total AND mem_used_mib <= 0.1 * mem_total_mib
),
deaths AS (
    SELECT ts FROM oom_kills WHERE ts IS NOT NULL
    UNION ALL SELECT ts FROM unit_events WHERE action = 'main_exited' AND ts IS NOT NULL
)
SELECT d.source_id, count(*) AS drops,
       count(*) FILTER (WHERE EXISTS (
           SELECT 1 FROM deaths k WHERE abs(epoch(k.ts) - epoch(d.ts)) <= 120)) AS at_deaths
FROM drops d
GROUP BY d.source_id
ORDER BY d.source_id
