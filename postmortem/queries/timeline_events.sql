-- Everything that happened to the services in a window, merged in time order.
-- Parameters: $host, $from, $to, $failure_kinds (postmortem.analysis.timeline.FAILURE_KINDS).
SELECT ts, 'systemd' AS origin, unit, action AS kind, message, source_id, line_no
FROM unit_events
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
  AND unit NOT LIKE '%.slice'
UNION ALL
SELECT ts, engine, unit, kind, message, source_id, line_no
FROM server_events
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
  AND kind NOT IN ('retract')
  -- every rank logs the same milestones: TP0's stand for all; a failure is shown from any rank
  -- (an OOM on TP3 is often the only one)
  AND (ranks IS NULL OR ranks = '' OR ranks LIKE '%TP0%' OR ranks NOT LIKE '%TP%'
       OR list_contains($failure_kinds, kind))
UNION ALL
SELECT ts, CASE WHEN killer IN ('systemd-oomd', 'earlyoom') THEN killer ELSE 'kernel' END,
       unit, 'oom_kill', message, source_id, line_no
FROM oom_kills
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT ts, 'gpu', NULL, kind, message, source_id, line_no
FROM gpu_events
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT ts, 'kernel', NULL, 'xid',
       'Xid ' || xid || coalesce(' on GPU ' || bus_id, '') || coalesce(': ' || message, ''),
       source_id, line_no
FROM gpu_xids
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
-- the kernel's hung-task watchdog: a process stuck in D state (a GPU or NCCL hang, a dying
-- driver) — "INFO: task python3:1234 blocked for more than 122 seconds."
SELECT ts, 'kernel', NULL, 'hung_task', trim(message), source_id, line_no
FROM kernel_messages
WHERE message LIKE '%task %:% blocked for more than % seconds%'
  AND ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
-- an operator's systemctl, docker or podman commands (sudo's journal lines)
SELECT ts, 'operator', NULL, 'command',
       trim(regexp_extract(message, 'USER=(\S+) ; COMMAND=(.*)$', 2)) AS message, source_id, line_no
FROM journal_entries
WHERE ident = 'sudo'
  AND regexp_matches(message, 'COMMAND=\S*\b(systemctl|kill|pkill|killall|nvidia-smi|docker|podman)\b')
  AND ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
-- Kubernetes: what kubelet, the container runtime, the Events and the Pod's status said
SELECT ts, 'kubernetes', unit, 'k8s_' || kind,
       coalesce(reason || CASE WHEN count > 1 THEN ' (x' || CAST(count AS VARCHAR) || ')' ELSE '' END || ': ', '')
       || message,
       source_id, line_no
FROM k8s_events
WHERE ts >= $from AND ts <= $to AND ($host IS NULL OR host IS NULL OR host = $host)
  AND kind NOT IN ('other', 'container_created')
ORDER BY ts, source_id, line_no
