-- Seed data for the notes table: 200,000 rows.
--
-- Row i gets id i (bigserial assigns ids in `order by g.i` order on a freshly
-- created table) and tag TAGS[i % 8] (0-based), the same mapping the server's
-- GET /json uses, so id 1 -> 'ts', ..., id 8 -> 'js'.
--
-- Run with autocommit (psql -v ON_ERROR_STOP=1 -f seed.sql): vacuum cannot
-- run inside a transaction block.

insert into notes (title, body, tag, created_at)
select 'Note ' || g.i || ' about ' || t.tag,
       repeat('Seeded note body for the JS test. ', 4),
       t.tag,
       now() - (200000 - g.i) * interval '1 second'
from generate_series(1, 200000) as g(i)
cross join lateral (
  select (array['js', 'ts', 'node', 'bun', 'deno', 'postgres', 'http', 'perf'])[(g.i % 8) + 1] as tag
) as t
order by g.i;

vacuum analyze notes;
checkpoint;
