-- unit_known: the units systemd, the kernel, a structured journal or an operator's systemctl
-- command (sudo's journal line, also without its identifier in `-o cat`) name on a host (a
-- log file's name is taken for its unit only when one of them knows that unit).
-- No parameters.
SELECT DISTINCT host, unit FROM unit_events WHERE unit IS NOT NULL
UNION
SELECT DISTINCT host, unit FROM oom_kills WHERE unit IS NOT NULL
UNION
SELECT DISTINCT host, unnest(regexp_extract_all(
    regexp_extract(message, 'COMMAND=\S*systemctl\s(.*)$', 1), '[A-Za-z0-9@_.:\\-]+\.service\b')) AS unit
FROM journal_entries
WHERE message LIKE '%COMMAND=%systemctl%'
  -- (sudo's line; `-o cat` prints no identifier, only sudo's own layout says it is one)
  AND (ident = 'sudo'
       OR (ident IS NULL AND regexp_matches(message, '^\s*\S+ : (?:[A-Z]+=[^;]* ; )*USER=\S+ ; COMMAND=')))
