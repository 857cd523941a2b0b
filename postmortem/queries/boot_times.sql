-- boot_times: when each host booted, from the kernel's banner ("Linux version …", the first
-- line of a boot) and the journals' boots (postmortem/analysis/server_units.py: a pid's lines
-- on both sides of a boot are two processes, the new boot having reused the pid).
-- No parameters.
SELECT host, ts FROM kernel_messages WHERE message LIKE 'Linux version %' AND ts IS NOT NULL
UNION
SELECT host, boot_ts FROM boots
ORDER BY ts
