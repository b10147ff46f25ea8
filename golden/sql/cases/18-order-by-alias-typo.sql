SELECT nome AS ospedale FROM ospedali ORDER BY ospedal;
