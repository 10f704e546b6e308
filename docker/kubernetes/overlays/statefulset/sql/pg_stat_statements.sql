create extension if not exists pg_stat_statements;
