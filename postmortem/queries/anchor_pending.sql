-- anchor_pending: whether any row waits for a boot anchor (anchor_monotonic has work): a
-- boot-relative kernel message, OOM kill or Xid without a wall-clock time. No parameters.
SELECT 1 FROM kernel_messages WHERE ts IS NULL AND monotonic_s IS NOT NULL
UNION ALL
SELECT 1 FROM oom_kills WHERE ts IS NULL AND monotonic_s IS NOT NULL
UNION ALL
SELECT 1 FROM gpu_xids WHERE ts IS NULL AND monotonic_s IS NOT NULL
LIMIT 1;
