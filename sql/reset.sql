-- Drop and recreate the notes table, then seed it (ids restart at 1).
-- Run with: psql -v ON_ERROR_STOP=1 -f sql/reset.sql
drop table if exists notes;
\ir schema.sql
\ir seed.sql
