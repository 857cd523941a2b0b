-- How many timed records each source has between two times: whether a file says anything near
-- a kill (its span alone may include the kill across a gap of days). Every ingested table with
-- a ts column, the ones sources.first_ts/last_ts are taken from (a test checks the list).
-- Parameters: $from, $to.
SELECT source_id, count(*) AS records FROM (
    SELECT source_id FROM journal_entries WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM kernel_messages WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM unit_events WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM oom_kills WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM server_configs WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM server_events WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM server_stats WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM http_requests WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM cuda_ooms WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM gpu_samples WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM gpu_processes WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM gpu_xids WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM gpu_events WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM containers WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM k8s_containers WHERE ts BETWEEN $from AND $to
    UNION ALL SELECT source_id FROM k8s_events WHERE ts BETWEEN $from AND $to
) t
GROUP BY source_id
ORDER BY source_id
