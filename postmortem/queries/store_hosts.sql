-- The hosts the ingested rows name, two at most: enough to tell whether the store names exactly
-- one (a per-host store, whose rows no host is known for are that host's). Every ingested table
-- with a host column (a test checks the list). No parameters.
SELECT DISTINCT host FROM (
    SELECT host FROM sources
    UNION ALL SELECT host FROM journal_entries
    UNION ALL SELECT host FROM kernel_messages
    UNION ALL SELECT host FROM boots
    UNION ALL SELECT host FROM unit_events
    UNION ALL SELECT host FROM oom_kills
    UNION ALL SELECT host FROM server_configs
    UNION ALL SELECT host FROM server_events
    UNION ALL SELECT host FROM server_stats
    UNION ALL SELECT host FROM http_requests
    UNION ALL SELECT host FROM cuda_ooms
    UNION ALL SELECT host FROM gpu_samples
    UNION ALL SELECT host FROM gpu_processes
    UNION ALL SELECT host FROM gpu_xids
    UNION ALL SELECT host FROM gpu_events
    UNION ALL SELECT host FROM containers
    UNION ALL SELECT host FROM k8s_containers
    UNION ALL SELECT host FROM k8s_events
) t
WHERE host IS NOT NULL
ORDER BY host
LIMIT 2
