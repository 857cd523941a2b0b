-- service_loads: every row the load derivation (postmortem/analysis/loads.py) reads, as one
-- stream in time order: servers' startup/ready/failure events, their configurations,
-- requests to health endpoints, systemd lifecycle events and OOM kills of units.
-- No parameters.
SELECT 'server' AS origin, source_id, line_no, ts, host, unit, pid, kind, role, ranks,
       elapsed_s, exit_code, detail,
       CAST(NULL AS VARCHAR) AS path, CAST(NULL AS INTEGER) AS status,
       CAST(NULL AS VARCHAR) AS model_path, CAST(NULL AS VARCHAR) AS speculative_algorithm,
       CAST(NULL AS INTEGER) AS tp_size, CAST(NULL AS INTEGER) AS port,
       CAST(NULL AS VARCHAR) AS result, CAST(NULL AS VARCHAR) AS code, engine
FROM server_events
WHERE kind IN ('init_dist_begin', 'init_dist_end', 'load_weight_begin', 'load_weight_end', 'kv_cache_allocated',
               'memory_pool_end', 'cuda_graph_begin', 'cuda_graph_end', 'limits',
               'startup_timings', 'uvicorn_started', 'uvicorn_running', 'ready', 'exception',
               'cuda_oom', 'not_enough_memory', 'kv_oom', 'cuda_graph_failed', 'scheduler_dead',
               'scheduler_killed', 'subprocess_crashed', 'initialization_failed', 'sigquit',
               'sigterm', 'forced_exit', 'watchdog')
UNION ALL
SELECT 'config', source_id, line_no, ts, host, unit, pid, 'config', NULL, NULL,
       NULL, NULL, NULL, NULL, NULL,
       model_path, speculative_algorithm, tp_size, port, NULL, NULL, engine
FROM server_configs
UNION ALL
SELECT 'http', source_id, line_no, ts, host, unit, pid, 'request', NULL, NULL,
       NULL, NULL, NULL, path, status,
       NULL, NULL, NULL, NULL, NULL, NULL, engine
FROM http_requests
-- (the prefixes first: a prefix test is cheap, and most requests are not probes; 700,000
-- requests of the bench store: 20 -> 12 ms)
WHERE (path LIKE '/health%' OR path LIKE '/v1/models%' OR path LIKE '/ping%')
  AND (split_part(path, '?', 1) IN ('/health', '/health_generate', '/v1/models', '/ping')
       OR path LIKE '/v1/models/%')
UNION ALL
SELECT 'unit', source_id, line_no, ts, host, unit, NULL, action, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, result, code, NULL
FROM unit_events
WHERE action IN ('starting', 'started', 'stopping', 'stopped', 'main_exited', 'failed', 'oom_killed')
UNION ALL
SELECT 'oom', source_id, line_no, ts, host, unit, victim_pid, 'oom_kill', NULL, NULL,
       NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, killer, NULL, NULL
FROM oom_kills
WHERE unit IS NOT NULL
ORDER BY ts NULLS FIRST, source_id, line_no, origin
