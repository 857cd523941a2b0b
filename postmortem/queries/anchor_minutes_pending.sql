-- anchor_minutes_pending: whether an OOM kill stamped by dmesg -e/-H waits for its seconds
-- (anchor_minutes has work). No parameters.
SELECT 1 FROM oom_kills WHERE ts_inferred = 'minute' LIMIT 1;
