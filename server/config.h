/*
 * config.h - the server's settings, read once at start-up.
 *
 * Every setting has one row in config.c's table: flag, environment variable,
 * type, default and its one description. The environment is read first and
 * flags override it, as the reference Express app takes its settings from the
 * environment.
 * config_load hands the settings out as const, and there is no global to
 * write: main reads them and passes each module what it needs (pool_settings_t,
 * request_settings_t, the loops' shares), so nothing below reads them itself.
 */
#ifndef NOTESD_CONFIG_H
#define NOTESD_CONFIG_H

#include <stddef.h>
#include <stdio.h>

typedef struct notesd_config {
    const char *db_url;          /* libpq connection URI; NULL means "not set" */
    const char *host;            /* address of the API listener */
    int port;                    /* port of the API listener */
    int pool_max;                /* most database connections open at once */
    int pool_idle_timeout_ms;    /* an idle connection is closed after this long */
    int pool_queue_max;          /* most requests waiting for a connection; 0 = no bound */
    int pool_acquire_timeout_ms; /* longest wait for a connection; 0 = wait forever */
    int pool_connect_timeout_ms; /* longest time to open a connection */
    int client_timeout_ms;       /* h2o's request and keep-alive idle timeout */
    int query_timeout_ms;        /* deadline of one query on the loop and on the server; 0 = none */
    int prepared;                /* 1: named prepared statements; 0: unnamed, like node-postgres */
    int pipeline_depth;          /* queries in flight per connection (pipeline mode); 0 = off */
    const char *metrics_host;    /* address of the metrics listener */
    int metrics_port;            /* 0 = no metrics listener; CONFIG_PORT_AUTO = a free port */
    int lag_interval_ms;         /* period of the event-loop lag probe */
    int journal;                 /* records per loop in the request journal; 0 = off */
    const char *journal_token;   /* lets clients not on loopback read the journal; NULL = none */
    const char *static_dir;      /* directory served under /static/ */
    int primes_max;              /* largest accepted ?below= for /primes */
    int max_body_bytes;          /* request bodies above this get 413 */
    int max_connections;         /* most open API connections; 0 = derived from RLIMIT_NOFILE */
    int shutdown_timeout_ms;     /* how long a graceful shutdown may take */
    int server_timing;           /* 1: send Server-Timing on API responses */
    int threads;                 /* event loops, one per thread, each with a pool slice */
    int tls_port;                /* TLS listener (ALPN h2, http/1.1); 0 = none, CONFIG_PORT_AUTO */
    const char *tls_cert;        /* PEM certificate chain of the TLS listener */
    const char *tls_key;         /* PEM private key of the TLS listener */
    int h2c;                     /* 1: HTTP/2 over cleartext (prior knowledge, Upgrade: h2c) */
    int half_close;              /* enum config_half_close */
    int log_level;               /* enum log_level */
    int ws_idle_timeout_ms;      /* a WebSocket with nothing received or written this long: 1001 */
    int ws_max_fragment_bytes;   /* a longer WebSocket frame from a client: 1009 */
    int ws_max_message_bytes;    /* a longer WebSocket message from a client: 1009 */
    int ws_max_messages;         /* messages a WebSocket client may send; then 1008; 0 = any */
} notesd_config_t;

/* METRICS_PORT=auto, TLS_PORT=auto: the kernel picks a free port (PORT=0 does the
 * same for the API). */
#define CONFIG_PORT_AUTO (-1)

/* HALF_CLOSE: what becomes of a request whose client has shut down its sending
 * side (FIN) by the time its answer is ready, after a wait ("Client gone" in docs/decisions.md). */
enum config_half_close {
    CONFIG_HALF_CLOSE_ABORT,  /* as Node's HTTP server: the client is gone, nothing is sent */
    CONFIG_HALF_CLOSE_ANSWER, /* the answer is sent; only a reset client is gone */
};

/* Reads the settings from defaults, then the environment, then argv, and
 * returns them: one copy for the process's life, read-only. On a bad value or
 * unknown flag it prints one line to stderr and exits with status 2; for
 * --help it prints the option table and exits 0, for --version the version. */
const notesd_config_t *config_load(int argc, char **argv);

/* Prints the option table as --help shows it. */
void config_print_help(FILE *out);

/* Prints "notesd VERSION (libh2o V, libpq V)", as --version shows it. */
void config_print_version(FILE *out);

/* One row of the option table as the documentation shows it. --help prints
 * these rows; packaging/docgen.c prints the same rows as the man page's
 * OPTIONS and as docs/configuration.md's settings table, so the three agree. */
typedef struct config_option_doc {
    const char *flag; /* without the leading "--" */
    const char *env;  /* the environment variable; "" for --help and --version */
    int takes_value;  /* 0: a flag alone (a boolean's "1", or an action) */
    const char *def;  /* the default as shown, or NULL when there is none */
    int def_is_value; /* 1: `def` is a value to type; 0: it is words ("required", a formula) */
    int has_range;    /* 1: an integer accepted only from min to max, shown as such */
    long min, max;    /* that range */
    const char *text; /* Markdown's `code` and [links](page.md#anchor) only; --help strips them */
} config_option_doc_t;

/* Fills `out` with row `i`: the settings in alphabetical order, then --help and
 * --version. Returns 0 when `i` is past the last row. */
int config_option_doc(size_t i, config_option_doc_t *out);

#endif
