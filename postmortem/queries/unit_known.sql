-- unit_known: the units systemd, the kernel or a structured journal name on a host (a log
-- file's name is taken for its unit only when one of them knows that unit).
-- No parameters.
SELECT DISTINCT host, unit FROM unit_events WHERE unit IS NOT NULL
UNION
SELECT DISTINCT host, unit FROM oom_kills WHERE unit IS NOT NULL
