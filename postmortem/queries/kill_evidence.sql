-- Records that say a process was killed or a service died, from every source, in time order.
-- Parameters: $since, $until (TIMESTAMPTZ or NULL).
SELECT 'oom_kill' AS kind, k.source_id, k.line_no, k.ts, k.host, k.unit, k.killer, k.scope,
       k.victim_pid AS pid, k.victim_comm AS comm, k.oom_id, k.anon_rss_kb, k.memcg_usage_kb,
       k.memcg_limit_kb, NULL::VARCHAR AS action, NULL::VARCHAR AS code, NULL::VARCHAR AS status,
       NULL::VARCHAR AS result, NULL::INTEGER AS restart_count, k.message,
       k.oom_memcg, NULL::VARCHAR AS server_detail, NULL::VARCHAR AS phase, NULL::VARCHAR AS engine,
       k.ts_inferred, k.vm_rss_kb
FROM oom_kills k
WHERE k.ts IS NOT NULL
  AND ($since IS NULL OR k.ts >= $since) AND ($until IS NULL OR k.ts <= $until)
UNION ALL
SELECT 'unit_event', u.source_id, u.line_no, u.ts, u.host, u.unit, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, u.action, u.code, u.status, u.result, u.restart_count, u.message,
       NULL, NULL, NULL, NULL, NULL, NULL
FROM unit_events u
WHERE u.ts IS NOT NULL
  AND ($since IS NULL OR u.ts >= $since) AND ($until IS NULL OR u.ts <= $until)
  AND (u.action IN ('oom_killed', 'oomd_killed')
       OR (u.action = 'main_exited' AND u.code IN ('killed', 'dumped'))
       -- an error exit (code=exited, a status not 0): an attempt of a start that failed
       OR (u.action = 'main_exited' AND u.code = 'exited'
           AND split_part(coalesce(u.status, ''), '/', 1) NOT IN ('', '0'))
       OR (u.action = 'failed' AND coalesce(u.result, '') <> 'success')
       -- (systemd before 232 says no result: "Unit x entered failed state.")
       OR u.action = 'start_limit_hit')
UNION ALL
SELECT 'server_' || e.kind, e.source_id, e.line_no, e.ts, e.host, e.unit, NULL, NULL, e.pid, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, CAST(e.exit_code AS VARCHAR), NULL, NULL, e.message,
       NULL, CAST(e.detail AS VARCHAR), e.phase, e.engine, e.ts_inferred, NULL
FROM server_events e
WHERE e.ts IS NOT NULL
  AND ($since IS NULL OR e.ts >= $since) AND ($until IS NULL OR e.ts <= $until)
  AND (e.kind IN ('scheduler_killed', 'scheduler_dead', 'subprocess_crashed', 'cuda_oom', 'watchdog',
                  'initialization_failed', 'sigquit')
       -- a server process's own traceback (<Who> hit an exception, Exception in <Who>:), not a
       -- request handler's (ASGI): the server stops on it
       OR (e.kind = 'exception' AND (e.message ILIKE '%out of memory%'
           OR (json_extract_string(e.detail, '$.who') IS NOT NULL
               AND json_extract_string(e.detail, '$.who') NOT ILIKE '%ASGI%'))))
UNION ALL
-- a traceback no server process claims (a bare one, before serving: the launcher's own, such as
-- a missing model file's OSError): the error of a start that failed (start_failures keeps it then)
SELECT 'server_bare_exception', e.source_id, e.line_no, e.ts, e.host, e.unit, NULL, NULL, e.pid,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST(e.exit_code AS VARCHAR), NULL, NULL, e.message,
       NULL, CAST(e.detail AS VARCHAR), e.phase, e.engine, e.ts_inferred, NULL
FROM server_events e
WHERE e.ts IS NOT NULL
  AND ($since IS NULL OR e.ts >= $since) AND ($until IS NULL OR e.ts <= $until)
  AND e.kind = 'exception' AND coalesce(e.phase, '') <> 'runtime'
  AND json_extract_string(e.detail, '$.who') IS NULL AND e.message NOT ILIKE '%out of memory%'
UNION ALL
SELECT 'cuda_oom', c.source_id, c.line_no, c.ts, c.host, c.unit, NULL, NULL, c.pid, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, c.message,
       NULL, NULL, NULL, c.engine, c.ts_inferred, NULL
FROM cuda_ooms c
WHERE c.ts IS NOT NULL
  AND ($since IS NULL OR c.ts >= $since) AND ($until IS NULL OR c.ts <= $until)
UNION ALL
-- Kubernetes: a container's termination (its Pod status; not a clean exit), the runtime's exit
-- (not 0, not SIGTERM's 143), an eviction, a probe kill, the runtime's and kubelet's OOM words
SELECT 'k8s_' || e.kind, e.source_id, e.line_no, e.ts, e.host, e.unit, 'kubelet', NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, e.reason, NULL, CAST(e.exit_code AS VARCHAR), e.probe, e.count, e.message,
       NULL, NULL, NULL, NULL, NULL, NULL
FROM k8s_events e
WHERE e.ts IS NOT NULL
  AND ($since IS NULL OR e.ts >= $since) AND ($until IS NULL OR e.ts <= $until)
  AND ((e.kind = 'terminated' AND NOT (e.reason = 'Completed' AND coalesce(e.exit_code, 0) = 0))
       OR (e.kind = 'task_exit' AND coalesce(e.exit_code, 0) NOT IN (0, 143))
       OR e.kind IN ('evicted', 'probe_kill', 'task_oom', 'system_oom', 'oom_killing'))
ORDER BY ts, source_id, line_no
