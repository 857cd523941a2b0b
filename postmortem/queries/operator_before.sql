-- An operator's systemctl commands (sudo's journal lines) naming a unit in the minutes before a
-- time: what started the instance that was later killed; for a container (docker:<name>), the
-- docker/podman commands naming the container. Parameters: $unit, $before, $host.
SELECT ts, trim(regexp_extract(message, 'USER=(\S+) ; COMMAND=(.*)$', 2)) AS command, source_id, line_no
FROM journal_entries
WHERE ident = 'sudo'
  AND ((message LIKE '%COMMAND=%systemctl%' AND contains(message, $unit))
       OR (regexp_matches($unit, '^(docker|podman):')
           AND regexp_matches(message, 'COMMAND=\S*\b(docker|podman) ')
           AND contains(message, regexp_extract($unit, ':(.*)$', 1))))
  AND ts >= $before - INTERVAL 5 MINUTE AND ts <= $before
  AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, source_id, line_no
