-- anchor_monotonic: give boot-relative kernel rows their wall-clock time after the fact.
--
-- A dmesg or /dev/kmsg file ingested before the journal that knows its boot keeps ts NULL and
-- monotonic_s set (kernel_messages, oom_kills, gpu_xids). Once boots has rows, this sets
--   ts = boot_ts + monotonic_s,  ts_inferred = 'boot'
-- for those rows, choosing the boot as follows:
--   * a kernel_messages row that carries a boot_id takes that boot (no other);
--   * otherwise one boot per (source, host), so that every row of a file agrees: the latest
--     boot of the same host (of the only host known, when the rows name none) that started no
--     later than the file's modification time minus the largest monotonic stamp pending in that
--     source -- a capture cannot predate its own records -- or simply the latest boot of the
--     host when the file has no modification time (stdin).
-- A boot's time is the median over its boots rows, as Store.boot_anchors computes it. A source
-- no boot row anchors may be anchored by the same kernel lines in another, dated source, or by
-- the killed server's report of its OOM-killed child's pid (below).
-- Rows that already have a ts (printed wall time, an earlier anchor) are never changed.
-- No parameters; idempotent. The selecting subquery orders its candidates (ORDER BY … LIMIT 1).

CREATE OR REPLACE TEMP TABLE anchor_boot_times AS
SELECT boot_id, any_value(host) AS host, median(boot_ts)::TIMESTAMPTZ AS boot_ts
FROM boots
GROUP BY boot_id;

CREATE OR REPLACE TEMP TABLE anchor_source_boots AS
WITH pending AS (
    SELECT source_id, host, max(monotonic_s) AS max_s
    FROM (
        SELECT source_id, host, monotonic_s FROM kernel_messages
        WHERE ts IS NULL AND monotonic_s IS NOT NULL AND boot_id IS NULL
        UNION ALL
        SELECT source_id, host, monotonic_s FROM oom_kills
        WHERE ts IS NULL AND monotonic_s IS NOT NULL
        UNION ALL
        SELECT source_id, host, monotonic_s FROM gpu_xids
        WHERE ts IS NULL AND monotonic_s IS NOT NULL
    )
    GROUP BY source_id, host
)
SELECT
    p.source_id,
    p.host,
    (
        SELECT b.boot_ts
        FROM anchor_boot_times AS b
        WHERE (b.host IS NOT DISTINCT FROM p.host
               OR (p.host IS NULL AND (SELECT count(DISTINCT host) FROM anchor_boot_times) = 1))
          AND (s.file_mtime IS NULL
               OR b.boot_ts + to_microseconds(CAST(round(p.max_s * 1000000) AS BIGINT)) <= s.file_mtime)
        ORDER BY b.boot_ts DESC
        LIMIT 1
    ) AS boot_ts
FROM pending AS p
JOIN sources AS s ON s.source_id = p.source_id;

-- A boot's start from witnesses: the median of (a witness's wall-clock time − the seconds since
-- boot it stands for); stamps in whole seconds (short-iso, server loggers) are truncated, half a second
-- early on average, so then the median is moved half a second on.
CREATE OR REPLACE TEMP MACRO anchor_boot_of(wall, mono) AS
    make_timestamptz(CAST(
        median(epoch_us(wall) - CAST(round(mono * 1000000) AS BIGINT))
        + CASE WHEN bool_and(epoch_us(wall) % 1000000 = 0) THEN 500000 ELSE 0 END
        AS BIGINT));

-- Whether a boot at boot_ts would put a source's pending records after the file was written
-- (a capture cannot predate its own records).
CREATE OR REPLACE TEMP MACRO anchor_predates_capture(sid, boot_ts) AS EXISTS (
    SELECT 1 FROM sources AS s
    WHERE s.source_id = sid AND s.file_mtime IS NOT NULL
      AND boot_ts + to_microseconds(CAST(round(
              (SELECT max(k.monotonic_s) FROM kernel_messages AS k
               WHERE k.source_id = sid AND k.ts IS NULL) * 1000000) AS BIGINT)) > s.file_mtime
);

