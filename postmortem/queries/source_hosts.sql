-- The hosts each source's rows name (its own host, given at ingest, and those of its records):
-- in a store of several hosts, an incident's report lists its host's files. A source naming
-- none has no row. No parameters.
SELECT DISTINCT source_id, host FROM (
    SELECT source_id, host FROM sources
    UNION ALL SELECT source_id, host FROM journal_entries
    UNION ALL SELECT source_id, host FROM kernel_messages
    UNION ALL SELECT source_id, host FROM boots
    UNION ALL SELECT source_id, host FROM unit_events
    UNION ALL SELECT source_id, host FROM oom_kills
    UNION ALL SELECT source_id, host FROM server_configs
    UNION ALL SELECT source_id, host FROM server_events
    UNION ALL SELECT source_id, host FROM server_stats
    UNION ALL SELECT source_id, host FROM http_requests
    UNION ALL SELECT source_id, host FROM cuda_ooms
    UNION ALL SELECT source_id, host FROM gpu_samples
    UNION ALL SELECT source_id, host FROM gpu_processes
    UNION ALL SELECT source_id, host FROM gpu_xids
    UNION ALL SELECT source_id, host FROM gpu_events
    UNION ALL SELECT source_id, host FROM containers
    UNION ALL SELECT source_id, host FROM k8s_containers
    UNION ALL SELECT source_id, host FROM k8s_events
) t
WHERE host IS NOT NULL
ORDER BY source_id, host
