WITH a AS (SELECT ospedale_id FROM ricoveri)
SELECT a.procedura_id FROM a;
