/*
 * pgparams.c - libpq's connection parameters, built once at start-up (see pgparams.h):
 * DB_URL parsed, with what the service file and the environment add to it, every host
 * name resolved, the user named, our session settings and defaults placed around the
 * URL's.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pgparams.h"

/* The value of `keyword` in parsed connection options, or NULL when unset or empty. */
static const char *conninfo_value(const PQconninfoOption *opts, const char *keyword)
{
    for (const PQconninfoOption *o = opts; o->keyword != NULL; o++)
        if (strcmp(o->keyword, keyword) == 0)
            return o->val != NULL && o->val[0] != '\0' ? o->val : NULL;
    return NULL;
}

/* libpq's defaults for what the URL leaves out, as it would fill them in when
 * connecting: the service file's values (the URL's `service`, else PGSERVICE),
 * then the environment's (PGHOST, PGPORT, PGUSER, PGOPTIONS...), then its
 * compiled-in ones, the user being the name of the process's user. Read once,
 * here: libpq would otherwise look them up again at every connect, the user
 * through NSS (getpwuid_r), which may block. NULL when out of memory. */
static PQconninfoOption *libpq_defaults(const PQconninfoOption *url)
{
    const char *service = conninfo_value(url, "service");
    const char *was = getenv("PGSERVICE");
    char *saved = was != NULL ? strdup(was) : NULL;
    /* PQconndefaults reads a service only from PGSERVICE; start-up is single-threaded. */
    if (service != NULL)
        setenv("PGSERVICE", service, 1);
    PQconninfoOption *defaults = PQconndefaults();
    if (service != NULL) {
        if (saved != NULL)
            setenv("PGSERVICE", saved, 1);
        else
            unsetenv("PGSERVICE");
    }
    free(saved);
    return defaults;
}

/* The value libpq will use for `keyword`: the URL's, or else its default
 * (libpq_defaults), or NULL when neither sets it. */
static const char *effective(const PQconninfoOption *url, const PQconninfoOption *defaults,
                             const char *keyword)
{
    const char *v = conninfo_value(url, keyword);
    return v != NULL || defaults == NULL ? v : conninfo_value(defaults, keyword);
}

/* Resolves one host name into a numeric address in `out`. IPv4 is preferred
 * for names such as "localhost", like node-postgres on most systems. */
