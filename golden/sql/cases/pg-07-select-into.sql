SELECT * INTO copia FROM ospedali;
