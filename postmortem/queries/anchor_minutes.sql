-- anchor_minutes: give dmesg -e/-H rows their seconds after the fact.
--
-- Those stamps print a line's local minute when it changes and the seconds since the line
-- before otherwise; the parser dates a minute's first line at the minute's start and the rest
-- by the summed deltas (ts_inferred = 'minute'), so every row of a minute is early by the same
-- amount u, under 60 s, and u + (the minute's last row - its start) < 60 s.
-- systemd logs its lines about an OOM kill ("A process of this unit has been killed by the OOM
-- killer.", "Main process exited, code=killed") within about a second of it: for each minute of
-- a source holding an OOM kill of a unit, the earliest such line of the same unit and host in
-- that minute (or 2 s after it) gives u (kept within the room the minute leaves), and the
-- minute's rows move by it, ts_inferred = 'witness'. A kill that names no unit (a host OOM on
-- an old kernel) takes such lines only when a single unit logged them in that span. A server's
-- own report of the death witnesses it as well: the victim's pid (a server's "Subprocess
-- scheduler_0 (pid=…) crashed", a V0 vLLM's "Worker VllmWorkerProcess pid … died"), or V1
-- vLLM's dead engine core or worker by name (the rule of anchor_monotonic.sql: the victim's
-- process title, or without one its pid in the line's log or the unit both name). So does the
-- kill's own line in another source (the journal's copy of "Killed process …").
-- Minutes no such line dates stay as they are ('minute'). No parameters; idempotent.

