-- GET /notes?tag=T: notesd's list_by_tag statement with one of the 8 tags.
--
-- pgbench has no string expressions, so the tag is a -D variable (tag0 .. tag7,
-- bound as a text parameter like notesd binds it) picked by \if on a random
-- index; every branch sends the same SQL text.
\set t random(0, 7)
\if :t = 0
select id, title, body, tag, created_at from notes where tag = :tag0 order by id desc limit 20;
\elif :t = 1
select id, title, body, tag, created_at from notes where tag = :tag1 order by id desc limit 20;
\elif :t = 2
select id, title, body, tag, created_at from notes where tag = :tag2 order by id desc limit 20;
\elif :t = 3
select id, title, body, tag, created_at from notes where tag = :tag3 order by id desc limit 20;
\elif :t = 4
select id, title, body, tag, created_at from notes where tag = :tag4 order by id desc limit 20;
\elif :t = 5
select id, title, body, tag, created_at from notes where tag = :tag5 order by id desc limit 20;
\elif :t = 6
select id, title, body, tag, created_at from notes where tag = :tag6 order by id desc limit 20;
\elif :t = 7
select id, title, body, tag, created_at from notes where tag = :tag7 order by id desc limit 20;
\endif
