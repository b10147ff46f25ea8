SELECT o.* , z.* FROM ospedali AS o;
