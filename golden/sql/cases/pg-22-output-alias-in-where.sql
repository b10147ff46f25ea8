SELECT nome AS n FROM ospedali WHERE n = 'x';
