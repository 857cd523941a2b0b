-- postmortem schema, version 7: engine-neutral server tables. An inference engine (SGLang,
-- vLLM, ...) is a plug-in; what its logs say lands in tables every engine shares, each row
-- with the engine that wrote it:
--   sglang_events  -> server_events (startup phases, readiness, errors, signals, deaths)
--   sglang_batches -> server_stats  (the scheduler's periodic statistics)
--   server_configs, http_requests, cuda_ooms gain an engine column.
-- server_stats gains the statistics a second engine reports and SGLang does not (requests
-- swapped to CPU, preemptions, CPU KV-cache usage, prefix-cache hit rate). Rows written before
-- version 7 came from the only engine there was: they get engine 'sglang'. The old names stay
-- as views of SGLang's rows, so queries written against them keep working.

ALTER TABLE sglang_events RENAME TO server_events;
ALTER TABLE server_events ADD COLUMN engine VARCHAR DEFAULT 'sglang';
ALTER TABLE server_events ALTER COLUMN engine DROP DEFAULT;
ALTER TABLE server_events ALTER COLUMN engine SET NOT NULL;

ALTER TABLE sglang_batches RENAME TO server_stats;
ALTER TABLE server_stats ADD COLUMN engine VARCHAR DEFAULT 'sglang';
ALTER TABLE server_stats ALTER COLUMN engine DROP DEFAULT;
ALTER TABLE server_stats ALTER COLUMN engine SET NOT NULL;
ALTER TABLE server_stats ADD COLUMN swapped_req INTEGER;
ALTER TABLE server_stats ADD COLUMN preemptions BIGINT;
ALTER TABLE server_stats ADD COLUMN cpu_kv_usage DOUBLE;
ALTER TABLE server_stats ADD COLUMN prefix_cache_hit_rate DOUBLE;

ALTER TABLE server_configs ADD COLUMN engine VARCHAR DEFAULT 'sglang';
ALTER TABLE server_configs ALTER COLUMN engine DROP DEFAULT;
ALTER TABLE server_configs ALTER COLUMN engine SET NOT NULL;
ALTER TABLE server_configs ADD COLUMN engine_version VARCHAR;

ALTER TABLE http_requests ADD COLUMN engine VARCHAR DEFAULT 'sglang';
ALTER TABLE http_requests ALTER COLUMN engine DROP DEFAULT;
ALTER TABLE http_requests ALTER COLUMN engine SET NOT NULL;

ALTER TABLE cuda_ooms ADD COLUMN engine VARCHAR DEFAULT 'sglang';
ALTER TABLE cuda_ooms ALTER COLUMN engine DROP DEFAULT;
ALTER TABLE cuda_ooms ALTER COLUMN engine SET NOT NULL;

-- service_loads (derived: rebuilt by every build) names the engine of the server that loaded
ALTER TABLE service_loads ADD COLUMN engine VARCHAR;

CREATE VIEW sglang_events AS SELECT * EXCLUDE (engine) FROM server_events WHERE engine = 'sglang';
CREATE VIEW sglang_batches AS
    SELECT * EXCLUDE (engine, swapped_req, preemptions, cpu_kv_usage, prefix_cache_hit_rate)
    FROM server_stats WHERE engine = 'sglang';
