-- pid_units: the unit other sources put a process in, for the pids a server's log names
-- (postmortem/analysis/server_units.py): a memory cgroup OOM record lists the cgroup's own
-- tasks; any OOM kill names its victim's cgroup; a structured journal names the unit of each
-- process that wrote to it; a server's own lines in another source (a journal split in two
-- files: the part that saw the unit start) name the unit of the process that wrote them, as
-- of the last of them, with the host's first boot after it (booted: a run going on past it is
-- another process, whose pid the new boot reused).
-- Parameters: $pids.
SELECT k.host, t.pid, k.unit, 'task table' AS how, k.ts, NULL::TIMESTAMPTZ AS booted
FROM oom_tasks t JOIN oom_kills k ON t.source_id = k.source_id AND t.oom_id = k.oom_id
WHERE k.unit IS NOT NULL AND k.scope = 'memcg' AND list_contains($pids, t.pid)
UNION ALL
SELECT host, victim_pid, unit, 'OOM kill', ts, NULL
FROM oom_kills
WHERE unit IS NOT NULL AND list_contains($pids, victim_pid)
UNION ALL
SELECT host, pid, unit, 'journal', min(ts), NULL
FROM journal_entries
WHERE unit IS NOT NULL AND list_contains($pids, pid)
GROUP BY host, pid, unit
UNION ALL
SELECT l.host, l.pid, l.unit, 'server lines', l.ts,
       least((SELECT min(k.ts) FROM kernel_messages AS k
              WHERE k.message LIKE 'Linux version %' AND k.ts > l.ts
                AND (k.host IS NULL OR l.host IS NULL OR k.host = l.host)),
             (SELECT min(b.boot_ts) FROM boots AS b
              WHERE b.boot_ts > l.ts AND (b.host IS NULL OR l.host IS NULL OR b.host = l.host)))
FROM (
    SELECT host, pid, unit, max(ts) AS ts
    FROM (
        SELECT host, pid, unit, ts FROM server_events WHERE unit IS NOT NULL AND list_contains($pids, pid)
        UNION ALL
        SELECT host, pid, unit, ts FROM server_stats WHERE unit IS NOT NULL AND list_contains($pids, pid)
    )
    GROUP BY host, pid, unit
) AS l