-- the minutes that hold a kill, and how much room each leaves (its first and last row's offset)
CREATE OR REPLACE TEMP TABLE anchor_minute_kills AS
SELECT source_id, line_no, host, unit, ts, date_trunc('minute', ts) AS minute, victim_pid,
       coalesce(victim_comm, '') AS comm
FROM oom_kills
WHERE ts_inferred = 'minute' AND ts IS NOT NULL AND coalesce(unit, '') NOT LIKE '%.slice';

CREATE OR REPLACE TEMP TABLE anchor_minute_room AS
SELECT source_id, host, date_trunc('minute', ts) AS minute,
       epoch_us(min(ts)) - epoch_us(date_trunc('minute', ts)) AS first_us,
       epoch_us(max(ts)) - epoch_us(date_trunc('minute', ts)) AS used_us
FROM kernel_messages
WHERE ts_inferred = 'minute'
GROUP BY source_id, host, date_trunc('minute', ts);

-- each minute's move and what its rows become: 'witness' (systemd's second) or still 'minute'
CREATE OR REPLACE TEMP TABLE anchor_minute_shifts AS
WITH witnesses AS (
    SELECT k.source_id, k.host, k.minute, k.ts AS kill_ts, e.ts, e.unit
    FROM anchor_minute_kills AS k
    JOIN unit_events AS e
      ON e.ts IS NOT NULL
     AND e.ts >= k.minute AND e.ts <= k.minute + INTERVAL 62 SECOND
     AND (k.host IS NULL OR e.host IS NULL OR k.host = e.host)
     AND (e.unit = k.unit OR k.unit IS NULL)
     AND (e.action = 'oom_killed' OR (e.action = 'main_exited' AND e.code IN ('killed', 'dumped')))
    UNION ALL
    -- the kill's own line as another source dated it (the journal's kernel lines, in whole
    -- seconds or finer: a host OOM on cgroup v1 leaves systemd no kill line to witness)
    SELECT k.source_id, k.host, k.minute, k.ts, c.ts, k.unit
    FROM anchor_minute_kills AS k
    JOIN kernel_messages AS own ON own.source_id = k.source_id AND own.line_no = k.line_no
    JOIN kernel_messages AS c
      ON c.message = own.message AND c.source_id <> k.source_id AND c.ts IS NOT NULL
     AND c.ts_inferred IS DISTINCT FROM 'minute'
     AND c.ts >= k.minute AND c.ts <= k.minute + INTERVAL 62 SECOND
     AND (k.host IS NULL OR c.host IS NULL OR k.host = c.host)
    UNION ALL
    SELECT k.source_id, k.host, k.minute, k.ts, e.ts, coalesce(e.unit, k.unit)
    FROM anchor_minute_kills AS k
    JOIN server_events AS e
      ON e.kind IN ('scheduler_killed', 'scheduler_dead') AND e.ts IS NOT NULL
     AND e.ts >= k.minute AND e.ts <= k.minute + INTERVAL 62 SECOND
     AND (k.host IS NULL OR e.host IS NULL OR k.host = e.host)
     AND (k.unit IS NULL OR e.unit IS NULL OR e.unit = k.unit)
     AND (TRY_CAST(json_extract_string(e.detail, '$.subprocess_pid') AS INTEGER) = k.victim_pid
          OR (e.engine = 'vllm' AND json_extract_string(e.detail, '$.subprocess_pid') IS NULL
              AND regexp_matches(e.message, '(Engine core proc(ess)?|Worker proc) \S+ died unexpectedly')
              AND CASE WHEN k.comm LIKE 'VLLM::EngineCor%' OR k.comm LIKE 'VLLM::DPEngine%'
                       THEN contains(e.message, 'Engine core proc')
                       WHEN k.comm LIKE 'VLLM::Worker%' THEN NOT contains(e.message, 'Engine core proc')
                       ELSE (k.unit IS NOT NULL AND e.unit = k.unit)
                            OR EXISTS (SELECT 1 FROM server_events AS w
                                       WHERE w.source_id = e.source_id
                                         AND (w.pid = k.victim_pid OR TRY_CAST(json_extract_string(
                                                  w.detail, '$.process_pid') AS INTEGER) = k.victim_pid)) END))
),
witnessed AS (
    -- (the minute's first kill line to the earliest witness: memory.oom.group's later kill
    -- lines, microseconds on, stay after it, and a kill so dated keeps the witness's second)
    SELECT source_id, host, minute, min(epoch_us(ts)) - min(epoch_us(kill_ts)) AS shift_us
    FROM witnesses
    GROUP BY source_id, host, minute
    HAVING count(DISTINCT unit) <= 1
),
-- A minute no systemd line dates: the killed unit's server was still alive at its last line in
-- that minute after the kill's row (before any start of the unit again), so the kill was no
-- earlier: the minute's rows move up to that line (a lower bound; they stay 'minute', and once
-- moved no line is after the kill, so a second run changes nothing).
alive AS (
    SELECT unit, host, ts FROM server_stats WHERE unit IS NOT NULL AND ts IS NOT NULL
    UNION ALL
    SELECT unit, host, ts FROM server_events WHERE unit IS NOT NULL AND ts IS NOT NULL
),
restarts AS (
    SELECT unit, host, ts FROM server_configs WHERE unit IS NOT NULL AND ts IS NOT NULL
    UNION ALL
    SELECT unit, host, ts FROM unit_events
    WHERE unit IS NOT NULL AND ts IS NOT NULL AND action IN ('starting', 'started')
),
bounded AS (
    SELECT k.source_id, k.host, k.minute, max(epoch_us(l.ts) - epoch_us(k.ts)) AS shift_us
    FROM anchor_minute_kills AS k
    JOIN alive AS l
      ON l.unit = k.unit AND l.ts > k.ts AND l.ts < k.minute + INTERVAL 60 SECOND
     AND (k.host IS NULL OR l.host IS NULL OR k.host = l.host)
    -- the killed run's lines, not those of a server started again after it
    WHERE NOT EXISTS (
        SELECT 1 FROM restarts AS r
        WHERE r.unit = k.unit AND (k.host IS NULL OR r.host IS NULL OR r.host = k.host)
          AND r.ts > k.ts AND r.ts <= l.ts
    )
      AND NOT EXISTS (
        SELECT 1 FROM witnessed AS w
        WHERE w.source_id = k.source_id AND w.host IS NOT DISTINCT FROM k.host AND w.minute = k.minute
    )
    GROUP BY k.source_id, k.host, k.minute
)
-- (a minute moved up to its server's last line before may move back, never out of its minute)
SELECT w.source_id, w.host, w.minute, 'witness' AS mark,
       greatest(-coalesce(r.first_us, 0), least(w.shift_us, 59999999 - coalesce(r.used_us, 0))) AS shift_us
FROM witnessed AS w
LEFT JOIN anchor_minute_room AS r
  ON r.source_id = w.source_id AND r.host IS NOT DISTINCT FROM w.host AND r.minute = w.minute
UNION ALL
SELECT b.source_id, b.host, b.minute, 'minute',
       greatest(0, least(b.shift_us, 59999999 - coalesce(r.used_us, 0)))
FROM bounded AS b
LEFT JOIN anchor_minute_room AS r
  ON r.source_id = b.source_id AND r.host IS NOT DISTINCT FROM b.host AND r.minute = b.minute;

UPDATE kernel_messages AS k
SET ts = k.ts + to_microseconds(a.shift_us), ts_inferred = a.mark
FROM anchor_minute_shifts AS a
WHERE k.ts_inferred = 'minute' AND k.source_id = a.source_id AND k.host IS NOT DISTINCT FROM a.host
  AND date_trunc('minute', k.ts) = a.minute;

UPDATE oom_kills AS o
SET ts = o.ts + to_microseconds(a.shift_us), ts_inferred = a.mark
FROM anchor_minute_shifts AS a
WHERE o.ts_inferred = 'minute' AND o.source_id = a.source_id AND o.host IS NOT DISTINCT FROM a.host
  AND date_trunc('minute', o.ts) = a.minute;

UPDATE gpu_xids AS x
SET ts = x.ts + to_microseconds(a.shift_us), ts_inferred = a.mark
FROM anchor_minute_shifts AS a
WHERE x.ts_inferred = 'minute' AND x.source_id = a.source_id AND x.host IS NOT DISTINCT FROM a.host
  AND date_trunc('minute', x.ts) = a.minute;

DROP TABLE anchor_minute_shifts;
DROP TABLE anchor_minute_room;
DROP TABLE anchor_minute_kills;

-- the spans of the sources dated so
UPDATE sources AS s
SET first_ts = k.first_ts, last_ts = k.last_ts
FROM (
    SELECT source_id, min(ts) AS first_ts, max(ts) AS last_ts
    FROM kernel_messages
    WHERE source_id IN (SELECT DISTINCT source_id FROM kernel_messages WHERE ts_inferred IN ('minute', 'witness'))
    GROUP BY source_id
) AS k
WHERE s.source_id = k.source_id AND k.first_ts IS NOT NULL;
