SELECT id, nome
FROM ricoveri
JOIN ospedali ON ospedali.id = ricoveri.ospedale_id;
