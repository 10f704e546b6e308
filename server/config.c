/*
 * config.c - the option table, environment and command-line parsing, --help, --version.
 *
 * Owns the one table of settings. Adding a setting means adding a field to
 * notesd_config_t and one row here; --help, parsing, the man page and the
 * settings table of docs/configuration.md follow from the row (the last two
 * through packaging/docgen.c, which reads the rows with config_option_doc).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <h2o/version.h>
#include <libpq-fe.h>
#include "config.h"
#include "log.h"

/* Written by config_load only; everyone else gets a const pointer. */
static notesd_config_t loaded;

/* OPT_PORT_OR_AUTO: an integer port where 0 means "no such listener" (the
 * metrics and TLS ports), so a free port the kernel picks is spelled "auto". */
/* OPT_CHOICE: one of the words of `choices` ("a|b"), stored as its index. */
enum opt_type { OPT_STRING, OPT_INT, OPT_BOOL, OPT_LOG_LEVEL, OPT_PORT_OR_AUTO, OPT_CHOICE };

/* `text` is the one description of a setting: Markdown's `code` and
 * [links](page.md#anchor) only, links relative to docs/. The man page and
 * docs/configuration.md print it as it is (through packaging/docgen.c); --help
 * prints it as plain text (print_plain), so there is no second version to drift. */
struct option_row {
    const char *flag; /* without the leading "--" */
    const char *env;
    enum opt_type type;
    size_t offset;       /* of the field in notesd_config_t */
    const char *def;     /* default, as text; NULL = unset */
    const char *def_doc; /* what the documentation says of an unset default */
    long min, max;       /* bounds for OPT_INT and OPT_PORT_OR_AUTO */
    const char *text;
    const char *choices; /* OPT_CHOICE's words, in the order of their values */
};

#define FIELD(f) offsetof(notesd_config_t, f)

