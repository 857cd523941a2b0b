-- OOM kills whose time could not be told (no stamp, boot-relative seconds with no boot anchor):
-- in no incident, so the index lists them. Parameters: none.
SELECT source_id, line_no, host, killer, scope, victim_pid, victim_comm, unit, oom_memcg,
       anon_rss_kb, memcg_limit_kb, monotonic_s
FROM oom_kills
WHERE ts IS NULL
ORDER BY source_id, line_no
