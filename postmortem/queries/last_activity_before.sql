-- The last line any server table holds for a unit before a time (its last sign of life), at or
-- after $since (NULL: however long before; a bound lets the scan skip the store's older rows).
-- The server's dying words (its watchdog, a traceback, SIGQUIT, a dead scheduler, a dead engine,
-- uvicorn shutting down) are not life: a server hung for minutes before its watchdog ended it was
-- silent all that time, and vLLM's API server shuts down in the second its engine died.
-- Parameters: $unit (NULL: the rows of $source, a server
-- log nothing ties to a unit), $source, $before, $since, $host.
SELECT max(ts) AS ts FROM (
    SELECT max(ts) AS ts FROM server_stats WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before AND ($since IS NULL OR ts >= $since) AND ($host IS NULL OR host IS NULL OR host = $host)
    UNION ALL SELECT max(ts) FROM server_events WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before AND ($since IS NULL OR ts >= $since) AND ($host IS NULL OR host IS NULL OR host = $host)
        AND kind NOT IN ('watchdog', 'exception', 'sigquit', 'sigterm', 'scheduler_killed', 'scheduler_dead',
                         'subprocess_crashed', 'cuda_oom', 'forced_exit', 'graceful_exit', 'health_check_failed',
                         'kill_process_tree', 'initialization_failed', 'engine_dead', 'uvicorn_shutdown',
                         'uvicorn_finished')
    UNION ALL SELECT max(ts) FROM http_requests WHERE (unit = $unit OR ($unit IS NULL AND unit IS NULL AND source_id = $source)) AND ts <= $before AND ($since IS NULL OR ts >= $since) AND ($host IS NULL OR host IS NULL OR host = $host)
) t
