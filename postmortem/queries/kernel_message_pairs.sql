-- The same kernel message seen by two sources (dmesg file and journal copy): their time
-- difference measures the clock offset between the two sources.
SELECT a.source_id AS source_id, b.source_id AS reference_source_id,
       count(*) AS pairs,
       median(epoch_us(a.ts) - epoch_us(b.ts)) / 1e6 AS offset_s,
       -- the reference stamps whole seconds (short-iso): an offset under a second is its rounding
       bool_and(epoch_us(b.ts) % 1000000 = 0) AS coarse
FROM kernel_messages a
JOIN kernel_messages b
  ON a.message = b.message AND a.source_id <> b.source_id
 AND (a.host IS NULL OR b.host IS NULL OR a.host = b.host)
WHERE a.ts IS NOT NULL AND b.ts IS NOT NULL
  AND (a.message LIKE '%invoked oom-killer%' OR a.message LIKE '%Killed process%'
       OR a.message LIKE 'oom-kill:%' OR a.message LIKE '%NVRM: Xid%')
GROUP BY a.source_id, b.source_id
ORDER BY a.source_id, b.source_id
