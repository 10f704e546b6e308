/*
 * dispatch.h - the router: where every request starts.
 *
 * Owns the one h2o handler of each port and what every route used to repeat:
 * matching the path the client sent against the rows of the route table
 * (routes.h), as Express's router matches; creating the request's context
 * (request_begin, the one allocation of request state); refusing framing that
 * h2o 2.2.5 lets through; the 404 for paths no row matches and the 405, with
 * its Allow header, for methods a row does not have. Then it calls the row's
 * handler, which answers. h2o itself routes nothing: each port registers the
 * path "/" alone. A request h2o refuses before any handler runs (its body over
 * MAX_BODY_BYTES) is answered through the host's fallback path; there the
 * dispatcher turns h2o's plain-text 413 into notesd's JSON one, and counts it
 * under its route like any other answer.
 */
#ifndef NOTESD_DISPATCH_H
#define NOTESD_DISPATCH_H

#include <h2o.h>
#include "request.h"
#include "routes.h"

/* Registers the rows of `port` behind one dispatcher on the host's path "/",
 * so that a path no row matches gets notesd's JSON 404 on both ports, not
 * h2o's text one, and calls the rows' set-up hooks; and a filter on the host's
 * fallback path that makes h2o's own 413 notesd's. Requests of the port are
 * handled with `settings`, which must last as long as the process. At start-up, before
 * any loop runs. */
void dispatch_register(h2o_hostconf_t *host, enum route_port port,
                       const request_settings_t *settings);

#endif
