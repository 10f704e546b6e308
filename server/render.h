/*
 * render.h - writes response bodies byte for byte as the reference app does.
 *
 * The reference is Express's res.json, i.e. JSON.stringify of the row object
 * node-postgres builds: keys in column order, no spaces, a bigint id as a JSON
 * string, timestamptz as Date.toISOString() (UTC, milliseconds, 'Z'), and
 * JSON.stringify's escaping. Pure functions writing into caller-sized buffers,
 * so a response costs no malloc (the caller allocates from the request pool).
 */
#ifndef NOTESD_RENDER_H
#define NOTESD_RENDER_H

#include <stddef.h>
#include <stdint.h>

/* Length of "2026-11-30T07:47:20.123Z". */
#define RENDER_ISO_LEN 24

/* Converts PostgreSQL's text output of a timestamptz in the ISO DateStyle
 * ("2026-11-30 07:47:20.123456+00", any offset such as "+05:30" or "-08") to
 * the ISO form of a JavaScript Date. Like node-postgres, the fraction is
 * truncated to milliseconds. Returns 0, or -1 if the text is not understood
 * (including years outside 0000..9999, which toISOString writes differently). */
int render_pg_timestamp(const char *pg, size_t len, char out[RENDER_ISO_LEN + 1]);

/* Writes the ISO form of a Unix time in milliseconds. */
void render_iso_from_ms(int64_t unix_ms, char out[RENDER_ISO_LEN + 1]);

/* Upper bound of the bytes render_json_string writes for `len` input bytes. */
#define RENDER_JSON_STRING_BOUND(len) (6 * (len) + 2)

/* Writes `s` as a quoted JSON string with JSON.stringify's escapes; returns the
 * end of what was written. */
char *render_json_string(char *dst, const char *s, size_t len);

/* One notes row as text, exactly as PostgreSQL sent it. */
typedef struct note_row {
    const char *id, *title, *body, *tag, *created_at;
    size_t id_len, title_len, body_len, tag_len, created_at_len;
} note_row_t;

/* Upper bound of the bytes render_note writes for `row`. */
size_t render_note_bound(const note_row_t *row);

/* Writes {"id":"..","title":..,"body":..,"tag":..,"created_at":".."}; returns
 * the end of what was written, or NULL if created_at is not understood. */
char *render_note(char *dst, const note_row_t *row);

/* Writes the GET /json object: like a note, but with a numeric id and the
 * seed's title and body. `now_ms` is the Unix time in milliseconds. */
size_t render_json_sample(char *dst, size_t cap, long id, int64_t now_ms);

/* The 8 tags of the seeded data; a note with id N has tag notes_tags[N % 8]. */
extern const char *const notes_tags[8];

#endif
