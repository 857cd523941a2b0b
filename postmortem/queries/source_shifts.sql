-- Clock corrections applied to sources by earlier analyses (see sources.shift_s).
SELECT source_id, shift_s, shift_note FROM sources WHERE shift_s IS NOT NULL AND shift_s <> 0 ORDER BY source_id
