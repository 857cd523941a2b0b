-- The recommendations the last build stored, in the order it wrote them.
SELECT incident_id, rule, severity, title, detail, evidence, headline, summary, action, action_type
FROM recommendations
ORDER BY rowid
