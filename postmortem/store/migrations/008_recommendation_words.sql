-- postmortem schema, version 8: the recommendations as the report gives them — a one-line
-- headline with the number that matters, at most three sentences (summary), and the action
-- item with its type (mitigate, prevent, detect) — beside the full reasoning (detail).
-- recommendations is derived: every build rewrites the rows of the incidents it analyses.

ALTER TABLE recommendations ADD COLUMN headline VARCHAR;
ALTER TABLE recommendations ADD COLUMN summary VARCHAR;
ALTER TABLE recommendations ADD COLUMN action VARCHAR;
ALTER TABLE recommendations ADD COLUMN action_type VARCHAR;
