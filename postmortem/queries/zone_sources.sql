-- Sources whose times are printed without a zone and were read in sources.tz: SGLang logs and
-- nvidia-smi output always are (whether or not --tz was given), other formats when their rows
-- say so (ts_inferred = 'zone').
SELECT s.source_id, s.tz
FROM sources s
WHERE s.tz IS NOT NULL
  AND (s.format LIKE 'sglang%' OR s.format LIKE 'nvidia%'
       OR s.source_id IN (SELECT source_id FROM gpu_samples WHERE ts_inferred = 'zone'
                          UNION SELECT source_id FROM kernel_messages WHERE ts_inferred = 'zone'))
ORDER BY s.source_id
