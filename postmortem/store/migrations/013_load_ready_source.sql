-- postmortem schema, version 13: service_loads.ready_source_id, the source that ready_line_no
-- is a line of. A load whose start and ready lines are in two files (a journal split while it
-- loaded: journalctl.log.1 and journalctl.log) was cited with the ready line's number in the
-- start's file. service_loads is derived: `build` fills the column for every load.

ALTER TABLE service_loads ADD COLUMN ready_source_id INTEGER;
