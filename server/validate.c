/*
 * validate.c - id, query-string, path and JSON-body checks (see validate.h);
 * the body's JSON syntax is json_strict.c's.
 *
 * Deliberately stricter than the reference app where the reference would fail
 * later, inside PostgreSQL: a NUL byte or invalid UTF-8 can never be stored in
 * a text column, so it is refused here, before a connection is used.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>
#include "hex.h"
#include "json_strict.h"
#include "validate.h"

int validate_note_id(const char *s, size_t len, char canon[21], const char **err)
{
    size_t i = 0;

    if (len == 0) {
        *err = "id must be a positive integer";
        return -1;
    }
    for (size_t j = 0; j < len; j++) {
        if (s[j] < '0' || s[j] > '9') {
            *err = "id must be a positive integer";
            return -1;
        }
    }
    while (i < len - 1 && s[i] == '0')
        i++;
    size_t digits = len - i;
    /* 9223372036854775807 has 19 digits; compare as text to avoid overflow. */
    if (digits > 19 || (digits == 19 && memcmp(s + i, "9223372036854775807", 19) > 0)) {
        *err = "id is out of range for a bigint";
        return -1;
    }
    if (digits == 1 && s[i] == '0') {
        *err = "id must be a positive integer";
        return -1;
    }
    memcpy(canon, s + i, digits);
    canon[digits] = '\0';
    return 0;
}

/* The next byte of `s` as a percent-decoder reads it, from s[*i]: a valid
 * %XX escape is the byte it names, '+' is a space in a query string
 * (plus_is_space), anything else is itself, an invalid escape included.
 * Moves *i past what it read. The one decoder of paths and query strings. */
static char next_decoded(const char *s, size_t len, size_t *i, int plus_is_space)
{
    int hi, lo;
    char c = s[(*i)++];
    if (c == '+' && plus_is_space)
        return ' ';
    if (c == '%' && *i + 1 < len && (hi = hex_digit(s[*i], HEX_ANY_CASE)) >= 0 &&
        (lo = hex_digit(s[*i + 1], HEX_ANY_CASE)) >= 0) {
        *i += 2;
        return (char)(hi << 4 | lo);
    }
    return c;
}

/* Decodes %XX escapes (and '+' as a space, in a query string) into out;
 * returns the decoded length. */
static size_t percent_decode(const char *s, size_t len, char *out, int plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < len;)
        out[o++] = next_decoded(s, len, &i, plus_is_space);
    return o;
}

/* One query-string component, as Node's querystring decodes it. */
static size_t decode_component(const char *s, size_t len, char *out)
{
    return percent_decode(s, len, out, 1);
}

size_t validate_decode_path(const char *s, size_t len, char *out)
{
    return percent_decode(s, len, out, 0);
}

int validate_utf8(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < len) {
        unsigned c = s[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned min;
        if ((c & 0xe0) == 0xc0) {
            n = 1, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if (i + n >= len)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            c = c << 6 | (s[i + k] & 0x3f);
        }
        /* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
        if (c < min || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
            return 0;
        i += n + 1;
    }
    return 1;
}

int validate_query_param(const char *query, size_t len, const char *name, const char **value,
                         size_t *value_len)
{
    size_t name_len = strlen(name), pos = 0;
    int found = 0;

    while (pos <= len && found < 2) {
        const char *part = query + pos;
        const char *amp = memchr(part, '&', len - pos);
        size_t part_len = amp != NULL ? (size_t)(amp - part) : len - pos;
        const char *eq = memchr(part, '=', part_len);
        size_t key_len = eq != NULL ? (size_t)(eq - part) : part_len;
        char key[64]; /* each letter of `name` %-encoded at most */

        /* Only keys that can decode to `name` are decoded. */
        if (key_len >= name_len && key_len <= 3 * name_len && key_len <= sizeof(key) &&
            decode_component(part, key_len, key) == name_len && memcmp(key, name, name_len) == 0) {
            if (found++ == 0) {
                *value = eq != NULL ? eq + 1 : NULL;
                *value_len = eq != NULL ? part_len - key_len - 1 : 0;
            }
        }
        if (amp == NULL)
            break;
        pos += part_len + 1;
    }
    return found;
}