/* Alphabetical by flag, like --help prints them. */
static const struct option_row options[] = {
    {.flag = "client-timeout-ms",
     .env = "CLIENT_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(client_timeout_ms),
     .def = "10000",
     .min = 1,
     .max = INT_MAX,
     .text =
         "a client gets this long to send a request, and to stay idle between keep-alive requests"},
    {.flag = "db-url",
     .env = "DB_URL",
     .type = OPT_STRING,
     .offset = FIELD(db_url),
     .def_doc = "required",
     .text = "libpq connection URI of the notes database (`postgresql://user@host:5432/notes`); "
             "libpq's `PG*` variables and service file fill in what it leaves out"},
    {.flag = "h2c",
     .env = "H2C",
     .type = OPT_BOOL,
     .offset = FIELD(h2c),
     .def = "0",
     .text = "also speak HTTP/2 over cleartext on the API port: prior knowledge, or `Upgrade: h2c` "
             "(see [HTTP/2 and TLS](api.md#http2-and-tls))"},
    {.flag = "half-close",
     .env = "HALF_CLOSE",
     .type = OPT_CHOICE,
     .offset = FIELD(half_close),
     .def = "abort",
     .choices = "abort|answer",
     .text = "a client that shut down its sending side (FIN) before an answer that waited: "
             "`abort`, as Node's HTTP server under Express (no answer, status 0), or `answer` it "
             "(see [client gone](decisions.md#client-gone))"},
    {.flag = "host",
     .env = "HOST",
     .type = OPT_STRING,
     .offset = FIELD(host),
     .def = "0.0.0.0",
     .text = "address the API listens on"},
    {.flag = "journal",
     .env = "JOURNAL",
     .type = OPT_INT,
     .offset = FIELD(journal),
     .def = "0",
     .min = 0,
     .max = 10000000,
     .text = "keep the last N requests of each loop in the [request journal](journal.md) (`GET "
             "/journal` on the metrics port; 160 bytes a record); `0` = off"},
    {.flag = "journal-token",
     .env = "JOURNAL_TOKEN",
     .type = OPT_STRING,
     .offset = FIELD(journal_token),
     .def_doc = "none: loopback only",
     .text = "lets clients not on loopback read `GET /journal` with `Authorization: Bearer TOKEN`; "
             "without it only clients on this machine may (see [who may read "
             "it](journal.md#who-may-read-it))"},
    {.flag = "lag-interval-ms",
     .env = "LAG_INTERVAL_MS",
     .type = OPT_INT,
     .offset = FIELD(lag_interval_ms),
     .def = "100",
     .min = 1,
     .max = 60000,
     .text = "period of the event-loop lag probe"},
    {.flag = "log-level",
     .env = "LOG_LEVEL",
     .type = OPT_LOG_LEVEL,
     .offset = FIELD(log_level),
     .def = "info",
     .text = "`error`, `warn`, `info` or `debug`"},
    {.flag = "max-body-bytes",
     .env = "MAX_BODY_BYTES",
     .type = OPT_INT,
     .offset = FIELD(max_body_bytes),
     .def = "102400",
     .min = 1,
     .max = 64 * 1024 * 1024,
     .text = "request bodies larger than this get 413 (express.json's `100kb`), on the wire and "
             "again once inflated; a declared `Content-Length` over it is refused from the head "
             "(see [request bodies](decisions.md#request-bodies))"},
    {.flag = "max-connections",
     .env = "MAX_CONNECTIONS",
     .type = OPT_INT,
     .offset = FIELD(max_connections),
     .def_doc = "RLIMIT_NOFILE - 2 x POOL_MAX - 7 x THREADS (8 with TLS) - 31 (22 without the "
                "metrics port)",
     .min = 1,
     .max = INT_MAX,
     .text = "most open API connections, plain and TLS, every loop's together; beyond it new "
             "clients wait in the kernel's backlog (see [admission](decisions.md#admission))"},
    {.flag = "metrics-host",
     .env = "METRICS_HOST",
     .type = OPT_STRING,
     .offset = FIELD(metrics_host),
     .def = "0.0.0.0",
     .text = "address the metrics port listens on"},
    {.flag = "metrics-port",
     .env = "METRICS_PORT",
     .type = OPT_PORT_OR_AUTO,
     .offset = FIELD(metrics_port),
     .def = "9091",
     .min = 0,
     .max = 65535,
     .text = "port of `/metrics`, `/healthz`, `/readyz`, `/journal`, `/openapi.json` and "
             "`/dashboard`, HTTP/1.1 only (see [the port](metrics.md#the-port)); `0` turns it off, "
             "`auto` takes a free port (the start-up line says which)"},
    {.flag = "pipeline",
     .env = "PIPELINE_DEPTH",
     .type = OPT_INT,
     .offset = FIELD(pipeline_depth),
     .def = "0",
     .min = 0,
     .max = 256,
     .text = "libpq pipeline mode: up to this many queries in flight per connection; `0` = off"},
    {.flag = "pool-acquire-timeout-ms",
     .env = "POOL_ACQUIRE_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(pool_acquire_timeout_ms),
     .def = "10000",
     .min = 0,
     .max = INT_MAX,
     .text = "longest wait for a database connection (then 503); `0` = forever"},
    {.flag = "pool-connect-timeout-ms",
     .env = "POOL_CONNECT_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(pool_connect_timeout_ms),
     .def = "5000",
     .min = 1,
     .max = INT_MAX,
     .text = "longest time to open a database connection (libpq enforces its own `connect_timeout` "
             "only in blocking calls)"},
    {.flag = "pool-idle-timeout-ms",
     .env = "POOL_IDLE_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(pool_idle_timeout_ms),
     .def = "10000",
     .min = 1,
     .max = INT_MAX,
     .text = "an idle database connection is closed after this long (pg.Pool's 10 s)"},
    {.flag = "pool-max",
     .env = "POOL_MAX",
     .type = OPT_INT,
     .offset = FIELD(pool_max),
     .def = "20",
     .min = 1,
     .max = 1000,
     .text = "most database connections open at once"},
    {.flag = "pool-queue-max",
     .env = "POOL_QUEUE_MAX",
     .type = OPT_INT,
     .offset = FIELD(pool_queue_max),
     .def = "10000",
     .min = 0,
     .max = INT_MAX,
     .text = "most requests waiting for a database connection (then 503); `0` = no bound"},
    {.flag = "port",
     .env = "PORT",
     .type = OPT_INT,
     .offset = FIELD(port),
     .def = "8080",
     .min = 0,
     .max = 65535,
     .text = "port the API listens on, every loop's; `0` takes a free port (the start-up line says "
             "which)"},
    {.flag = "prepared",
     .env = "PREPARED",
     .type = OPT_BOOL,
     .offset = FIELD(prepared),
     .def = "0",
     .text = "use named prepared statements instead of node-postgres's unnamed ones"},
    {.flag = "primes-max",
     .env = "PRIMES_MAX",
     .type = OPT_INT,
     .offset = FIELD(primes_max),
     .def = "1000000",
     .min = 2,
     .max = INT_MAX,
     .text = "largest `?below=` that `/primes` accepts, which bounds how long one request holds "
             "its loop "
             "(see [`/primes`](decisions.md#primes-blocks-its-loop))"},
    {.flag = "query-timeout-ms",
     .env = "QUERY_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(query_timeout_ms),
     .def = "30000",
     .min = 0,
     .max = INT_MAX,
     .text = "deadline of a query (then 504): the connection's `statement_timeout` and, with "
             "`--pipeline`, also counted from when the query is sent (see "
             "[deadlines](../server/README.md#deadlines)); `0` = none"},
    {.flag = "server-timing",
     .env = "SERVER_TIMING",
     .type = OPT_BOOL,
     .offset = FIELD(server_timing),
     .def = "1",
     .text = "send `Server-Timing` (db and total time) on API responses; `0` for the reference's "
             "exact headers"},
    {.flag = "shutdown-timeout-ms",
     .env = "SHUTDOWN_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(shutdown_timeout_ms),
     .def = "5000",
     .min = 0,
     .max = INT_MAX,
     .text = "how long SIGTERM waits for in-flight requests"},
    {.flag = "static-dir",
     .env = "STATIC_DIR",
     .type = OPT_STRING,
     .offset = FIELD(static_dir),
     .def = "static",
     .text = "directory served under `/static/`, read once at start-up"},
    {.flag = "threads",
     .env = "THREADS",
     .type = OPT_INT,
     .offset = FIELD(threads),
     .def = "1",
     .min = 1,
     .max = 64,
     .text = "event loops, one thread each, sharing the port (`SO_REUSEPORT`) and `POOL_MAX`"},
    {.flag = "tls-cert",
     .env = "TLS_CERT",
     .type = OPT_STRING,
     .offset = FIELD(tls_cert),
     .text = "PEM certificate (chain) of the TLS port"},
    {.flag = "tls-key",
     .env = "TLS_KEY",
     .type = OPT_STRING,
     .offset = FIELD(tls_key),
     .text = "PEM private key of the TLS port"},
    {.flag = "tls-port",
     .env = "TLS_PORT",
     .type = OPT_PORT_OR_AUTO,
     .offset = FIELD(tls_port),
     .def = "0",
     .min = 0,
     .max = 65535,
     .text = "port of the TLS listener, with the API's routes over HTTP/2 or HTTP/1.1 (ALPN); `0` "
             "= no TLS, `auto` takes a free port; needs `TLS_CERT` and `TLS_KEY`"},
    {.flag = "ws-idle-timeout-ms",
     .env = "WS_IDLE_TIMEOUT_MS",
     .type = OPT_INT,
     .offset = FIELD(ws_idle_timeout_ms),
     .def = "60000",
     .min = 1,
     .max = INT_MAX,
     .text = "a WebSocket with nothing received or written for this long is closed with 1001, and "
             "one whose send queue stays full while its client shows no reading for this long with "
             "1008 (see [flow control](api.md#flow-control))"},
    {.flag = "ws-max-fragment-bytes",
     .env = "WS_MAX_FRAGMENT_BYTES",
     .type = OPT_INT,
     .offset = FIELD(ws_max_fragment_bytes),
     .def = "65536",
     .min = 1,
     .max = 16777216,
     .text = "a WebSocket frame from a client longer than this closes the connection with 1009"},
    {.flag = "ws-max-message-bytes",
     .env = "WS_MAX_MESSAGE_BYTES",
     .type = OPT_INT,
     .offset = FIELD(ws_max_message_bytes),
     .def = "65536",
     .min = 1,
     .max = 16777216,
     .text = "a WebSocket message from a client longer than this closes the connection with 1009; "
             "also how much may wait to be sent to one client, each frame counted with 128 bytes "
             "beyond its payload, before notesd stops reading it"},
    {.flag = "ws-max-messages",
     .env = "WS_MAX_MESSAGES",
     .type = OPT_INT,
     .offset = FIELD(ws_max_messages),
     .def = "0",
     .min = 0,
     .max = INT_MAX,
     .text = "data messages a WebSocket client may send; the next one closes the connection with "
             "1008; `0` = no limit"},
};

