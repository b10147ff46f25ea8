SELECT o.nome, COUNT(*) AS n
FROM ricoveri AS r
JOIN ospedali AS o ON o.id = r.ospedale_id
JOIN procedure AS p ON p.id = r.procedura_id
WHERE p.flag_ablazion = 1
  AND r.data >= '2024-01-01'
GROUP BY o.nome;
