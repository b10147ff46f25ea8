INSERT INTO ospedali (id, nome, citta, regione) VALUES (99, 'x', 'y', 'z');
