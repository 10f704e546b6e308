/*
 * main.c - start-up order, signals, the run loop and shutdown.
 *
 * Order: settings, then h2o configuration and listeners, then the pool and the
 * lag probe, then one line saying where we listen, then the loop. SIGTERM or
 * SIGINT stops accepting, lets in-flight requests (and their queued queries)
 * finish for up to SHUTDOWN_TIMEOUT_MS, closes the pool and exits 0; a second
 * signal exits at once. Signals arrive through a signalfd on the loop, so no
 * handler runs in the middle of a callback.
 *
 * Out of memory: allocation failures abort (h2o already does so underneath
 * us); recovering per request would only be half a policy.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "config.h"
#include "delay.h"
#include "http.h"
#include "lag.h"
#include "log.h"
#include "metrics.h"

enum run_state { RUNNING, DRAINING, STOPPED };

static enum run_state run_state = RUNNING;
static uint64_t drain_deadline_ns;
static h2o_timeout_t drain_timeout;
static h2o_timeout_entry_t drain_entry;

/* Prints the database target without its password. */
static void describe_db(char *out, size_t len)
{
    PQconninfoOption *opts = PQconninfoParse(config.db_url, NULL);
    const char *user = "", *host = "", *port = "", *dbname = "";
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        const char *v = o->val != NULL ? o->val : "";
        if (strcmp(o->keyword, "user") == 0)
            user = v;
        else if (strcmp(o->keyword, "host") == 0)
            host = v;
        else if (strcmp(o->keyword, "port") == 0)
            port = v;
        else if (strcmp(o->keyword, "dbname") == 0)
            dbname = v;
    }
    snprintf(out, len, "%s%s%s%s%s/%s", user, user[0] ? "@" : "", host[0] ? host : "(default)",
             port[0] ? ":" : "", port, dbname);
    PQconninfoFree(opts);
}

static void on_drain_check(h2o_timeout_entry_t *entry)
{
    int drained = metrics_requests_in_flight() == 0 && pool_is_empty(&server.pool);
    if (drained || metrics_now_ns() >= drain_deadline_ns) {
        if (!drained)
            log_warn("shutdown: %lld request(s) still in flight after %d ms; exiting",
                     (long long)metrics_requests_in_flight(), config.shutdown_timeout_ms);
        run_state = STOPPED;
        return;
    }
    h2o_timeout_link(server.ctx.loop, &drain_timeout, &drain_entry);
}

static void begin_shutdown(const char *signame)
{
    log_info("%s: no new connections; finishing in-flight requests (up to %d ms)", signame,
             config.shutdown_timeout_ms);
    run_state = DRAINING;
    http_stop_accepting();
    /* The next response on each keep-alive connection says Connection: close. */
    h2o_context_request_shutdown(&server.ctx);
    pool_shutdown(&server.pool);
    drain_deadline_ns = metrics_now_ns() + (uint64_t)config.shutdown_timeout_ms * 1000000;
    drain_entry.cb = on_drain_check;
    h2o_timeout_link(server.ctx.loop, &drain_timeout, &drain_entry);
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    struct signalfd_siginfo info;

    while (read(h2o_socket_get_fd(sock), &info, sizeof(info)) == sizeof(info)) {
        const char *name = info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
        if (run_state == RUNNING) {
            begin_shutdown(name);
        } else {
            log_warn("%s again: exiting now", name);
            _exit(1);
        }
    }
}

static h2o_socket_t *watch_signals(h2o_loop_t *loop)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        perror("notesd: signalfd");
        exit(1);
    }
    h2o_socket_t *sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(sock, on_signal);
    return sock;
}

int main(int argc, char **argv)
{
    char err[512], db[256];

    config_load(argc, argv);
    if (config.db_url == NULL || config.db_url[0] == '\0') {
        fprintf(stderr, "notesd: DB_URL is not set (a libpq URI such as "
                        "postgresql://user@127.0.0.1:5432/notes; see --help)\n");
        return 2;
    }
    /* h2o writes with writev(), which raises SIGPIPE on a peer that went away. */
    signal(SIGPIPE, SIG_IGN);

    /* Everything that can be wrong with the settings is found before any listener opens. */
    if (pool_configure(&server.pool, config.db_url, notes_statement_table, notes_num_statements,
                       err, sizeof(err)) != 0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    http_configure();
    if (http_start() != 0)
        return 1;
    h2o_loop_t *loop = server.ctx.loop;
    pool_start(&server.pool, loop);
    lag_start(loop, config.lag_interval_ms);
    delay_start(loop);
    h2o_timeout_init(loop, &drain_timeout, 20);
    h2o_socket_t *signals = watch_signals(loop);

    describe_db(db, sizeof(db));
    log_info("listening on http://%s:%d, metrics on http://%s:%d/metrics; pool max %d (%s "
             "statements), database %s",
             config.host, config.port, config.metrics_host, config.metrics_port, config.pool_max,
             config.prepared ? "prepared" : "unnamed", db);

    /* h2o_evloop_run returns -1 on EINTR too; its result is not a reason to stop. */
    while (run_state != STOPPED)
        h2o_evloop_run(loop, INT32_MAX);

    /* Tear down cleanly only when nothing is left that h2o would assert on;
     * after the deadline, connections (HTTP or database) may remain: exit. */
    if (server.open_connections > 0 || !pool_is_empty(&server.pool)) {
        log_info("%s", "stopped (idle keep-alive connections closed by exit)");
        return 0;
    }
    h2o_socket_read_stop(signals);
    h2o_socket_close(signals);
    lag_stop(loop);
    delay_stop();
    h2o_timeout_dispose(loop, &drain_timeout);
    pool_dispose(&server.pool);
    log_info("%s", "stopped");
    return 0;
}