/* The one parser of numbers, over `s` as it is (`encoded` 0) or as a query
 * string's value decodes (1). Digits past `max` are read to the end all the
 * same, so that a long number is told from something that is not one. */
static int read_number(const char *s, size_t len, int encoded, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;
    int above = 0;

    if (len == 0)
        return VALIDATE_NOT_A_NUMBER;
    for (size_t i = 0; i < len;) {
        char c = encoded ? next_decoded(s, len, &i, 1) : s[i++];
        if (c < '0' || c > '9')
            return VALIDATE_NOT_A_NUMBER;
        uint64_t d = (uint64_t)(c - '0');
        /* n * 10 + d <= max, checked without overflowing; d > max comes
         * first, since with a max below 9 (max - d) would wrap */
        if (above || d > max || n > (max - d) / 10)
            above = 1;
        else
            n = n * 10 + d;
    }
    if (above)
        return VALIDATE_ABOVE_MAX;
    *out = n;
    return VALIDATE_NUMBER;
}

int validate_whole_number(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    return read_number(s, len, 0, max, out);
}

int validate_query_number(const char *query, size_t len, const char *name, uint64_t max,
                          uint64_t *out)
{
    const char *v;
    size_t vlen;

    if (validate_query_param(query, len, name, &v, &vlen) == 0 || v == NULL)
        return 0;
    return read_number(v, vlen, 1, max, out) == VALIDATE_NUMBER ? 1 : -1;
}

int validate_tag_query(const char *query, size_t len, char *out, size_t *out_len, const char **err)
{
    const char *value;
    size_t value_len;

    switch (validate_query_param(query, len, "tag", &value, &value_len)) {
    case 0:
        *err = "query parameter 'tag' is required";
        return -1;
    case 1:
        break;
    default:
        *err = "query parameter 'tag' is given more than once";
        return -1;
    }
    *out_len = value != NULL ? decode_component(value, value_len, out) : 0;
    out[*out_len] = '\0';
    if (!validate_utf8(out, *out_len)) {
        *err = "query parameter 'tag' must be UTF-8 text without NUL bytes";
        return -1;
    }
    return 0;
}

/* The value of member `name`; with duplicate keys the last one, as JSON.parse keeps. */
static cJSON *last_member(cJSON *obj, const char *name)
{
    cJSON *found = NULL;
    for (cJSON *item = obj->child; item != NULL; item = item->next)
        if (item->string != NULL && strcmp(item->string, name) == 0)
            found = item;
    return found;
}

static const char *string_field(cJSON *obj, const char *name, const char **err, const char *missing,
                                const char *wrong)
{
    cJSON *item = last_member(obj, name);
    if (item == NULL || cJSON_IsNull(item)) {
        *err = missing;
        return NULL;
    }
    if (!cJSON_IsString(item)) {
        *err = wrong;
        return NULL;
    }
    return item->valuestring;
}

int validate_note_body(const char *body, size_t len, note_input_t *in, const char **err)
{
    memset(in, 0, sizeof(*in));
    if (body == NULL || len == 0) {
        *err = "request body must be a JSON object";
        return -1;
    }
    if (!validate_utf8(body, len)) {
        *err = "request body must be UTF-8 without NUL bytes";
        return -1;
    }
    char *fixed; /* the body with its lone surrogates rewritten, if it has any */
    if ((*err = json_strict_check(body, len, &fixed)) != NULL)
        return -1;
    cJSON *json = cJSON_ParseWithLength(fixed != NULL ? fixed : body, len);
    free(fixed);
    if (json == NULL) {
        *err = "request body is not valid JSON";
        return -1;
    }
    if (!cJSON_IsObject(json)) {
        *err = "request body must be a JSON object";
        goto Error;
    }
    if ((in->title = string_field(json, "title", err, "field 'title' is required",
                                  "field 'title' must be a string")) == NULL ||
        (in->body = string_field(json, "body", err, "field 'body' is required",
                                 "field 'body' must be a string")) == NULL ||
        (in->tag = string_field(json, "tag", err, "field 'tag' is required",
                                "field 'tag' must be a string")) == NULL)
        goto Error;
    in->json = json;
    return 0;

Error:
    cJSON_Delete(json);
    memset(in, 0, sizeof(*in));
    return -1;
}
