-- undated_lines: the lines with no time (`journalctl -o cat` prints none: only a server's own
-- stamped lines in it are dated; a monotonic journal no boot dates) that their order in their
-- file can place around a kill of $unit on $host: systemd's lines about the unit, the kernel's
-- kill lines in its cgroup, and operators' commands (sudo's lines; `-o cat` prints no
-- identifier, only sudo's own layout says it is one). postmortem/analysis/undated.py finds
-- the kill's own lines in each file and places the rest before or after them.
-- Parameters: $unit, $host.
SELECT source_id, line_no, 'systemd' AS origin, action AS kind, code, restart_count, message
FROM unit_events
WHERE ts IS NULL AND unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT source_id, line_no, 'kernel', 'oom_kill', NULL, NULL, message
FROM oom_kills
WHERE ts IS NULL AND unit = $unit AND ($host IS NULL OR host IS NULL OR host = $host)
UNION ALL
SELECT source_id, line_no, 'operator', 'command', NULL, NULL,
       trim(regexp_extract(message, 'USER=(\S+) ; COMMAND=(.*)$', 2))
FROM journal_entries
WHERE ts IS NULL AND ($host IS NULL OR host IS NULL OR host = $host)
  AND (ident = 'sudo'
       OR (ident IS NULL AND regexp_matches(message, '^\s*\S+ : (?:[A-Z]+=[^;]* ; )*USER=\S+ ; COMMAND=')))
  AND regexp_matches(message, 'COMMAND=\S*\b(systemctl|kill|pkill|killall|nvidia-smi|docker|podman)\b')
ORDER BY source_id, line_no, origin
