ATTACH DATABASE 'altro.db' AS altro;
