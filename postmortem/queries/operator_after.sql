-- The first operator command after a time (sudo's journal lines: systemctl, kill, nvidia-smi,
-- docker, podman … as the timeline shows them), up to $until: the report's Detection, past the
-- timeline's ten minutes when nothing brought the service back.
-- Parameters: $after, $until, $host.
SELECT ts, trim(regexp_extract(message, 'USER=(\S+) ; COMMAND=(.*)$', 2)) AS message, source_id, line_no
FROM journal_entries
WHERE ident = 'sudo'
  AND regexp_matches(message, 'COMMAND=\S*\b(systemctl|kill|pkill|killall|nvidia-smi|docker|podman)\b')
  AND ts > $after AND ts <= $until AND ($host IS NULL OR host IS NULL OR host = $host)
ORDER BY ts, source_id, line_no
LIMIT 1
