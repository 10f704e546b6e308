/*
 * knob.h - the numbers a route reads from its request: a query parameter, or
 * its path's :param, each a whole number in a range, or a 400 that names it.
 *
 * Every route that takes a number reads it here, through the one parser of
 * numbers (validate_whole_number; a query string's value decoded first, as
 * all of them are: '+' and %XX), and answers the same 400 when it is not one:
 * {"error":"NAME must be a whole number from LO to HI"}.
 */
#ifndef NOTESD_KNOB_H
#define NOTESD_KNOB_H

#include <stdint.h>
#include "compiler.h"
#include "request.h"

/* Reads query parameter `name` (its first occurrence) as a whole number in
 * lo..hi. Returns 1 with *out set when it is there, 0 when it is absent or
 * has no '=' (*out untouched), -1 after answering 400 naming it. */
NOTESD_MUSTCHECK int knob_query(notesd_req_t *r, const char *name, uint64_t lo, uint64_t hi,
                                uint64_t *out);

/* Reads the route's :param (already percent-decoded: r->param) as a whole
 * number in lo..hi, called `name` in the 400. Returns 0 with *out set, or -1
 * after answering 400. */
NOTESD_MUSTCHECK int knob_path(notesd_req_t *r, const char *name, uint64_t lo, uint64_t hi,
                               uint64_t *out);

#endif
