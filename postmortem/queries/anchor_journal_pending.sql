-- anchor_journal_pending: the sources whose journal entries without a wall-clock time carry
-- what dates them for anchor_journal: a kernel line a dated kernel log also holds, a server line
-- that has a time, the journal's header, or systemd's line about an OOM kill the kernel dated.
-- No parameters.
SELECT DISTINCT j.source_id
FROM journal_entries AS j
WHERE j.ts IS NULL AND j.monotonic_s IS NOT NULL
  AND (EXISTS (SELECT 1 FROM kernel_messages AS k
               JOIN kernel_messages AS d ON d.message = k.message AND d.source_id <> k.source_id
               WHERE k.source_id = j.source_id AND k.line_no = j.line_no AND k.ts IS NULL
                 AND d.ts IS NOT NULL
                 AND coalesce(d.ts_inferred, '') NOT IN ('boot', 'minute', 'witness', 'previous'))
       OR EXISTS (SELECT 1 FROM server_stats AS s
                  WHERE s.source_id = j.source_id AND s.line_no = j.line_no AND s.ts IS NOT NULL)
       OR EXISTS (SELECT 1 FROM server_events AS s
                  WHERE s.source_id = j.source_id AND s.line_no = j.line_no AND s.ts IS NOT NULL)
       OR EXISTS (SELECT 1 FROM journal_headers AS h WHERE h.source_id = j.source_id)
       OR EXISTS (SELECT 1 FROM unit_events AS u
                  JOIN oom_kills AS o ON o.unit = u.unit AND o.ts IS NOT NULL
                  WHERE u.source_id = j.source_id AND u.line_no = j.line_no AND u.ts IS NULL
                    AND (u.action = 'oom_killed'
                         OR (u.action = 'main_exited' AND u.code IN ('killed', 'dumped')))))
ORDER BY j.source_id;
