DROP TABLE ricoveri;
