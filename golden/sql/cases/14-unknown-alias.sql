SELECT x.nome FROM ospedali AS o;
