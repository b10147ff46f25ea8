SELECT t.n FROM (SELECT COUNT(*) AS totale FROM ricoveri) AS t;
