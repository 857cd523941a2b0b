-- postmortem schema, version 5: every column (and table) that early revisions added by editing
-- 001_initial.sql in place, added here when missing. A store created before such an edit
-- recorded version 1 without them, and migrations 2-4 did not bring them: `build` then failed
-- on a missing column (sources.shift_s). On any other store every statement is a no-op.

ALTER TABLE sources ADD COLUMN IF NOT EXISTS status VARCHAR DEFAULT 'complete';
ALTER TABLE sources ALTER COLUMN status SET NOT NULL;
ALTER TABLE sources ADD COLUMN IF NOT EXISTS resume_line BIGINT;
ALTER TABLE sources ADD COLUMN IF NOT EXISTS shift_s DOUBLE;
ALTER TABLE sources ADD COLUMN IF NOT EXISTS shift_note VARCHAR;

ALTER TABLE unit_events ADD COLUMN IF NOT EXISTS description VARCHAR;

ALTER TABLE oom_kills ADD COLUMN IF NOT EXISTS cpuset VARCHAR;
ALTER TABLE oom_kills ADD COLUMN IF NOT EXISTS memsw_usage_kb BIGINT;
ALTER TABLE oom_kills ADD COLUMN IF NOT EXISTS memsw_limit_kb BIGINT;
ALTER TABLE oom_kills ADD COLUMN IF NOT EXISTS free_pages BIGINT;

ALTER TABLE oom_tasks ADD COLUMN IF NOT EXISTS nr_pmds BIGINT;
ALTER TABLE oom_tasks ADD COLUMN IF NOT EXISTS cpu INTEGER;
ALTER TABLE oom_tasks ADD COLUMN IF NOT EXISTS oom_adj INTEGER;

ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS pp_size INTEGER;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS max_total_tokens BIGINT;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS quantization VARCHAR;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS kv_cache_dtype VARCHAR;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS disable_cuda_graph BOOLEAN;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS watchdog_timeout DOUBLE;
ALTER TABLE server_configs ADD COLUMN IF NOT EXISTS args_format VARCHAR;

ALTER TABLE sglang_events ADD COLUMN IF NOT EXISTS detail VARCHAR;

ALTER TABLE sglang_batches ADD COLUMN IF NOT EXISTS ts_inferred VARCHAR;
ALTER TABLE sglang_batches ADD COLUMN IF NOT EXISTS iteration INTEGER;
ALTER TABLE sglang_batches ADD COLUMN IF NOT EXISTS swa_token_usage DOUBLE;
ALTER TABLE sglang_batches ADD COLUMN IF NOT EXISTS mamba_usage DOUBLE;
ALTER TABLE sglang_batches ADD COLUMN IF NOT EXISTS pending_token BIGINT;

ALTER TABLE http_requests ADD COLUMN IF NOT EXISTS ts_inferred VARCHAR;

ALTER TABLE cuda_ooms ADD COLUMN IF NOT EXISTS ts_inferred VARCHAR;
ALTER TABLE cuda_ooms ADD COLUMN IF NOT EXISTS private_pool_mib DOUBLE;
ALTER TABLE cuda_ooms ADD COLUMN IF NOT EXISTS process_mib DOUBLE;
ALTER TABLE cuda_ooms ADD COLUMN IF NOT EXISTS device VARCHAR;

ALTER TABLE gpu_processes ADD COLUMN IF NOT EXISTS process_type VARCHAR;

ALTER TABLE incidents ADD COLUMN IF NOT EXISTS scope VARCHAR;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS memcg_usage_kb BIGINT;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS kills_last_hour INTEGER;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS running_at_kill INTEGER;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS queued_at_kill INTEGER;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS last_activity_ts TIMESTAMPTZ;
ALTER TABLE incidents ADD COLUMN IF NOT EXISTS gpu_memory_freed BOOLEAN;

CREATE TABLE IF NOT EXISTS incident_victims (
    incident_id  INTEGER NOT NULL,
    source_id    INTEGER,
    line_no      BIGINT,
    ts           TIMESTAMPTZ,
    pid          INTEGER,
    comm         VARCHAR,
    anon_rss_kb  BIGINT,
    chosen       BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS clock_offsets (
    source_id            INTEGER NOT NULL,
    reference_source_id  INTEGER,
    offset_s             DOUBLE NOT NULL,
    method               VARCHAR NOT NULL,
    pairs                INTEGER NOT NULL,
    note                 VARCHAR
);

ALTER TABLE recommendations ADD COLUMN IF NOT EXISTS evidence VARCHAR;
