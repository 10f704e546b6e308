/*
 * json_strict.c - JSON.parse's syntax, checked in one pass (see json_strict.h):
 * a recursive-descent scan of RFC 8259's grammar that builds nothing.
 */
#include <stdlib.h>
#include <string.h>
#include "hex.h"
#include "json_strict.h"

typedef struct json_scan {
    const char *p, *end;
    int depth;
    const char *start; /* the text, for offsets into `fix` */
    size_t len;        /* of the text */
    char *fix;         /* NULL, or a copy of the text in which lone surrogates are rewritten */
    const char *err;   /* a fault with a name of its own, when that is what stopped the scan */
} json_scan_t;

/* Deeper nesting is refused: the scan is recursive, and so is cJSON. */
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

/* A \u escape of a UTF-16 surrogate without its partner. JSON.parse keeps it
 * in the string, and node-postgres's UTF-8 encoding stores it as U+FFFD; cJSON
 * refuses it, so the copy it parses says \ufffd instead. The copy is made at
 * the first one: most bodies have none and are parsed as they are. */
static void lone_surrogate(json_scan_t *s, const char *digits)
{
    if (s->fix == NULL) {
        s->fix = malloc(s->len);
        if (s->fix == NULL)
            abort(); /* out of memory: see the policy in main.c */
        memcpy(s->fix, s->start, s->len);
    }
    memcpy(s->fix + (digits - s->start), "fffd", 4);
}

/* Stops the scan at a fault that has a name of its own. */
static int fail_with(json_scan_t *s, const char *err)
{
    s->err = err;
    return 0;
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
        if (c < 0x20) /* JSON.parse refuses it; cJSON would keep it */
            return fail_with(s, JSON_STRICT_CONTROL);
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
        uint64_t v;
        if (s->end - s->p <= 4 || hex_read(s->p + 1, 4, HEX_ANY_CASE, &v) != 0)
            return 0;
        s->p += 4;
        const char *digits = s->p - 3;
        if (v == 0) /* cJSON would decode it to a NUL that cuts its C string short */
            return fail_with(s, JSON_STRICT_NUL);
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

const char *json_strict_check(const char *text, size_t len, char **fixed)
{
    json_scan_t s = {text, text + len, 0, text, len, NULL, NULL};
    skip_ws(&s);
    if (scan_value(&s)) {
        skip_ws(&s);
        if (s.p == s.end) {
            *fixed = s.fix;
            return NULL;
        }
    }
    free(s.fix);
    *fixed = NULL;
    return s.err != NULL ? s.err : JSON_STRICT_INVALID;
}