-- A source no boot row anchors: the same kernel line with a wall-clock time in another source
-- (a journal in a short mode, which has no boot rows, holding the same OOM or Xid lines) gives
-- its boot as that time minus the line's seconds since boot (the median over the pairs of
-- OOM-killer and Xid lines printed once in each source).
UPDATE anchor_source_boots AS a
SET boot_ts = m.boot_ts
FROM (
    -- pairs of a line printed once in each source (a header line repeated by two records is
    -- no witness)
    WITH pending AS (
        SELECT source_id, host, message, any_value(monotonic_s) AS monotonic_s
        FROM kernel_messages
        WHERE ts IS NULL AND monotonic_s IS NOT NULL AND boot_id IS NULL
          AND (message LIKE '%invoked oom-killer%' OR message LIKE '%Killed process%'
               OR message LIKE 'oom-kill:%' OR message LIKE '%NVRM: Xid%')
        GROUP BY source_id, host, message
        HAVING count(*) = 1
    ),
    dated AS (
        SELECT source_id, host, message, any_value(ts) AS ts
        FROM kernel_messages
        WHERE ts IS NOT NULL
        GROUP BY source_id, host, message
        HAVING count(*) = 1
    )
    SELECT k.source_id, k.host,
           anchor_boot_of(r.ts, k.monotonic_s) AS boot_ts
    FROM pending AS k
    JOIN dated AS r
      ON r.message = k.message AND r.source_id <> k.source_id
     AND (k.host IS NULL OR r.host IS NULL OR k.host = r.host)
    GROUP BY k.source_id, k.host
) AS m
WHERE a.boot_ts IS NULL AND a.source_id = m.source_id AND a.host IS NOT DISTINCT FROM m.host;

