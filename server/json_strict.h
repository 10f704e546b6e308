/*
 * json_strict.h - JSON.parse's syntax (RFC 8259), checked before cJSON parses
 * a request body.
 *
 * cJSON is lenient where JSON.parse is not: leading zeros, "1.", raw control
 * characters inside strings and between tokens; and it decodes the escape
 * \u0000 to a NUL byte that silently cuts its C string short. The reference
 * app answers such bodies with 400, so notesd checks them first, in one pass
 * over the text that stops at the first fault in reading order and names it.
 * A lone UTF-16 surrogate escape, which JSON.parse keeps (and node-postgres
 * stores as U+FFFD) but cJSON refuses, is rewritten to \ufffd in a copy.
 *
 * A pure function with no I/O, so unit tests and fuzzers call it directly.
 */
#ifndef NOTESD_JSON_STRICT_H
#define NOTESD_JSON_STRICT_H

#include <stddef.h>

/* The reasons json_strict_check gives, each fit for a 400 body. */
#define JSON_STRICT_INVALID "request body is not valid JSON"
#define JSON_STRICT_CONTROL "request body is not valid JSON (control character in a string)"
#define JSON_STRICT_NUL "strings must not contain NUL (\\u0000)"

/* Returns NULL when `text` is exactly one JSON value with optional whitespace
 * around it, nested at most 512 deep; otherwise the reason for the first fault
 * in reading order: JSON_STRICT_CONTROL for a raw control character in a
 * string, JSON_STRICT_NUL for a \u0000 escape, JSON_STRICT_INVALID for any
 * other. On success *fixed is NULL, or, when the text has lone surrogate
 * escapes, a copy of its `len` bytes in which each says \ufffd, for cJSON to
 * parse instead. Ownership: the caller frees *fixed. */
const char *json_strict_check(const char *text, size_t len, char **fixed);

#endif
