/*
 * knob.c - a route's numbers, or its 400 (see knob.h).
 */
#include <stdio.h>
#include "knob.h"
#include "respond.h"
#include "validate.h"

/* The 400 for a knob that is not a whole number in lo..hi. */
static void refuse(notesd_req_t *r, const char *name, uint64_t lo, uint64_t hi)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "%s must be a whole number from %llu to %llu", name,
             (unsigned long long)lo, (unsigned long long)hi);
    respond_error(r, 400, msg);
}

int knob_query(notesd_req_t *r, const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
    h2o_iovec_t query = request_query(r);
    uint64_t v = 0;
    int found = validate_query_number(query.base, query.len, name, hi, &v);
    if (found < 0 || (found == 1 && v < lo)) {
        refuse(r, name, lo, hi);
        return -1;
    }
    if (found == 1)
        *out = v;
    return found;
}

int knob_path(notesd_req_t *r, const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (validate_whole_number(r->param.base, r->param.len, hi, &v) != VALIDATE_NUMBER || v < lo) {
        refuse(r, name, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}
