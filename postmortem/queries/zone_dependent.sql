-- Whether a source stored times read from zone-less local stamps: ts_inferred zone, year
-- (year-less local) or date (time of day only) — as right as the zone they were read in.
-- Parameters: $source_id.
SELECT EXISTS (SELECT 1 FROM journal_entries WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date'))
    OR EXISTS (SELECT 1 FROM kernel_messages WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date', 'minute', 'witness'))
    OR EXISTS (SELECT 1 FROM server_events WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date'))
    OR EXISTS (SELECT 1 FROM server_stats WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date'))
    OR EXISTS (SELECT 1 FROM server_configs WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date'))
    OR EXISTS (SELECT 1 FROM gpu_samples WHERE source_id = $source_id AND ts_inferred IN ('zone', 'year', 'date'))
    AS zoned