-- A source still without a boot (a previous boot's dmesg, no journal of that boot): an OOM kill
-- in it whose victim the killed server reported by pid — a server's "Subprocess scheduler_0
-- (pid=48305) crashed with exit code -9" (0.5.10 on), a V0 vLLM's "Worker VllmWorkerProcess pid
-- 48305 died, exit code: -9", logged the moment the child died — gives its boot as that line's
-- time minus the kill's seconds since boot (the median over such kills).
-- The pid, the unit and the host must agree, and the capture cannot predate its own records.
UPDATE anchor_source_boots AS a
SET boot_ts = m.boot_ts
FROM (
    SELECT o.source_id, o.host,
           anchor_boot_of(e.ts, o.monotonic_s) AS boot_ts  -- servers stamp whole seconds
    FROM oom_kills AS o
    JOIN server_events AS e
      ON e.kind = 'scheduler_killed' AND e.ts IS NOT NULL
     AND TRY_CAST(json_extract_string(e.detail, '$.subprocess_pid') AS INTEGER) = o.victim_pid
     AND (o.unit IS NULL OR e.unit IS NULL OR o.unit = e.unit)
     AND (o.host IS NULL OR e.host IS NULL OR o.host = e.host)
    WHERE o.ts IS NULL AND o.monotonic_s IS NOT NULL AND o.victim_pid IS NOT NULL
    GROUP BY o.source_id, o.host
) AS m
WHERE a.boot_ts IS NULL AND a.source_id = m.source_id AND a.host IS NOT DISTINCT FROM m.host
  AND NOT anchor_predates_capture(a.source_id, m.boot_ts);

-- A source still without a boot: its one OOM kill, of a vLLM process its server reports dead by
-- name only — V1's "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
-- (0.10.1 on; "Engine core process … died unexpectedly." 0.20 on) or "Worker proc VllmWorker-0
-- died unexpectedly, shutting down executor." (0.8.5 on), logged within a second of the death —
-- gives its boot as that line's time minus the kill's seconds since boot. The kernel's victim
-- and the line name the same process: the engine core's process title (VLLM::EngineCore, 0.10.1
-- on) with an engine core's death, a worker's (VLLM::Worker…) with a worker's; a victim without
-- a title (python3, before 0.10.1) when the line's own log shows the victim's pid (a worker's
-- lines carry "(VllmWorker rank=0 pid=N)") or its record's cgroup names the unit whose server
-- wrote the line. The line must be the only such of the host (a second server dying the same
-- night leaves the kill undated). The capture cannot predate its own records.
UPDATE anchor_source_boots AS a
SET boot_ts = m.boot_ts
FROM (
    WITH kills AS (
        SELECT source_id, host, any_value(monotonic_s) AS monotonic_s,
               coalesce(any_value(victim_comm), '') AS comm, any_value(unit) AS unit,
               any_value(victim_pid) AS victim_pid
        FROM oom_kills
        WHERE ts IS NULL AND monotonic_s IS NOT NULL
        GROUP BY source_id, host
        HAVING count(DISTINCT oom_id) = 1
    ),
    deaths AS (
        SELECT source_id, host, ts, unit, contains(message, 'Engine core proc') AS engine_core
        FROM server_events
        WHERE engine = 'vllm' AND kind IN ('scheduler_dead', 'scheduler_killed') AND ts IS NOT NULL
          AND json_extract_string(detail, '$.subprocess_pid') IS NULL
          AND regexp_matches(message, '(Engine core proc(ess)?|Worker proc) \S+ died unexpectedly')
    )
    SELECT k.source_id, k.host, anchor_boot_of(d.ts, k.monotonic_s) AS boot_ts
    FROM kills AS k
    JOIN deaths AS d
      ON (k.host IS NULL OR d.host IS NULL OR k.host = d.host)
     AND CASE WHEN k.comm LIKE 'VLLM::EngineCor%' OR k.comm LIKE 'VLLM::DPEngine%' THEN d.engine_core
              WHEN k.comm LIKE 'VLLM::Worker%' THEN NOT d.engine_core
              ELSE (k.unit IS NOT NULL AND d.unit = k.unit)
                   OR EXISTS (SELECT 1 FROM server_events AS w
                              WHERE w.source_id = d.source_id
                                AND (w.pid = k.victim_pid OR TRY_CAST(json_extract_string(
                                         w.detail, '$.process_pid') AS INTEGER) = k.victim_pid)) END
    GROUP BY k.source_id, k.host
    HAVING count(*) = 1
) AS m
WHERE a.boot_ts IS NULL AND a.source_id = m.source_id AND a.host IS NOT DISTINCT FROM m.host
  AND NOT anchor_predates_capture(a.source_id, m.boot_ts);

