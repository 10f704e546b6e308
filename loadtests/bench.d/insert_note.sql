-- POST /notes: notesd's insert_note statement; title and body as wrk's notes.lua sends
-- them (-D title=..., -D body=...), one of the 8 tags.
--
-- pgbench has no string expressions, so the tag is a -D variable (tag0 .. tag7,
-- bound as a text parameter like notesd binds it) picked by \if on a random
-- index; every branch sends the same SQL text.
\set t random(0, 7)
\if :t = 0
insert into notes (title, body, tag, created_at) values (:title, :body, :tag0, now()) returning id, title, body, tag, created_at;
\elif :t = 1
insert into notes (title, body, tag, created_at) values (:title, :body, :tag1, now()) returning id, title, body, tag, created_at;
\elif :t = 2
insert into notes (title, body, tag, created_at) values (:title, :body, :tag2, now()) returning id, title, body, tag, created_at;
\elif :t = 3
insert into notes (title, body, tag, created_at) values (:title, :body, :tag3, now()) returning id, title, body, tag, created_at;
\elif :t = 4
insert into notes (title, body, tag, created_at) values (:title, :body, :tag4, now()) returning id, title, body, tag, created_at;
\elif :t = 5
insert into notes (title, body, tag, created_at) values (:title, :body, :tag5, now()) returning id, title, body, tag, created_at;
\elif :t = 6
insert into notes (title, body, tag, created_at) values (:title, :body, :tag6, now()) returning id, title, body, tag, created_at;
\elif :t = 7
insert into notes (title, body, tag, created_at) values (:title, :body, :tag7, now()) returning id, title, body, tag, created_at;
\endif
