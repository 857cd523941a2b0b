-- Each host's systemd version, as far as its journal tells: exact from its last boot line in the
-- data ("systemd 219 running in system mode. (+PAM …)", "systemd 245.4-4ubuntu3 running in
-- system mode …"), else bounded by the wording of its unit messages (docs/schema.md, unit_events):
--   high — at most v219: "Unit x entered failed state.", "x holdoff time over, scheduling
--          restart.", "x: main process exited, …", "start request repeated too quickly for x";
--          at most v238: "x: Unit entered failed state.", "x: Service hold-off time over, …";
--   low  — at least v243: systemd's OOM sentence (action oom_killed) or result 'oom-kill';
--          v247: systemd-oomd's kill; v249: "x: Deactivated successfully.".
-- No parameters.
WITH booted AS (
    SELECT host,
           arg_max(TRY_CAST(regexp_extract(message, '^systemd ([0-9]+)[^ ]* running in system mode', 1) AS INTEGER), ts)
               AS version
    FROM journal_entries
    WHERE ident = 'systemd' AND starts_with(message, 'systemd ') AND contains(message, ' running in system mode')
    GROUP BY host
),
worded AS (
    SELECT host,
           min(CASE
                   WHEN message LIKE 'Unit % entered failed state.'
                        OR message LIKE '% holdoff time over, scheduling restart.'
                        OR message LIKE '%: main process exited, %'
                        OR message LIKE 'start request repeated too quickly for %'
                        OR message LIKE '% start request repeated too quickly, refusing to start.' THEN 219
                   WHEN message LIKE '%: Unit entered failed state.'
                        OR message LIKE '%: Service hold-off time over, scheduling restart.' THEN 238
               END) AS high,
           max(CASE
                   WHEN action = 'oom_killed' OR result = 'oom-kill' THEN 243
                   WHEN action = 'oomd_killed' THEN 247
                   WHEN message LIKE '%: Deactivated successfully.' THEN 249
               END) AS low
    FROM unit_events
    GROUP BY host
)
SELECT coalesce(booted.host, worded.host) AS host, booted.version, worded.low, worded.high
FROM booted FULL OUTER JOIN worded ON booted.host IS NOT DISTINCT FROM worded.host
