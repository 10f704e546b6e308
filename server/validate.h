/*
 * validate.h - checks client input before anything reaches the database.
 *
 * Pure functions with no I/O, so unit tests and fuzzers can call them directly.
 * Each returns 0 when the input is acceptable, or -1 and sets *err to a static
 * message suitable for a 400 body. Where the reference Express app would crash
 * or answer 500, these turn the input into a 4xx with a reason.
 */
#ifndef NOTESD_VALIDATE_H
#define NOTESD_VALIDATE_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"

/* Parses a note id: ASCII digits only (no sign, space, hex or empty), value in
 * 1..9223372036854775807 (a positive PostgreSQL bigint). Leading zeros are
 * accepted, since PostgreSQL reads "007" as 7; `canon` receives the canonical
 * decimal text, NUL-terminated (at most 20 bytes + NUL). */
NOTESD_MUSTCHECK int validate_note_id(const char *s, size_t len, char canon[21], const char **err);

/* What the parser of numbers found. */
enum validate_number {
    VALIDATE_NUMBER = 0,        /* a whole number in 0..max, in *out */
    VALIDATE_NOT_A_NUMBER = -1, /* empty, or a byte that is not an ASCII digit */
    VALIDATE_ABOVE_MAX = -2,    /* ASCII digits whose value is past max, however many */
};

/* Reads `s` as a whole number in 0..max: ASCII digits only (no sign, space
 * or point), not empty; leading zeros are allowed. Returns VALIDATE_NUMBER
 * and sets *out, or one of the two refusals (without overflowing, whatever
 * the length). The one parser of numbers: the paths' (percent-decoded by the
 * dispatcher), the query strings' (validate_query_number) and the headers'. */
NOTESD_MUSTCHECK int validate_whole_number(const char *s, size_t len, uint64_t max, uint64_t *out);

/* The one query-string parser. Finds parameter `name` in a raw query string
 * (the part after '?'), comparing keys after decoding them as Node's
 * querystring does. Returns how often it occurs: 0, 1, or 2 for "more than
 * once". *value and *value_len get the first occurrence's raw value, still
 * encoded; *value is NULL when that occurrence has no '='. */
int validate_query_param(const char *query, size_t len, const char *name, const char **value,
                         size_t *value_len);

/* Reads parameter `name` as a whole number in 0..max: its value decoded as
 * every query-string value is ('+' a space, valid %XX escapes the bytes they
 * name: "%31%30" is 10), then read by validate_whole_number. Returns 1 and
 * sets *out when it is there, 0 when it is absent (or has no '='), -1 when it
 * is anything else. */
NOTESD_MUSTCHECK int validate_query_number(const char *query, size_t len, const char *name,
                                           uint64_t max, uint64_t *out);

/* Finds the `tag` parameter in a raw query string (the part after '?') and
 * decodes it as Node's querystring does: '+' is a space, valid %XX escapes
 * are decoded, invalid ones stay as they are. `out` must hold `len + 1` bytes;
 * *out_len gets the decoded length and out is NUL-terminated. A missing or
 * repeated tag, a NUL byte or invalid UTF-8 is an error. */
NOTESD_MUSTCHECK int validate_tag_query(const char *query, size_t len, char *out, size_t *out_len,
                                        const char **err);

/* Percent-decodes a path segment as decodeURIComponent would, except that an
 * invalid escape is kept as it is instead of failing (the callers refuse what
 * it leaves anyway). No '+' rule: that is the query string's. `out` must hold
 * `len` bytes; returns the decoded length. */
size_t validate_decode_path(const char *s, size_t len, char *out);

/* Returns 1 when `s` is valid UTF-8 without NUL bytes, 0 otherwise. */
int validate_utf8(const char *s, size_t len);

/* The fields of a POST or PUT body. The strings point into `json`, which the
 * caller frees with cJSON_Delete after it is done with them. */
typedef struct note_input {
    struct cJSON *json;
    const char *title, *body, *tag;
} note_input_t;

/* Parses a request body as JSON {"title": string, "body": string, "tag": string}.
 * Other fields are ignored, as the reference app ignores them. A lone UTF-16
 * surrogate escape ("\ud800", or "\udc00\ud800" reversed) becomes U+FFFD, as
 * JSON.parse followed by node-postgres's UTF-8 encoding stores it. On success
 * the caller owns in->json; on failure nothing is left to free. */
NOTESD_MUSTCHECK int validate_note_body(const char *body, size_t len, note_input_t *in,
                                        const char **err);

#endif
