/*
 * config.c - the option table, environment and command-line parsing, --help.
 *
 * Owns the one table of settings. Adding a setting means adding a field to
 * notesd_config_t and one row here; --help and parsing follow from the row.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "log.h"

/* Written by config_load only; everyone else gets a const pointer. */
static notesd_config_t loaded;

/* OPT_PORT_OR_AUTO: an integer port where 0 means "no such listener" (the
 * metrics and TLS ports), so a free port the kernel picks is spelled "auto". */
/* OPT_CHOICE: one of the words of `choices` ("a|b"), stored as its index. */
enum opt_type { OPT_STRING, OPT_INT, OPT_BOOL, OPT_LOG_LEVEL, OPT_PORT_OR_AUTO, OPT_CHOICE };

struct option_row {
    const char *flag; /* without the leading "--" */
    const char *env;
    enum opt_type type;
    size_t offset;   /* of the field in notesd_config_t */
    const char *def; /* default, as text; NULL = unset */
    long min, max;   /* bounds for OPT_INT */
    const char *help;
    const char *choices; /* OPT_CHOICE's words, in the order of their values */
};

#define FIELD(f) offsetof(notesd_config_t, f)

/* Alphabetical by flag, like --help prints them. */
static const struct option_row options[] = {
    {"client-timeout-ms", "CLIENT_TIMEOUT_MS", OPT_INT, FIELD(client_timeout_ms), "10000", 1,
     INT_MAX, "a client gets this long to send a request, and to stay idle on keep-alive"},
    {"db-url", "DB_URL", OPT_STRING, FIELD(db_url), NULL, 0, 0,
     "libpq connection URI of the notes database"},
    {"h2c", "H2C", OPT_BOOL, FIELD(h2c), "0", 0, 0,
     "also speak HTTP/2 over cleartext on the API port (prior knowledge or Upgrade: h2c)"},
    {"half-close", "HALF_CLOSE", OPT_CHOICE, FIELD(half_close), "abort", 0, 0,
     "a client that shut down its sending side before an answer that waited: abort (as Node: "
     "no answer) or answer it",
     "abort|answer"},
    {"host", "HOST", OPT_STRING, FIELD(host), "0.0.0.0", 0, 0, "address the API listens on"},
    {"lag-interval-ms", "LAG_INTERVAL_MS", OPT_INT, FIELD(lag_interval_ms), "100", 1, 60000,
     "period of the event-loop lag probe"},
    {"log-level", "LOG_LEVEL", OPT_LOG_LEVEL, FIELD(log_level), "info", 0, 0,
     "error, warn, info or debug"},
    {"max-body-bytes", "MAX_BODY_BYTES", OPT_INT, FIELD(max_body_bytes), "102400", 1,
     64 * 1024 * 1024,
     "request bodies larger than this get 413 (express.json's 100kb), held while they are read: "
     "on the wire and inflated"},
    {"max-connections", "MAX_CONNECTIONS", OPT_INT, FIELD(max_connections), NULL, 1, INT_MAX,
     "most open API connections, plain and TLS, all loops together; at the limit new clients "
     "wait in the kernel's backlog [RLIMIT_NOFILE - 2 x POOL_MAX - 7 x THREADS (8 with TLS) - 31 "
     "(22 without the metrics port)]"},
    {"metrics-host", "METRICS_HOST", OPT_STRING, FIELD(metrics_host), "0.0.0.0", 0, 0,
     "address the metrics port listens on"},
    {"metrics-port", "METRICS_PORT", OPT_PORT_OR_AUTO, FIELD(metrics_port), "9091", 0, 65535,
     "port of /metrics, /healthz and /readyz; 0 turns it off, auto takes a free one"},
    {"pipeline", "PIPELINE_DEPTH", OPT_INT, FIELD(pipeline_depth), "0", 0, 256,
     "libpq pipeline mode: up to this many queries in flight per connection; 0 = off"},
    {"pool-acquire-timeout-ms", "POOL_ACQUIRE_TIMEOUT_MS", OPT_INT, FIELD(pool_acquire_timeout_ms),
     "10000", 0, INT_MAX, "longest wait for a database connection (503 after); 0 = forever"},
    {"pool-connect-timeout-ms", "POOL_CONNECT_TIMEOUT_MS", OPT_INT, FIELD(pool_connect_timeout_ms),
     "5000", 1, INT_MAX, "longest time to open a database connection"},
    {"pool-idle-timeout-ms", "POOL_IDLE_TIMEOUT_MS", OPT_INT, FIELD(pool_idle_timeout_ms), "10000",
     1, INT_MAX, "an idle database connection is closed after this long"},
    {"pool-max", "POOL_MAX", OPT_INT, FIELD(pool_max), "20", 1, 1000,
     "most database connections open at once"},
    {"pool-queue-max", "POOL_QUEUE_MAX", OPT_INT, FIELD(pool_queue_max), "10000", 0, INT_MAX,
     "most requests waiting for a connection (503 beyond); 0 = no bound"},
    {"port", "PORT", OPT_INT, FIELD(port), "8080", 0, 65535,
     "port the API listens on; 0 takes a free one (the start-up line says which)"},
    {"prepared", "PREPARED", OPT_BOOL, FIELD(prepared), "0", 0, 0,
     "use named prepared statements instead of node-postgres's unnamed ones"},
    {"primes-max", "PRIMES_MAX", OPT_INT, FIELD(primes_max), "1000000", 2, INT_MAX,
     "largest ?below= that /primes accepts (1000000 holds the loop ~0.13 s)"},
    {"query-timeout-ms", "QUERY_TIMEOUT_MS", OPT_INT, FIELD(query_timeout_ms), "30000", 0, INT_MAX,
     "deadline of a query (504 after): its statement_timeout on the server, and with --pipeline "
     "also counted from when it is sent, behind any others; 0 = none"},
    {"server-timing", "SERVER_TIMING", OPT_BOOL, FIELD(server_timing), "1", 0, 0,
     "send Server-Timing (db and total time) on API responses; 0 for the peer's exact headers"},
    {"shutdown-timeout-ms", "SHUTDOWN_TIMEOUT_MS", OPT_INT, FIELD(shutdown_timeout_ms), "5000", 0,
     INT_MAX, "how long SIGTERM waits for in-flight requests"},
    {"static-dir", "STATIC_DIR", OPT_STRING, FIELD(static_dir), "static", 0, 0,
     "directory served under /static/"},
    {"threads", "THREADS", OPT_INT, FIELD(threads), "1", 1, 64,
     "event loops, one thread each, sharing the port (SO_REUSEPORT) and POOL_MAX"},
    {"tls-cert", "TLS_CERT", OPT_STRING, FIELD(tls_cert), NULL, 0, 0,
     "PEM certificate (chain) of the TLS port"},
    {"tls-key", "TLS_KEY", OPT_STRING, FIELD(tls_key), NULL, 0, 0,
     "PEM private key of the TLS port"},
    {"tls-port", "TLS_PORT", OPT_PORT_OR_AUTO, FIELD(tls_port), "0", 0, 65535,
     "port of the TLS listener (HTTP/2 and HTTP/1.1 by ALPN); 0 = no TLS, auto takes a free one"},
    {"ws-idle-timeout-ms", "WS_IDLE_TIMEOUT_MS", OPT_INT, FIELD(ws_idle_timeout_ms), "60000", 1,
     INT_MAX,
     "a WebSocket with nothing received or written for this long is closed (1001), and one "
     "whose queue stays full this long (1008)"},
    {"ws-max-fragment-bytes", "WS_MAX_FRAGMENT_BYTES", OPT_INT, FIELD(ws_max_fragment_bytes),
     "65536", 1, 16777216, "a WebSocket frame from a client longer than this closes it (1009)"},
    {"ws-max-message-bytes", "WS_MAX_MESSAGE_BYTES", OPT_INT, FIELD(ws_max_message_bytes), "65536",
     1, 16777216,
     "a WebSocket message from a client longer than this closes it (1009); also how much may "
     "wait to be sent (128 bytes counted per frame beyond its payload) before the server stops "
     "reading"},
    {"ws-max-messages", "WS_MAX_MESSAGES", OPT_INT, FIELD(ws_max_messages), "0", 0, INT_MAX,
     "messages a WebSocket client may send; the next one closes it (1008); 0 = no limit"},
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
        if (errno != 0 || end == value || *end != '\0' || v < row->min || v > row->max) {
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

void config_print_help(FILE *out)
{
    fprintf(out, "usage: notesd [options]\n\n"
                 "Every option can also be set by the environment variable shown;\n"
                 "a flag overrides the environment.\n\n");
    for (size_t i = 0; i < NUM_OPTIONS; i++) {
        const struct option_row *row = &options[i];
        char left[64];
        snprintf(left, sizeof(left), "--%s%s", row->flag, row->type == OPT_BOOL ? "" : " VALUE");
        fprintf(out, "  %-32s %-24s %s", left, row->env, row->help);
        if (row->def != NULL)
            fprintf(out, " [%s]", row->def);
        fprintf(out, "\n");
    }
    fprintf(out, "  %-32s %-24s %s\n", "--help", "", "print this help and exit");
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
