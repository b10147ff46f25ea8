SELECT * FROM ricoveri JOIN procedure USING (codice);
