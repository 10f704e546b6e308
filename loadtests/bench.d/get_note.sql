-- GET /notes/:id: notesd's get_note statement, the id drawn as wrk draws it.
\set id random(1, 200000)
select id, title, body, tag, created_at from notes where id = :id;
