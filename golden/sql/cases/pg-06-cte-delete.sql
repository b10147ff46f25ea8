WITH d AS (DELETE FROM ricoveri RETURNING id)
SELECT count(*) FROM d;
