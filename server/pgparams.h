/*
 * pgparams.h - how every connection of the pools opens: libpq's connection
 * parameters, built once at start-up and shared, read-only, by every loop's pool.
 *
 * Owns the keyword and value arrays handed to PQconnectStartParams, the
 * `options` string with the session settings the result parsing relies on
 * (DateStyle ISO, IntervalStyle postgres, extra_float_digits, and
 * statement_timeout from QUERY_TIMEOUT_MS), and what libpq would otherwise
 * look up at every connect, on the loop: the numeric address of every host
 * (whether DB_URL, a service file or PGHOST names it), which getaddrinfo()
 * resolves, the user name (the process's own when nothing names one), which
 * getpwuid_r() reads through NSS, and the password file's path. Those are
 * looked up here, once, at start-up, where blocking is allowed. Everything is
 * sent in the startup packet, so whatever defaults the database or its role
 * carry cost no round trip and change no byte of a response.
 */
#ifndef NOTESD_PGPARAMS_H
#define NOTESD_PGPARAMS_H

#include <stddef.h>
#include "compiler.h"
#include "pgconn.h"
#include "pool.h"

typedef struct pgparams {
    const char *keywords[16], *values[16]; /* for PQconnectStartParams, NULL-terminated */
    char *options;        /* libpq's `options`: the URL's (or the service's, or PGOPTIONS), then our
                             -c settings */
    char *host;           /* the host list hostaddr matches (the URL's, the service's or PGHOST) */
    char *hostaddr;       /* numeric address per host, or NULL when no name needs one */
    char *user;           /* the user to connect as: named by the URL, service or PGUSER, or the
                             process's user; NULL if none is known (libpq then fails the connect) */
    char *passfile;       /* the password file when no password is given, or NULL */
    pgconn_params_t conn; /* what pgconn_start takes: the above, pipeline mode (--pipeline
                             or --prepared), the statements, and whether they are
                             prepared (--prepared) */
    char target[256];     /* the database as DB_URL names it, for the start-up line:
                             user@host:port/dbname, without the password */
} pgparams_t;

/* Parses db_url and builds the parameters for pools with `pool`'s settings
 * (its query timeout, --prepared and --pipeline; every loop's pool has the
 * same). What db_url leaves out is filled in as libpq would (the service file,
 * then the environment, then libpq's defaults), and every host name (one, or
 * a comma-separated list) is resolved into a matching hostaddr list: the only
 * blocking DNS lookups.
 * Returns 0, or -1 with a one-line message in `err` when db_url cannot be
 * parsed or a host name cannot be resolved. Ownership: `p` keeps pointers to
 * db_url and `statements`, which must outlive it; pgparams_free frees the rest. */
NOTESD_MUSTCHECK int pgparams_build(pgparams_t *p, const char *db_url, const pool_settings_t *pool,
                                    const pgconn_statement_t *statements, size_t nstatements,
                                    char *err, size_t errlen);

void pgparams_free(pgparams_t *p);

#endif
