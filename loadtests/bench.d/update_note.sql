-- PUT /notes/:id: notesd's update_note statement on a random id, one of the 8 tags.
--
-- pgbench has no string expressions, so the tag is a -D variable (tag0 .. tag7,
-- bound as a text parameter like notesd binds it) picked by \if on a random
-- index; every branch sends the same SQL text.
\set id random(1, 200000)
\set t random(0, 7)
\if :t = 0
update notes set title = :title, body = :body, tag = :tag0 where id = :id returning id, title, body, tag, created_at;
\elif :t = 1
update notes set title = :title, body = :body, tag = :tag1 where id = :id returning id, title, body, tag, created_at;
\elif :t = 2
update notes set title = :title, body = :body, tag = :tag2 where id = :id returning id, title, body, tag, created_at;
\elif :t = 3
update notes set title = :title, body = :body, tag = :tag3 where id = :id returning id, title, body, tag, created_at;
\elif :t = 4
update notes set title = :title, body = :body, tag = :tag4 where id = :id returning id, title, body, tag, created_at;
\elif :t = 5
update notes set title = :title, body = :body, tag = :tag5 where id = :id returning id, title, body, tag, created_at;
\elif :t = 6
update notes set title = :title, body = :body, tag = :tag6 where id = :id returning id, title, body, tag, created_at;
\elif :t = 7
update notes set title = :title, body = :body, tag = :tag7 where id = :id returning id, title, body, tag, created_at;
\endif
