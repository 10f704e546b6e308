/*
 * main.c - start-up, in order: the settings read and handed out, the loops'
 * memory, the database's parameters, admission, h2o, the listening sockets,
 * the loops started; then one line saying where notesd listens.
 *
 * The settings are read once (config_load, const from then on) and only here
 * turned into what each module is given: pool_settings_t per loop, the
 * request_settings_t of the handlers, the connection parameters (pgparams),
 * every loop's share of POOL_MAX (loop_share) and the one MAX_CONNECTIONS
 * budget of every loop. Below main, only http.c reads the configuration, as
 * an argument (h2o's set-up, TLS, the listening addresses).
 *
 * What runs after start-up, the loops' threads, the signals and the drain,
 * is loop.c's. The last step of start-up is READY=1 to systemd, when it runs
 * notesd as a Type=notify service (sdnotify.c); STOPPING=1 goes out when the
 * drain begins (loop.c).
 *
 * Out of memory: allocation failures abort (h2o already does so underneath
 * us); recovering per request would only be half a policy.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "pgparams.h"
#include "sdnotify.h"
#include "statements.h"

/* Loop i's share of `total`: the first loops take the remainder. */
static int loop_share(int total, int nloops, int i)
{
    return total / nloops + (i < total % nloops);
}

/* The pool settings of loop i: the configuration's, with its share of
 * POOL_MAX. Only `max` differs from one loop to the next. */
static pool_settings_t pool_settings_of(const notesd_config_t *cfg, int i)
{
    return (pool_settings_t){.max = loop_share(cfg->pool_max, cfg->threads, i),
                             .queue_max = cfg->pool_queue_max,
                             .idle_timeout_ms = cfg->pool_idle_timeout_ms,
                             .acquire_timeout_ms = cfg->pool_acquire_timeout_ms,
                             .connect_timeout_ms = cfg->pool_connect_timeout_ms,
                             .query_timeout_ms = cfg->query_timeout_ms,
                             .prepared = cfg->prepared,
                             .depth = cfg->pipeline_depth};
}

/* The journal's rings are allocated whole at start-up (JOURNAL x THREADS x
 * 160 bytes): more than half the machine's memory is refused as a mistake,
 * rather than left to the kernel to find out as the rings fill. */
static int journal_too_large(const notesd_config_t *cfg, char *err, size_t len)
{
    double rings = (double)cfg->journal * cfg->threads * (double)sizeof(journal_record_t);
    double memory = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (memory <= 0 || rings <= memory / 2)
        return 0;
    snprintf(err, len,
             "JOURNAL=%d with THREADS=%d needs %.1f GiB of rings (160 bytes a record), more "
             "than half this machine's %.1f GiB (see --help)",
             cfg->journal, cfg->threads, rings / (1 << 30), memory / (1 << 30));
    return 1;
}

/* A random name for this process's journal, so a reader's position from an
 * earlier process is told apart (docs/journal.md); the clock and the pid
 * when the kernel has no randomness to give. */
static uint64_t journal_epoch(void)
{
    uint64_t epoch;
    if (getrandom(&epoch, sizeof(epoch), GRND_NONBLOCK) != (ssize_t)sizeof(epoch))
        epoch = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
    return epoch;
}

/* What the handlers of both ports are given: the process's settings, and
 * every loop (the metrics port speaks for all of them). Read-only once the
 * loops run. */
static const request_settings_t *request_settings_of(const notesd_config_t *cfg)
{
    static request_settings_t s;
    s = (request_settings_t){
        .server_timing = cfg->server_timing,
        .answer_half_closed = cfg->half_close == CONFIG_HALF_CLOSE_ANSWER,
        .primes_max = cfg->primes_max,
        .max_body_bytes = (size_t)cfg->max_body_bytes,
        .static_dir = cfg->static_dir,
        .ws = {.max_message_bytes = (uint64_t)cfg->ws_max_message_bytes,
               .max_fragment_bytes = (uint64_t)cfg->ws_max_fragment_bytes,
               .max_messages = (uint64_t)cfg->ws_max_messages,
               .idle_timeout_ms = (uint64_t)cfg->ws_idle_timeout_ms},
        .journal_token =
            cfg->journal_token != NULL && cfg->journal_token[0] != '\0' ? cfg->journal_token : NULL,
        .journal_epoch = journal_epoch(),
        .loops = server.views,
        .nloops = server.nloops};
    return &s;
}

