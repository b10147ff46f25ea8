SELECT r.id FROM ricoveri AS r
WHERE r.ospedale_id IN (SELECT id FROM ospedal WHERE regione = 'Lazio');
