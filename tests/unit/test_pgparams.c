/*
 * test_pgparams.c - unit tests of server/pgparams.c: what libpq is given to
 * open each connection. Nothing connects; host names are resolved for real
 * ("localhost"), as at start-up.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "pgparams.h"

static const pgconn_statement_t statements[] = {
    {"test_one", "select $1::int", 1},
    {"test_two", "select 2", 0},
};
#define NSTATEMENTS (sizeof(statements) / sizeof(statements[0]))

/* The pool settings the parameters depend on: config.c's defaults. */
static pool_settings_t defaults(void)
{
    return (pool_settings_t){.max = 20, .query_timeout_ms = 30000, .prepared = 0, .depth = 0};
}

/* The value libpq gets for `keyword`, and whether it comes after dbname (and so wins over the
 * URL). */
static const char *param(const pgparams_t *p, const char *keyword, int *after_url)
{
    int seen_url = 0;
    for (size_t i = 0; p->keywords[i] != NULL; i++) {
        if (strcmp(p->keywords[i], "dbname") == 0)
            seen_url = 1;
        if (strcmp(p->keywords[i], keyword) == 0) {
            if (after_url != NULL)
                *after_url = seen_url;
            return p->values[i];
        }
    }
    return NULL;
}

static void a_malformed_url_is_refused(void)
{
    pgparams_t p;
    pool_settings_t s = defaults();
    char err[256] = "";

    CHECK_INT_EQ(
        pgparams_build(&p, "postgresql://[::1/x", &s, statements, NSTATEMENTS, err, sizeof(err)),
        -1);
    CHECK(strstr(err, "DB_URL") != NULL);
    err[0] = '\0';
    CHECK_INT_EQ(
        pgparams_build(&p, "host=127.0.0.1 port", &s, statements, NSTATEMENTS, err, sizeof(err)),
        -1);
    CHECK(strstr(err, "DB_URL") != NULL);
}

/* DateStyle and friends go in libpq's options, after the URL's own options. */
static void connection_parameters_carry_the_session_settings(void)
{
    pgparams_t p;
    pool_settings_t s = defaults();
    char err[256] = "";
    int after_url = 0;

    CHECK_INT_EQ(pgparams_build(&p,
                                "postgresql://nobody@127.0.0.1:1/none?options=-c%20search_path%3Dx",
                                &s, statements, NSTATEMENTS, err, sizeof(err)),
                 0);
    CHECK_STR_EQ(param(&p, "options", &after_url),
                 "-c search_path=x -c DateStyle=ISO -c IntervalStyle=postgres "
                 "-c extra_float_digits=1 -c statement_timeout=30000");
    CHECK(after_url);
    CHECK_STR_EQ(param(&p, "client_encoding", &after_url), "UTF8");
    CHECK(after_url);
    CHECK_STR_EQ(param(&p, "sslmode", &after_url), "disable");
    CHECK(!after_url);                /* the URL may ask for TLS */
    CHECK_INT_EQ(p.conn.prepared, 0); /* unnamed statements without --prepared */
    CHECK(p.conn.statements == statements);
    CHECK_INT_EQ(p.conn.pipeline, 0); /* nor pipeline mode without --pipeline */
    CHECK(p.conn.keywords == p.keywords && p.conn.values == p.values);
    pgparams_free(&p);

    /* PGOPTIONS would be hidden by the options keyword: it is merged instead. */
    s.query_timeout_ms = 0;
    setenv("PGOPTIONS", "-c work_mem=8MB", 1);
    CHECK_INT_EQ(pgparams_build(&p, "postgresql://nobody@127.0.0.1:1/none", &s, statements,
                                NSTATEMENTS, err, sizeof(err)),
                 0);
    unsetenv("PGOPTIONS");
    CHECK_STR_EQ(param(&p, "options", NULL),
                 "-c work_mem=8MB -c DateStyle=ISO -c IntervalStyle=postgres "
                 "-c extra_float_digits=1");
    pgparams_free(&p);
}

/* With --prepared, a connection prepares each statement on its first use, in
 * pipeline mode so that the prepare and the query leave together, without a
 * round trip of its own; --pipeline alone prepares nothing. */
