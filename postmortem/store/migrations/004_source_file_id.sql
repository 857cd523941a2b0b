-- postmortem schema, version 4: sources.file_id, the file's identity on its filesystem
-- ("device:inode") when it was read. A path whose content changed is a new file when its
-- identity changed too (log rotation renamed the old one away): the old file's rows are kept,
-- under "<path> (rotated away)", instead of being replaced by the new file's. Rows from
-- earlier versions have NULL (a change at their path is a rewrite in place, as before).

ALTER TABLE sources ADD COLUMN file_id VARCHAR;
