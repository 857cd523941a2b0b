-- Sources whose times are printed without a zone and were read in sources.tz: the engines' own
-- logs and nvidia-smi output always are (whether or not --tz was given), other formats when
-- their rows say so (ts_inferred = 'zone').
-- Parameters: $engine_formats (the parsers of the registered engines' logs).
SELECT s.source_id, s.tz
FROM sources s
WHERE s.tz IS NOT NULL
  AND (list_contains($engine_formats, s.format) OR s.format LIKE 'nvidia%'
       OR s.source_id IN (SELECT source_id FROM gpu_samples WHERE ts_inferred = 'zone'
                          UNION SELECT source_id FROM kernel_messages WHERE ts_inferred = 'zone'))
ORDER BY s.source_id
