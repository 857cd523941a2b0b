-- The same kernel message seen by two sources (dmesg file and journal copy): their time
-- difference measures the clock offset between the two sources. Only a line printed once in
-- each source is a witness: a dmesg of the same boot holds every night's OOM record since it
-- began, and the header of a record ("… invoked oom-killer: gfp_mask=…") reads the same every
-- night — paired across nights, its copies gave the median of two nights' distance.
WITH k AS (
    SELECT source_id, host, message, any_value(ts) AS ts
    FROM kernel_messages
    WHERE ts IS NOT NULL
      AND (message LIKE '%invoked oom-killer%' OR message LIKE '%Killed process%'
           OR message LIKE 'oom-kill:%' OR message LIKE '%NVRM: Xid%')
    GROUP BY source_id, host, message
    HAVING count(*) = 1
)
SELECT a.source_id AS source_id, b.source_id AS reference_source_id,
       count(*) AS pairs,
       median(epoch_us(a.ts) - epoch_us(b.ts)) / 1e6 AS offset_s,
       -- the reference stamps whole seconds (short-iso): an offset under a second is its rounding
       bool_and(epoch_us(b.ts) % 1000000 = 0) AS coarse
FROM k AS a
JOIN k AS b
  ON a.message = b.message AND a.source_id <> b.source_id
 AND (a.host IS NULL OR b.host IS NULL OR a.host = b.host)
GROUP BY a.source_id, b.source_id
ORDER BY a.source_id, b.source_id