static void prepared_and_pipeline_choose_pipeline_mode(void)
{
    pgparams_t p;
    pool_settings_t s = defaults();
    char err[256] = "";

    s.prepared = 1;
    CHECK_INT_EQ(pgparams_build(&p, "postgresql://nobody@127.0.0.1:1/none", &s, statements,
                                NSTATEMENTS, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(p.conn.prepared, 1);
    CHECK_INT_EQ(p.conn.nstatements, NSTATEMENTS);
    CHECK(p.conn.statements == statements);
    CHECK_INT_EQ(p.conn.pipeline, 1);
    pgparams_free(&p);

    s.prepared = 0;
    s.depth = 8;
    CHECK_INT_EQ(pgparams_build(&p, "postgresql://nobody@127.0.0.1:1/none", &s, statements,
                                NSTATEMENTS, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(p.conn.prepared, 0);
    CHECK_INT_EQ(p.conn.pipeline, 1);
    pgparams_free(&p);
}

/* Every host of a list gets a numeric address, so libpq never looks a name up. */
static void every_host_of_a_list_is_resolved(void)
{
    static const struct {
        const char *url, *hostaddr;
    } cases[] = {
        {"postgresql://nobody@localhost:1,127.0.0.1:2/none", "127.0.0.1,127.0.0.1"},
        {"host=localhost,127.0.0.1 port=1,2 dbname=none", "127.0.0.1,127.0.0.1"},
        {"host=/tmp,localhost port=1,2 dbname=none", ",127.0.0.1"},
        {"host=/tmp dbname=none", NULL},                         /* sockets only */
        {"host=localhost hostaddr=127.0.0.2 dbname=none", NULL}, /* the URL's own */
        {"dbname=none", NULL},                                   /* libpq's default socket */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pgparams_t p;
        pool_settings_t s = defaults();
        char err[256] = "";
        CHECK_INT_EQ(
            pgparams_build(&p, cases[i].url, &s, statements, NSTATEMENTS, err, sizeof(err)), 0);
        const char *got = param(&p, "hostaddr", NULL);
        if (cases[i].hostaddr == NULL)
            CHECK(got == NULL);
        else
            CHECK(got != NULL && strcmp(got, cases[i].hostaddr) == 0);
        pgparams_free(&p);
    }
}

/* What the URL leaves out is looked up at start-up wherever libpq would find it
 * (PGHOST, a service file, PGUSER, the process's user), and handed to libpq
 * named: no getaddrinfo and no NSS look-up is left for the loop. */
static void hosts_and_user_from_outside_the_url_are_looked_up_once(void)
{
    pool_settings_t s = defaults();
    char err[256] = "";
    pgparams_t p;
    struct passwd *me = getpwuid(geteuid());

    setenv("PGHOST", "localhost", 1);
    CHECK_INT_EQ(
        pgparams_build(&p, "postgresql:///none", &s, statements, NSTATEMENTS, err, sizeof(err)), 0);
    CHECK_STR_EQ(param(&p, "host", NULL), "localhost");
    CHECK_STR_EQ(param(&p, "hostaddr", NULL), "127.0.0.1");
    CHECK(me != NULL && param(&p, "user", NULL) != NULL &&
          strcmp(param(&p, "user", NULL), me->pw_name) == 0);
    pgparams_free(&p);
    setenv("PGUSER", "someone", 1);
    setenv("HOME", "/nowhere", 1);
    CHECK_INT_EQ(pgparams_build(&p, "dbname=none", &s, statements, NSTATEMENTS, err, sizeof(err)),
                 0);
    CHECK_STR_EQ(param(&p, "user", NULL), "someone");
    CHECK_STR_EQ(param(&p, "passfile", NULL), "/nowhere/.pgpass");
    pgparams_free(&p);
    CHECK_INT_EQ(pgparams_build(&p, "postgresql://u:secret@127.0.0.1/none", &s, statements,
                                NSTATEMENTS, err, sizeof(err)),
                 0);
    CHECK_STR_EQ(param(&p, "user", NULL), "u");
    CHECK(param(&p, "passfile", NULL) == NULL); /* a password is given */
    CHECK_STR_EQ(param(&p, "hostaddr", NULL), "127.0.0.1");
    pgparams_free(&p);
    unsetenv("PGHOST");
    unsetenv("PGUSER");

    /* A service file: its host is resolved, and the URL's own values win over it. */
    char dir[] = "/tmp/test_pgparams.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/pg_service.conf", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs("[notesd_svc]\nhost=localhost\nport=1\nuser=svcuser\ndbname=none\n", f);
        fclose(f);
    }
    setenv("PGSERVICEFILE", path, 1);
    CHECK_INT_EQ(pgparams_build(&p, "postgresql://?service=notesd_svc", &s, statements, NSTATEMENTS,
                                err, sizeof(err)),
                 0);
    CHECK_STR_EQ(param(&p, "hostaddr", NULL), "127.0.0.1");
    CHECK_STR_EQ(param(&p, "user", NULL), "svcuser");
    pgparams_free(&p);
    CHECK_INT_EQ(pgparams_build(&p, "service=notesd_svc user=mine", &s, statements, NSTATEMENTS,
                                err, sizeof(err)),
                 0);
    CHECK_STR_EQ(param(&p, "user", NULL), "mine");
    CHECK(getenv("PGSERVICE") == NULL); /* borrowed for the look-up, then given back */
    pgparams_free(&p);
    unsetenv("PGSERVICEFILE");
    unlink(path);
    rmdir(dir);
}

/* libpq reads its own variables; the tests must not depend on the caller's. */
static void unset_environment(void)
{
    char names[] = "PGCONNECT_TIMEOUT PGHOST PGHOSTADDR PGOPTIONS PGPORT PGSERVICE PGSSLMODE "
                   "PGUSER PGPASSWORD PGPASSFILE PGSERVICEFILE";
    char *save = NULL;
    for (char *name = strtok_r(names, " ", &save); name != NULL; name = strtok_r(NULL, " ", &save))
        unsetenv(name);
}

int main(void)
{
    unset_environment();
    CHECK_RUN(a_malformed_url_is_refused);
    CHECK_RUN(connection_parameters_carry_the_session_settings);
    CHECK_RUN(prepared_and_pipeline_choose_pipeline_mode);
    CHECK_RUN(every_host_of_a_list_is_resolved);
    CHECK_RUN(hosts_and_user_from_outside_the_url_are_looked_up_once);
    return check_summary();
}