/* The flags that act instead of setting something; config_load answers them. */
static const struct {
    const char *flag, *help;
} actions[] = {
    {"help", "print this help and exit"},
    {"version", "print the version and the libraries' versions, and exit"},
};

#define NUM_OPTIONS (sizeof(options) / sizeof(options[0]))

static void die_usage(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "notesd: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see --help)\n");
    exit(2);
}

/* Stores `value` into the field of `row`; `source` names where it came from. */
static void set_option(const struct option_row *row, const char *value, const char *source)
{
    char *field = (char *)&loaded + row->offset;

    switch (row->type) {
    case OPT_STRING:
        *(const char **)field = value;
        break;
    case OPT_PORT_OR_AUTO:
        if (strcmp(value, "auto") == 0) {
            *(int *)field = CONFIG_PORT_AUTO;
            break;
        }
        __attribute__((fallthrough)); /* any other value is an integer port */
    case OPT_INT: {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        /* strtol skips spaces and takes a '+': a number here is its digits, maybe a '-' */
        int digits = (value[0] >= '0' && value[0] <= '9') || value[0] == '-';
        if (!digits || errno != 0 || end == value || *end != '\0' || v < row->min || v > row->max) {
            fprintf(stderr, "notesd: %s: '%s' is not an integer in %ld..%ld (see --help)\n", source,
                    value, row->min, row->max);
            exit(2);
        }
        *(int *)field = (int)v;
        break;
    }
    case OPT_BOOL:
        if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0) {
            *(int *)field = 1;
        } else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 ||
                   strcmp(value, "no") == 0 || value[0] == '\0') {
            *(int *)field = 0;
        } else {
            die_usage("%s: '%s' is not a boolean (1/0, true/false, yes/no)", source, value);
        }
        break;
    case OPT_LOG_LEVEL: {
        int level = log_level_parse(value);
        if (level < 0)
            die_usage("%s: '%s' is not one of error, warn, info, debug", source, value);
        *(int *)field = level;
        break;
    }
    case OPT_CHOICE: {
        int index = 0;
        size_t len = strlen(value);
        for (const char *c = row->choices;; index++) {
            const char *end = strchr(c, '|');
            size_t clen = end != NULL ? (size_t)(end - c) : strlen(c);
            if (clen == len && strncmp(c, value, len) == 0) {
                *(int *)field = index;
                return;
            }
            if (end == NULL)
                break;
            c = end + 1;
        }
        fprintf(stderr, "notesd: %s: '%s' is not one of %s (see --help)\n", source, value,
                row->choices);
        exit(2);
    }
    }
}

