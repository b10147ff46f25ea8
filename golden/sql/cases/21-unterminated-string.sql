SELECT 'abc FROM ospedali;
