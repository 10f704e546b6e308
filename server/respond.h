/*
 * respond.h - the ways a handler answers a request.
 *
 * Every response sets Content-Length (h2o would otherwise use chunked
 * encoding) and sends no body for HEAD. Bodies must live in req->pool or be
 * static: h2o writes them after the handler has returned. Each takes the
 * request's context, which adds Server-Timing to a measured response.
 */
#ifndef NOTESD_RESPOND_H
#define NOTESD_RESPOND_H

#include <h2o.h>
#include "request.h"

/* Express's Content-Type for res.json() and for res.send() of a string. */
#define CT_JSON "application/json; charset=utf-8"
#define CT_HTML "text/html; charset=utf-8"
#define CT_TEXT "text/plain; charset=utf-8"

/* Answers `status` with `body` (`len` bytes) of `content_type`. A status that
 * carries no content (1xx, 204, 205, 304: respond_status_has_content) is sent
 * without a body, Content-Type (205 keeps one when given) or Content-Length
 * (205 says 0), so `respond(r, 204, NULL, NULL, 0)` is 204 No Content. */
void respond(notesd_req_t *r, int status, const char *content_type, const char *body, size_t len);

/* Sets what respond() sets before its body (status and reason, Content-Length
 * `len`, Content-Type, Server-Timing), for handlers that then stream the body
 * themselves with h2o_start_response and h2o_send. A status that carries no
 * content (respond_status_has_content) must be sent without a body: a 1xx, 204
 * or 304 gets no Content-Length and no Content-Type, a 205 `Content-Length: 0`
 * (as Express 5 sends it). respond() drops the body of those itself. */
void respond_start(notesd_req_t *r, int status, const char *content_type, size_t len);

/* 0 for the statuses RFC 9110 forbids content in (1xx, 204, 205, 304), else 1. */
int respond_status_has_content(int status);

/* {"error":"<message>"}; `message` is escaped, so any text is safe. */
void respond_error(notesd_req_t *r, int status, const char *message);

/* 405 with an Allow header listing `allow`, e.g. "GET, HEAD". */
void respond_method_not_allowed(notesd_req_t *r, const char *allow);

/* 503 with Retry-After: 1. */
void respond_unavailable(notesd_req_t *r, const char *message);

/* Express's sendStatus(404): text/plain "Not Found". */
void respond_not_found_text(notesd_req_t *r);

/* 1 for GET and HEAD. */
int req_is_get(h2o_req_t *req);

/* 1 for HEAD: headers only. */
int req_is_head(h2o_req_t *req);

#endif