#define NUM_ACTIONS (sizeof(actions) / sizeof(actions[0]))

int config_option_doc(size_t i, config_option_doc_t *out)
{
    memset(out, 0, sizeof(*out));
    if (i >= NUM_OPTIONS) {
        if (i - NUM_OPTIONS >= NUM_ACTIONS)
            return 0;
        out->flag = actions[i - NUM_OPTIONS].flag;
        out->env = "";
        out->text = actions[i - NUM_OPTIONS].help;
        return 1;
    }
    const struct option_row *row = &options[i];
    out->flag = row->flag;
    out->env = row->env;
    out->takes_value = row->type != OPT_BOOL;
    out->def = row->def != NULL ? row->def : row->def_doc;
    out->def_is_value = row->def != NULL;
    out->has_range = (row->type == OPT_INT || row->type == OPT_PORT_OR_AUTO) && row->max < INT_MAX;
    out->min = row->min;
    out->max = row->max;
    out->text = row->text;
    return 1;
}

/* Writes `len` bytes of a row's Markdown as --help's plain text: a code span
 * loses its backticks, a link becomes its text, and a pointer to the docs,
 * " (see [words](page.md#anchor))", is left out, since a terminal cannot follow
 * it (the man page names the page instead). */
static void print_plain(FILE *out, const char *s, size_t len)
{
    const char *end = s + len;
    while (s < end) {
        size_t left = (size_t)(end - s);
        const char *close;
        if (left > 7 && strncmp(s, " (see [", 7) == 0 && (close = strstr(s, "))")) != NULL &&
            close < end) {
            s = close + 2;
        } else if (*s == '[' && (close = strstr(s, "](")) != NULL && close < end &&
                   memchr(close, ')', (size_t)(end - close)) != NULL) {
            print_plain(out, s + 1, (size_t)(close - s - 1));
            s = memchr(close, ')', (size_t)(end - close));
            s++;
        } else {
            if (*s != '`')
                fputc(*s, out);
            s++;
        }
    }
}

