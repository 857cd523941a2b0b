-- postmortem schema, version 15: the resident memory earlyoom prints for its victim ("VmRSS
-- 61234 MiB", earlyoom 1.2+): oom_kills.vm_rss_kb, and incident_victims.vm_rss_kb beside the
-- kernel's anonymous RSS. A journal ingested before version 15 has none until it is ingested
-- into a new store.

ALTER TABLE oom_kills ADD COLUMN vm_rss_kb BIGINT;
ALTER TABLE incident_victims ADD COLUMN vm_rss_kb BIGINT;