-- A source still without a boot (dmesg in seconds since boot, the journal as a text file): an
-- OOM kill in it of a unit (its record names the unit's cgroup) and systemd's own lines about
-- that unit being OOM-killed ("A process of this unit has been killed by the OOM killer.",
-- "Main process exited, code=killed"), which systemd logs within about a second of the kill.
-- Each (kill, systemd line) pair of the same unit and host proposes a boot time; the one most
-- kills agree on (within 2 s) is the boot, its earliest proposal (systemd's line follows the
-- kill) taken. The capture cannot predate its own records.
UPDATE anchor_source_boots AS a
SET boot_ts = m.boot_ts
FROM (
    WITH pairs AS (
        SELECT o.source_id, o.host, o.oom_id,
               epoch_us(e.ts) - CAST(round(o.monotonic_s * 1000000) AS BIGINT) AS boot_us
        FROM oom_kills AS o
        JOIN unit_events AS e
          ON e.unit = o.unit AND e.ts IS NOT NULL
         AND (e.action = 'oom_killed' OR (e.action = 'main_exited' AND e.code IN ('killed', 'dumped')))
         AND (o.host IS NULL OR e.host IS NULL OR o.host = e.host)
        WHERE o.ts IS NULL AND o.monotonic_s IS NOT NULL AND o.unit IS NOT NULL
          AND o.unit NOT LIKE '%.slice'
    ),
    buckets AS (
        SELECT source_id, host, boot_us // 2000000 AS bucket,
               count(DISTINCT oom_id) AS kills, min(boot_us) AS boot_us
        FROM pairs
        GROUP BY source_id, host, boot_us // 2000000
    )
    SELECT source_id, host, make_timestamptz(arg_max(boot_us, kills * 1e12 - boot_us / 1e6)) AS boot_ts
    FROM buckets
    GROUP BY source_id, host
) AS m
WHERE a.boot_ts IS NULL AND a.source_id = m.source_id AND a.host IS NOT DISTINCT FROM m.host
  AND NOT anchor_predates_capture(a.source_id, m.boot_ts);

-- A source still without a boot whose one OOM kill names no cgroup (kernels before 4.19 print
-- none for a host-wide OOM, EL7's 3.10): systemd's line about a server unit's main process
-- killed by SIGKILL (or "killed by the OOM killer") witnesses it when it is the only such line
-- of the host, the unit's server logged up to 2 minutes before it (it was serving, not
-- starting), and systemd was not stopping the unit, nor a unit it names by its Description
-- only (a stop timeout's SIGKILL is no OOM kill), and the kernel's victim is a server's
-- process.
-- Server lines have their unit once a log named after its unit has taken it: this rule finds
-- its witness on the pass after that (analysis runs this script again then). The capture
-- cannot predate its own records, nor hold a kill from before a boot it followed.
UPDATE anchor_source_boots AS a
SET boot_ts = m.boot_ts
FROM (
    WITH kills AS (
        SELECT source_id, host, any_value(monotonic_s) AS monotonic_s
        FROM oom_kills
        WHERE ts IS NULL AND monotonic_s IS NOT NULL
        GROUP BY source_id, host
        HAVING count(*) = 1 AND bool_and(unit IS NULL)
           -- the victim is a server's process (an engine's 'name::role' title, python, torch's
           -- main thread): a postgres or sshd the kernel chose says nothing of a unit's SIGKILL
           AND bool_and(regexp_matches(lower(coalesce(victim_comm, '')),
                        '::|^(vllm|python|pt_main_thread|tritonserver|text-generation)'))
    ),
    witness AS (
        SELECT e.host, e.ts
        FROM unit_events AS e
        WHERE e.ts IS NOT NULL
          AND (e.action = 'oom_killed'
               OR (e.action = 'main_exited' AND e.code = 'killed' AND e.status LIKE '9/%'))
          AND (EXISTS (SELECT 1 FROM server_stats AS v WHERE v.unit = e.unit
                       AND v.ts BETWEEN e.ts - INTERVAL 120 SECOND AND e.ts)
               OR EXISTS (SELECT 1 FROM http_requests AS v WHERE v.unit = e.unit
                          AND v.ts BETWEEN e.ts - INTERVAL 120 SECOND AND e.ts))
          -- (systemd < 240 names a unit stopping by its Description, which may be this unit's);
          -- a stop still pending at the kill, however long before (TimeoutStopSec=15min): no
          -- 'Stopped', start or failure of that name between them
          AND NOT EXISTS (SELECT 1 FROM unit_events AS x
                          WHERE (x.unit = e.unit OR x.unit = x.description)
                            AND (x.host IS NULL OR e.host IS NULL OR x.host = e.host)
                            AND x.action = 'stopping'
                            AND x.ts BETWEEN e.ts - INTERVAL 6 HOUR AND e.ts
                            AND NOT EXISTS (
                                SELECT 1 FROM unit_events AS y
                                WHERE y.unit = x.unit
                                  -- after the stop, before the kill: in a journal stamped in
                                  -- whole seconds, "Stopped" shares the stop's second (then
                                  -- the line order of one file says which came first)
                                  AND (y.ts > x.ts OR (y.ts = x.ts AND y.source_id = x.source_id
                                                       AND y.line_no > x.line_no))
                                  AND (y.ts < e.ts OR (y.ts = e.ts AND y.source_id = e.source_id
                                                       AND y.line_no < e.line_no))
                                  AND (y.host IS NULL OR e.host IS NULL OR y.host = e.host)
                                  AND y.action IN ('stopped', 'starting', 'started', 'failed',
                                                   'start_failed')))
    )
    SELECT k.source_id, k.host,
           -- (the earliest line of the one 2 s bucket: systemd's line follows the kill)
           make_timestamptz(min(epoch_us(w.ts) - CAST(round(k.monotonic_s * 1000000) AS BIGINT))) AS boot_ts
    FROM kills AS k
    JOIN witness AS w ON (k.host = w.host
          -- a capture or line naming no host matches any only in a store of one host: with two,
          -- another host's line would date a raw dmesg of either
          OR ((k.host IS NULL OR w.host IS NULL)
              AND (SELECT count(DISTINCT host) FROM unit_events WHERE host IS NOT NULL) <= 1))
      -- the host booted after the line and before the capture was written (or at a capture
      -- time not known): the capture holds a later boot's kernel ring, not the line's
      AND NOT EXISTS (
          SELECT 1 FROM sources AS s,
              (SELECT host, ts FROM kernel_messages WHERE message LIKE 'Linux version %'
               UNION ALL SELECT host, boot_ts FROM boots) AS b
          WHERE s.source_id = k.source_id AND b.ts > w.ts
            AND (s.file_mtime IS NULL OR b.ts <= s.file_mtime)
            AND (b.host IS NULL OR w.host IS NULL OR b.host = w.host))
    GROUP BY k.source_id, k.host
    HAVING count(DISTINCT epoch_us(w.ts) // 2000000) = 1
) AS m
WHERE a.boot_ts IS NULL AND a.source_id = m.source_id AND a.host IS NOT DISTINCT FROM m.host
  AND NOT anchor_predates_capture(a.source_id, m.boot_ts);

UPDATE kernel_messages AS k
SET ts = b.boot_ts + to_microseconds(CAST(round(k.monotonic_s * 1000000) AS BIGINT)),
    ts_inferred = 'boot'
FROM anchor_boot_times AS b
WHERE k.ts IS NULL AND k.monotonic_s IS NOT NULL AND k.boot_id = b.boot_id;

UPDATE kernel_messages AS k
SET ts = a.boot_ts + to_microseconds(CAST(round(k.monotonic_s * 1000000) AS BIGINT)),
    ts_inferred = 'boot'
FROM anchor_source_boots AS a
WHERE k.ts IS NULL AND k.monotonic_s IS NOT NULL AND k.boot_id IS NULL
  AND k.source_id = a.source_id AND k.host IS NOT DISTINCT FROM a.host AND a.boot_ts IS NOT NULL;

UPDATE oom_kills AS o
SET ts = a.boot_ts + to_microseconds(CAST(round(o.monotonic_s * 1000000) AS BIGINT)),
    ts_inferred = 'boot'
FROM anchor_source_boots AS a
WHERE o.ts IS NULL AND o.monotonic_s IS NOT NULL
  AND o.source_id = a.source_id AND o.host IS NOT DISTINCT FROM a.host AND a.boot_ts IS NOT NULL;

UPDATE gpu_xids AS x
SET ts = a.boot_ts + to_microseconds(CAST(round(x.monotonic_s * 1000000) AS BIGINT)),
    ts_inferred = 'boot'
FROM anchor_source_boots AS a
WHERE x.ts IS NULL AND x.monotonic_s IS NOT NULL
  AND x.source_id = a.source_id AND x.host IS NOT DISTINCT FROM a.host AND a.boot_ts IS NOT NULL;

-- a source whose rows all have a time now: its span, and no more "no boot time known" note
UPDATE sources AS s
SET first_ts = k.first_ts, last_ts = k.last_ts,
    notes = nullif(trim(regexp_replace(coalesce(s.notes, ''),
                   'boot-relative kernel stamps and no boot time known[^;]*(; )?', ''), '; '), '')
FROM (
    SELECT source_id, min(ts) AS first_ts, max(ts) AS last_ts, bool_and(ts IS NOT NULL) AS all_dated
    FROM kernel_messages
    GROUP BY source_id
) AS k
WHERE s.source_id = k.source_id AND s.first_ts IS NULL AND k.all_dated
  AND s.source_id IN (SELECT source_id FROM anchor_source_boots);

DROP TABLE anchor_source_boots;
DROP TABLE anchor_boot_times;
DROP MACRO anchor_predates_capture;