void config_print_help(FILE *out)
{
    fprintf(out, "usage: notesd [options]\n\n"
                 "Every option can also be set by the environment variable shown;\n"
                 "a flag overrides the environment.\n\n");
    config_option_doc_t doc;
    for (size_t i = 0; config_option_doc(i, &doc); i++) {
        char left[64];
        snprintf(left, sizeof(left), "--%s%s", doc.flag, doc.takes_value ? " VALUE" : "");
        fprintf(out, "  %-32s %-24s ", left, doc.env);
        print_plain(out, doc.text, strlen(doc.text));
        if (doc.def != NULL)
            fprintf(out, " [%s]", doc.def);
        fprintf(out, "\n");
    }
}

void config_print_version(FILE *out)
{
    int pq = PQlibVersion(); /* 150014 for 15.14 */
    fprintf(out, "notesd %s (libh2o %s, libpq %d.%d)\n", NOTESD_VERSION, H2O_VERSION, pq / 10000,
            pq % 10000);
}

const notesd_config_t *config_load(int argc, char **argv)
{
    memset(&loaded, 0, sizeof(loaded));
    for (size_t i = 0; i < NUM_OPTIONS; i++) {
        if (options[i].def != NULL)
            set_option(&options[i], options[i].def, "default");
        const char *env = getenv(options[i].env);
        if (env != NULL && (env[0] != '\0' || options[i].type == OPT_BOOL))
            set_option(&options[i], env, options[i].env);
    }

    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            config_print_help(stdout);
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            config_print_version(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            die_usage("unexpected argument '%s'%s", arg, "");
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t name_len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        const struct option_row *row = NULL;
        for (size_t i = 0; i < NUM_OPTIONS; i++)
            if (strlen(options[i].flag) == name_len &&
                strncmp(options[i].flag, name, name_len) == 0)
                row = &options[i];
        if (row == NULL)
            die_usage("unknown option '%s'%s", arg, "");
        const char *value;
        if (eq != NULL) {
            value = eq + 1;
        } else if (row->type == OPT_BOOL) {
            value = "1";
        } else if (a + 1 < argc) {
            value = argv[++a];
        } else {
            die_usage("option '%s' needs a value%s", arg, "");
            return NULL;
        }
        set_option(row, value, arg);
    }
    log_level_current = (enum log_level)loaded.log_level;
    return &loaded;
}
