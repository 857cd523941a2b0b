-- The containers whose lines the journals carried (one row per container id, name and image a
-- source first showed), in the order they were first seen. No parameters.
SELECT host, unit, runtime, container_id, name, image, ts
FROM containers
ORDER BY ts NULLS FIRST, source_id, line_no
