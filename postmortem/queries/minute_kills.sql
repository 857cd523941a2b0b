-- minute_kills: OOM kills whose time is known to the minute only (dmesg -e/-H stamps that no
-- systemd line about the same kill dated: ts_inferred = 'minute'), per source, for build's
-- terminal note. Parameters: $since, $until (NULL for no bound).
SELECT s.path, count(*) AS kills
FROM oom_kills AS o
JOIN sources AS s ON s.source_id = o.source_id
WHERE o.ts_inferred = 'minute'
  AND ($since IS NULL OR o.ts >= $since) AND ($until IS NULL OR o.ts <= $until)
GROUP BY s.path
ORDER BY s.path;
