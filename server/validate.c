/*
 * validate.c - id, query-string and JSON-body checks (see validate.h).
 *
 * Deliberately stricter than the reference app where the reference would fail
 * later, inside PostgreSQL: a NUL byte or invalid UTF-8 can never be stored in
 * a text column, so it is refused here, before a connection is used.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cJSON.h>
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

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes %XX escapes (and '+' as a space, in a query string) into out;
 * returns the decoded length. */
static size_t percent_decode(const char *s, size_t len, char *out, int plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '+' && plus_is_space) {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < len && (hi = hex_value(s[i + 1])) >= 0 &&
                   (lo = hex_value(s[i + 2])) >= 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
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

size_t validate_origin_form(const char *target, size_t len)
{
    size_t i;

    if (len > 0 && target[0] == '/')
        return 0;
    if (len >= 7 && strncasecmp(target, "http://", 7) == 0)
        i = 7;
    else if (len >= 8 && strncasecmp(target, "https://", 8) == 0)
        i = 8;
    else
        return SIZE_MAX;
    while (i < len && target[i] != '/' && target[i] != '?')
        i++; /* the authority, which routing does not need */
    return i;
}

int validate_framing(const char *head, size_t len, const char **err)
{
    const char *line = head, *end = head + len;
    int lengths = 0, chunked = 0, first = 1;

    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = (nl != NULL ? nl : end) - line;
        if (n == 0 || (n == 1 && line[0] == '\r'))
            break; /* the empty line that ends the head */
        if (!first && n >= 15 && strncasecmp(line, "content-length:", 15) == 0)
            lengths++;
        else if (!first && n >= 18 && strncasecmp(line, "transfer-encoding:", 18) == 0)
            chunked = 1;
        first = 0; /* the request line */
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    if (lengths > 1) {
        *err = "Content-Length given more than once";
        return -1;
    }
    if (lengths > 0 && chunked) {
        *err = "Content-Length and Transfer-Encoding together";
        return -1;
    }
    return 0;
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

int validate_query_number(const char *query, size_t len, const char *name, long max, long *out)
{
    const char *v;
    size_t vlen;
    long n = 0;

    if (validate_query_param(query, len, name, &v, &vlen) == 0 || v == NULL)
        return 0;
    if (vlen == 0)
        return -1;
    for (size_t i = 0; i < vlen; i++) {
        if (v[i] < '0' || v[i] > '9' || n > (max - (v[i] - '0')) / 10)
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    *out = n;
    return 1;
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

/* Looks inside the JSON strings of a body for what JSON.parse refuses but cJSON
 * lets through: raw control characters. Also finds the escape \u0000, which
 * cJSON would decode to a NUL byte that silently cuts the C string short.
 * Returns NULL when the text is fine, or the reason for a 400. */
static const char *prescan_json_strings(const char *s, size_t len)
{
    int in_string = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!in_string) {
            if (c == '"')
                in_string = 1;
            continue;
        }
        if (c == '"') {
            in_string = 0;
        } else if (c < 0x20) {
            return "request body is not valid JSON (control character in a string)";
        } else if (c == '\\' && i + 1 < len) {
            if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
                return "strings must not contain NUL (\\u0000)";
            i++; /* skip the escaped character, so \\" does not end the string */
        }
    }
    return NULL;
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

/* ---- strict JSON syntax (RFC 8259), checked before cJSON parses ----------------------------
 * cJSON is lenient where JSON.parse is not (leading zeros, "1.", control characters
 * between tokens); the reference app answers those bodies with 400, so we do too. */

typedef struct json_scan {
    const char *p, *end;
    int depth;
    const char *start; /* the text, for offsets into `fix` */
    char *fix;         /* NULL, or a copy of the text in which lone surrogates are rewritten */
    size_t lone;       /* lone surrogate escapes seen */
} json_scan_t;

#define JSON_MAX_DEPTH 512

static void skip_ws(json_scan_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int scan_value(json_scan_t *s);

static int scan_literal(json_scan_t *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return 0;
    s->p += n;
    return 1;
}

static int scan_digits(json_scan_t *s)
{
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > start;
}

static int scan_number(json_scan_t *s)
{
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0') {
        s->p++; /* no leading zeros: "01" is not a number */
    } else if (!scan_digits(s)) {
        return 0;
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!scan_digits(s))
            return 0;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!scan_digits(s))
            return 0;
    }
    return 1;
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 4 |
            (unsigned)(isdigit((unsigned char)p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    return v;
}

/* A \u escape of a UTF-16 surrogate without its partner. JSON.parse keeps it
 * in the string, and node-postgres's UTF-8 encoding stores it as U+FFFD; cJSON
 * refuses it, so the copy it parses says \ufffd instead. */
static void lone_surrogate(json_scan_t *s, const char *digits)
{
    s->lone++;
    if (s->fix != NULL)
        memcpy(s->fix + (digits - s->start), "fffd", 4);
}

static int scan_string(json_scan_t *s)
{
    const char *high = NULL; /* the digits of a high surrogate waiting for its low half */

    if (s->p >= s->end || *s->p != '"')
        return 0;
    for (s->p++; s->p < s->end; s->p++) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            if (high != NULL)
                lone_surrogate(s, high);
            s->p++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c == '\\' && ++s->p >= s->end)
            return 0;
        if (c != '\\' || *s->p != 'u') {
            if (c == '\\' && (*s->p == '\0' || strchr("\"\\/bfnrt", *s->p) == NULL))
                return 0;
            if (high != NULL)
                lone_surrogate(s, high);
            high = NULL;
            continue;
        }
        for (int i = 0; i < 4; i++)
            if (++s->p >= s->end || !isxdigit((unsigned char)*s->p))
                return 0;
        const char *digits = s->p - 3;
        unsigned v = hex4(digits);
        if (v >= 0xdc00 && v <= 0xdfff) {
            if (high == NULL)
                lone_surrogate(s, digits);
            high = NULL; /* a pair, or a lone low half */
        } else {
            if (high != NULL)
                lone_surrogate(s, high);
            high = v >= 0xd800 && v <= 0xdbff ? digits : NULL;
        }
    }
    return 0;
}

static int scan_container(json_scan_t *s, char close, int is_object)
{
    if (++s->depth > JSON_MAX_DEPTH)
        return 0;
    s->p++; /* the opening bracket */
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return 1;
    }
    for (;;) {
        if (is_object) {
            if (!scan_string(s))
                return 0;
            skip_ws(s);
            if (s->p >= s->end || *s->p++ != ':')
                return 0;
            skip_ws(s);
        }
        if (!scan_value(s))
            return 0;
        skip_ws(s);
        if (s->p >= s->end)
            return 0;
        if (*s->p == close) {
            s->p++;
            s->depth--;
            return 1;
        }
        if (*s->p++ != ',')
            return 0;
        skip_ws(s);
    }
}

