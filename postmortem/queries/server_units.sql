-- server_units: the units whose own lines show they run an inference server (a configuration
-- line of theirs is stored). No parameters.
SELECT DISTINCT unit FROM server_configs WHERE unit IS NOT NULL