int main(int argc, char **argv)
{
    char err[512];
    static pgparams_t pgparams; /* how every pool's connections open; built once */

    const notesd_config_t *cfg = config_load(argc, argv);
    if (cfg->db_url == NULL || cfg->db_url[0] == '\0') {
        fprintf(stderr, "notesd: DB_URL is not set (a libpq URI such as "
                        "postgresql://user@127.0.0.1:5432/notes; see --help)\n");
        return 2;
    }
    if (journal_too_large(cfg, err, sizeof(err))) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    if (cfg->pool_max < cfg->threads) {
        fprintf(stderr, "notesd: POOL_MAX (%d) must be at least THREADS (%d) (see --help)\n",
                cfg->pool_max, cfg->threads);
        return 2;
    }
    /* h2o writes with writev(), which raises SIGPIPE on a peer that went away. */
    signal(SIGPIPE, SIG_IGN);

    /* Every loop's memory exists before any thread starts, so no thread
     * publishes a pointer that another one reads. Everything that can be wrong
     * with the settings is found before any listener opens. */
    loops_init(cfg->threads, cfg->lag_interval_ms, cfg->shutdown_timeout_ms, cfg->journal);
    pool_settings_t pool0 = pool_settings_of(cfg, 0);
    if (pgparams_build(&pgparams, cfg->db_url, &pool0, statements, STMT__COUNT, err, sizeof(err)) !=
        0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    listen_admission_t admission = {.max_connections = cfg->max_connections,
                                    .loops = cfg->threads,
                                    .tls = cfg->tls_port != 0,
                                    .metrics = cfg->metrics_port != 0,
                                    .db_connections = cfg->pool_max};
    int max_connections = listen_admit(&admission, err, sizeof(err));
    if (max_connections < 0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    /* Each loop's pool, with its share of POOL_MAX; MAX_CONNECTIONS is not
     * shared out but one budget that every loop's API and TLS listeners draw
     * on (the metrics listener has its own). */
    server.api_budget.max = (size_t)max_connections;
    for (int i = 0; i < server.nloops; i++) {
        notesd_loop_t *loop = &server.loops[i];
        pool_settings_t settings = pool_settings_of(cfg, i);
        pool_configure(&loop->pool, &settings, &pgparams.conn, statements, STMT__COUNT);
        loop->listen.metrics_budget.max = LISTEN_METRICS_MAX_CONNECTIONS;
    }

    http_configure(cfg, request_settings_of(cfg));
    if (http_tls_configure(cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    if (http_open_listeners(cfg) != 0)
        return 1;
    server.start_http = http_start_loop;
    server.stop_http = http_stop_loop;
    if (loops_start() != 0)
        return 1;

    char tls[96] = "";
    if (server.ssl_ctx != NULL)
        snprintf(tls, sizeof(tls), ", https://%s:%d (h2, http/1.1)", cfg->host, server.tls_port);
    char pipeline[32] = "";
    if (cfg->pipeline_depth > 0)
        snprintf(pipeline, sizeof(pipeline), ", pipeline %d", cfg->pipeline_depth);
    /* Printed whatever LOG_LEVEL says: it is where notesd listens, the only
     * way to learn a port the kernel chose (PORT=0, TLS_PORT=auto, METRICS_PORT=auto). */
    log_write(LOG_INFO,
              "listening on http://%s:%d%s%s, metrics on http://%s:%d/metrics; %d loop(s), pool "
              "max %d (%s statements%s), max connections %d, database %s",
              cfg->host, server.api_port, cfg->h2c ? " (h2c too)" : "", tls, cfg->metrics_host,
              server.metrics_port, server.nloops, cfg->pool_max,
              cfg->prepared ? "prepared" : "unnamed", pipeline, max_connections, pgparams.target);

    /* Every listener is bound and every loop's thread started: connections are
     * accepted from here on, so a Type=notify service is started. One datagram,
     * never a wait; a failure is logged, and systemd judges by its own timeout. */
    char ready[160];
    snprintf(ready, sizeof(ready), "READY=1\nSTATUS=API on port %d, %d loop(s)", server.api_port,
             server.nloops);
    if (sdnotify_send(ready) < 0)
        log_warn("cannot notify systemd at NOTIFY_SOCKET=%s: %s", getenv("NOTIFY_SOCKET"),
                 strerror(errno));

    loops_run();
    pgparams_free(&pgparams);
    log_info("%s", "stopped");
    return 0;
}
