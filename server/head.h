/*
 * head.h - what notesd reads of an HTTP request head itself, where h2o 2.2.5
 * does not: where the path of an absolute-form target starts, and the fields
 * that frame an HTTP/1 request's body.
 *
 * Pure functions with no I/O, like validate.h's, so unit tests call them
 * directly; the dispatcher (dispatch.c) is their user.
 */
#ifndef NOTESD_HEAD_H
#define NOTESD_HEAD_H

#include <stddef.h>
#include "compiler.h"

/* Where the origin-form path starts in a request target (RFC 9112 section
 * 3.2): 0 for "/path", the offset just past the authority for the absolute
 * form "http://host:port/path" (a scheme of http or https, any case); the
 * path there may be empty ("http://host"), which means "/". SIZE_MAX for
 * anything else ("*", "host/path"). */
size_t head_origin_form(const char *target, size_t len);

/* Checks the framing fields of an HTTP/1 request head, as h2o 2.2.5 does not:
 * a second Content-Length field, or Content-Length together with
 * Transfer-Encoding, makes the body's length ambiguous (RFC 9112 section
 * 6.3), so the request must be refused and the connection closed. Node's
 * parser, under Express, refuses a repeated Content-Length even when the
 * values agree, and so does this. `head` starts with the request line; the
 * scan stops at the empty line that ends the head, or at `len`. Returns 0, or
 * -1 with *err set to a static message for the 400 body. */
NOTESD_MUSTCHECK int head_framing(const char *head, size_t len, const char **err);

/* A field value as its parsers read it: without the spaces and tabs before
 * and after it, which RFC 9110 section 5.5 says are not part of it (h2o 2.2.5
 * keeps the ones after it, and HTTP/2 carries whatever the client sent).
 * Moves *value past the leading ones and returns the length without the
 * trailing ones. */
size_t head_trim(const char **value, size_t len);

#endif
