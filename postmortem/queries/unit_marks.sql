-- unit_marks: when units started and ended, as systemd and the OOM killers say, for linking a
-- server's run to its unit (postmortem/analysis/server_units.py): a run that begins seconds
-- after a unit starts, and falls silent as that unit dies, is that unit's. Scopes, slices,
-- timers, sockets and mounts run no server. A start in a text journal before systemd 249
-- names the unit's Description (description is set, unit is that Description); a login
-- session's scope is named by the Description logind gives it ("Session 42 of User ops"): a
-- server started by hand in that session starts minutes after the login, not with it.
-- span_s: how long after ts the mark may really be (60: an OOM kill dated to its minute only,
-- a dmesg -e/-H stamp no systemd line dated; 0 otherwise).
-- No parameters.
SELECT host, unit, description, ts, 'start' AS mark, action, source_id, line_no, 0 AS span_s
FROM unit_events
WHERE action IN ('starting', 'started') AND ts IS NOT NULL AND unit IS NOT NULL
  AND NOT (description IS NOT NULL AND regexp_matches(unit, '^Session \S+ of [Uu]ser \S+$'))
UNION ALL
SELECT host, unit, description, ts, 'end', action, source_id, line_no, 0
FROM unit_events
WHERE action IN ('main_exited', 'failed', 'oom_killed', 'stopping', 'stopped', 'deactivated') AND ts IS NOT NULL AND unit IS NOT NULL
UNION ALL
SELECT host, unit, NULL, ts, 'end', 'oom_kill', source_id, line_no,
       CASE WHEN ts_inferred = 'minute' THEN 60 ELSE 0 END
FROM oom_kills
WHERE ts IS NOT NULL AND unit IS NOT NULL
