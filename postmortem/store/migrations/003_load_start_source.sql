-- postmortem schema, version 3: service_loads.start_source_id, the source that start_line_no
-- is a line of. A load started by systemd ("Starting …" in the journal) was cited with the
-- first line of its SGLang log, whose time is a few seconds later than the start shown beside
-- it. service_loads is derived: `build` fills the column for every load.

ALTER TABLE service_loads ADD COLUMN start_source_id INTEGER;
