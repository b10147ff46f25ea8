SELECT nome
FROM ospedali
WHERE regione = 'Lazio' AND
ORDER BY nome;
