VACUUM INTO 'copia.db';