static int resolve_one(const char *host, char *out, size_t outlen, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve database host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    struct addrinfo *pick = res;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    rc = getnameinfo(pick->ai_addr, pick->ai_addrlen, out, outlen, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve database host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

/* Builds params->hostaddr: for each entry of the comma-separated host list
 * (the URL's, the service file's or PGHOST), its numeric address, or an empty
 * entry for a Unix-socket directory (libpq then uses host as given). host
 * itself is kept, and given to libpq with the list, for TLS, Kerberos and
 * error messages. Nothing to do without a host, or when a hostaddr is set. */
static int resolve_hosts(pgparams_t *params, const PQconninfoOption *url,
                         const PQconninfoOption *defaults, char *err, size_t errlen)
{
    const char *hosts = effective(url, defaults, "host");
    if (hosts == NULL || effective(url, defaults, "hostaddr") != NULL)
        return 0;

    size_t cap = 1, named = 0, entries = 0;
    for (const char *h = hosts; h != NULL; h = strchr(h, ','), h = h != NULL ? h + 1 : NULL)
        cap += INET6_ADDRSTRLEN + 1;
    char *list = calloc(1, cap), *p = list;
    if (list == NULL)
        abort();
    for (const char *h = hosts, *end;; h = end + 1) {
        end = strchr(h, ',');
        size_t len = end != NULL ? (size_t)(end - h) : strlen(h);
        char name[256];
        if (len >= sizeof(name)) {
            snprintf(err, errlen, "database host name is too long: '%.*s...'", 40, h);
            free(list);
            return -1;
        }
        memcpy(name, h, len);
        name[len] = '\0';
        if (entries++ > 0)
            *p++ = ',';
        /* A Unix-socket directory needs no lookup; an empty entry means "use host". */
        if (len > 0 && name[0] != '/' && name[0] != '@') {
            if (resolve_one(name, p, INET6_ADDRSTRLEN, err, errlen) != 0) {
                free(list);
                return -1;
            }
            p += strlen(p);
            named++;
        }
        if (end == NULL)
            break;
    }
    if (named == 0) {
        free(list); /* sockets only: libpq does no lookup */
        return 0;
    }
    params->hostaddr = list;
    params->host = strdup(hosts);
    if (params->host == NULL)
        abort();
    return 0;
}

/* The password file libpq reads when no password is given: the one named, or
 * ~/.pgpass, found here once (libpq looks the home directory up through NSS at
 * every connect when HOME is unset). NULL when a password is given or no home
 * directory is known. Ownership: the caller frees it. */
static char *password_file(const PQconninfoOption *url, const PQconninfoOption *defaults)
{
    if (effective(url, defaults, "password") != NULL)
        return NULL;
    const char *named = effective(url, defaults, "passfile");
    if (named != NULL)
        return strdup(named);
    const char *home = getenv("HOME");
    char buf[1024];
    struct passwd pw, *found = NULL;
    if ((home == NULL || home[0] == '\0') &&
        getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        home = found->pw_dir;
    if (home == NULL || home[0] == '\0')
        return NULL;
    size_t len = strlen(home) + sizeof("/.pgpass");
    char *path = malloc(len);
    if (path == NULL)
        abort();
    snprintf(path, len, "%s/.pgpass", home);
    return path;
}

/* The session settings that rendering depends on, as `-c` switches of libpq's
 * `options` (sent in the startup packet: no round trip). They come after the
 * options the URL (or PGOPTIONS) gives, so they win over them, as they win over
 * the database's and the role's defaults:
 * - DateStyle ISO: render.c converts created_at from ISO text; the database
 *   may say 'SQL, DMY'. TimeZone may be anything: the conversion reads the offset.
 * - IntervalStyle postgres and extra_float_digits 1 (shortest exact output):
 *   the server defaults, fixed here so that no future interval or float column
 *   is read in a format a database was set to.
 * - statement_timeout: the server's own deadline, QUERY_TIMEOUT_MS; with 0
 *   none is sent and the database's or the URL's applies.
 * client_encoding is a libpq keyword of its own (set after the URL, so UTF-8
 * wins too): a startup parameter overrides an `options` switch. */
static void build_options(pgparams_t *p, const PQconninfoOption *url,
                          const PQconninfoOption *defaults, int query_timeout_ms)
{
    /* The URL's, the service file's or PGOPTIONS: setting `options` would hide them. */
    const char *theirs = effective(url, defaults, "options");
    char timeout[64] = "";
    if (query_timeout_ms > 0)
        snprintf(timeout, sizeof(timeout), " -c statement_timeout=%d", query_timeout_ms);
    const char *ours = "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=1";
    size_t cap = (theirs != NULL ? strlen(theirs) + 1 : 0) + strlen(ours) + strlen(timeout) + 1;
    p->options = malloc(cap);
    if (p->options == NULL)
        abort();
    snprintf(p->options, cap, "%s%s%s%s", theirs != NULL ? theirs : "", theirs != NULL ? " " : "",
             ours, timeout);
}

/* The start-up line's name for the database: DB_URL's own fields, no password. */
static void describe(pgparams_t *p, const PQconninfoOption *url)
{
    const char *user = conninfo_value(url, "user"), *host = conninfo_value(url, "host"),
               *port = conninfo_value(url, "port"), *dbname = conninfo_value(url, "dbname");
    user = user != NULL ? user : "";
    port = port != NULL ? port : "";
    snprintf(p->target, sizeof(p->target), "%s%s%s%s%s/%s", user, user[0] ? "@" : "",
             host != NULL && host[0] ? host : "(default)", port[0] ? ":" : "", port,
             dbname != NULL ? dbname : "");
}

int pgparams_build(pgparams_t *p, const char *db_url, const pool_settings_t *pool,
                   const pgconn_statement_t *statements, size_t nstatements, char *err,
                   size_t errlen)
{
    char *parse_err = NULL;
    size_t n = 0;

    memset(p, 0, sizeof(*p));
    PQconninfoOption *opts = PQconninfoParse(db_url, &parse_err);
    if (opts == NULL) {
        snprintf(err, errlen, "DB_URL is not a valid connection string: %s",
                 parse_err != NULL ? parse_err : "out of memory");
        PQfreemem(parse_err);
        return -1;
    }
    describe(p, opts);
    PQconninfoOption *defaults = libpq_defaults(opts);
    int rc = resolve_hosts(p, opts, defaults, err, errlen);
    if (rc == 0) {
        build_options(p, opts, defaults, pool->query_timeout_ms);
        /* Named, so that libpq never asks NSS for the process's user name. */
        const char *user = effective(opts, defaults, "user");
        if (user != NULL && (p->user = strdup(user)) == NULL)
            abort();
        p->passfile = password_file(opts, defaults);
    }
    PQconninfoFree(defaults);
    PQconninfoFree(opts);
    if (rc != 0)
        return -1;
    /* Defaults the URL may override, since it comes after them: no SSL or GSS
     * negotiation (node-postgres does none by default, and each costs a round
     * trip), and a name that shows in pg_stat_activity. */
    p->keywords[n] = "sslmode", p->values[n++] = "disable";
    p->keywords[n] = "gssencmode", p->values[n++] = "disable";
    p->keywords[n] = "application_name", p->values[n++] = "notesd";
    p->keywords[n] = "dbname", p->values[n++] = db_url;
    /* What the parsing of results needs, after the URL so that it wins. */
    p->keywords[n] = "client_encoding", p->values[n++] = "UTF8";
    p->keywords[n] = "options", p->values[n++] = p->options;
    /* What the URL, the service file or the environment gave, looked up here once. */
    if (p->hostaddr != NULL) {
        p->keywords[n] = "host", p->values[n++] = p->host;
        p->keywords[n] = "hostaddr", p->values[n++] = p->hostaddr;
    }
    if (p->user != NULL)
        p->keywords[n] = "user", p->values[n++] = p->user;
    if (p->passfile != NULL)
        p->keywords[n] = "passfile", p->values[n++] = p->passfile;
    p->keywords[n] = NULL, p->values[n] = NULL;

    /* Pipeline mode for --pipeline, and for --prepared too: each statement is
     * prepared in the same pipeline as its first query on a connection, which
     * saves the round trip of a separate PREPARE (the queries' messages on the
     * wire are the same in both modes). */
    p->conn.keywords = p->keywords;
    p->conn.values = p->values;
    p->conn.pipeline = pool->depth > 0 || pool->prepared;
    assert(nstatements <= PGCONN_STATEMENTS_MAX);
    p->conn.statements = statements;
    p->conn.nstatements = nstatements;
    p->conn.prepared = pool->prepared;
    p->conn.depth = pool->depth > 0 ? (unsigned)pool->depth : 1;
    return 0;
}

void pgparams_free(pgparams_t *p)
{
    free(p->options);
    free(p->host);
    free(p->hostaddr);
    free(p->user);
    free(p->passfile);
    memset(p, 0, sizeof(*p));
}