static int scan_value(json_scan_t *s)
{
    if (s->p >= s->end)
        return 0;
    switch (*s->p) {
    case '{':
        return scan_container(s, '}', 1);
    case '[':
        return scan_container(s, ']', 0);
    case '"':
        return scan_string(s);
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    case 'n':
        return scan_literal(s, "null");
    default:
        return scan_number(s);
    }
}

/* 1 if `text` is exactly one JSON value with optional whitespace around it;
 * counts lone surrogates into *lone, and rewrites them in `fix` when given. */
static int json_is_strict(const char *text, size_t len, char *fix, size_t *lone)
{
    json_scan_t s = {text, text + len, 0, text, fix, 0};
    skip_ws(&s);
    if (!scan_value(&s))
        return 0;
    skip_ws(&s);
    *lone = s.lone;
    return s.p == s.end;
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
    if ((*err = prescan_json_strings(body, len)) != NULL)
        return -1;
    size_t lone = 0;
    cJSON *json = NULL;
    if (json_is_strict(body, len, NULL, &lone)) {
        char *fixed = lone > 0 ? malloc(len) : NULL; /* rare: only for lone surrogates */
        if (fixed != NULL) {
            memcpy(fixed, body, len);
            if (json_is_strict(body, len, fixed, &lone))
                json = cJSON_ParseWithLength(fixed, len);
            free(fixed);
        } else if (lone == 0) {
            json = cJSON_ParseWithLength(body, len);
        }
    }
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
