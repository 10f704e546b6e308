/*
 * main.c - the settings handed out, start-up order, threads, signals, the run
 * loop and shutdown.
 *
 * The settings are read once (config_load, const from then on) and only here
 * turned into what each module is given: pool_settings_t per loop, the
 * request_settings_t of the handlers, the connection parameters (pgparams),
 * every loop's share of POOL_MAX (loop_share) and the one MAX_CONNECTIONS
 * budget of every loop (in configure_loops). Below main, only http.c reads
 * the configuration, as an argument (h2o's set-up, TLS, the listening
 * addresses).
 *
 * Order: settings, then every loop's memory (loops_init), the connection
 * parameters (which check DB_URL and look up its hosts and user), the
 * descriptor limit and MAX_CONNECTIONS derived from it, each loop's pool and
 * the connection budget, then h2o configuration and the listening sockets,
 * then one thread per extra loop, then loop 0 on this thread with the metrics
 * port and the signals, then one line saying where we listen, and READY=1 to
 * systemd when it runs notesd as a Type=notify service (sdnotify.c).
 *
 * SIGTERM or SIGINT: every loop stops accepting, lets its in-flight requests
 * (and their queued queries) finish for up to SHUTDOWN_TIMEOUT_MS, closes its
 * pool; then the process exits 0. systemd hears STOPPING=1 when the first
 * signal arrives. A second signal exits at once. Signals arrive through a
 * signalfd on loop 0, so no handler runs in the middle of a callback; loop 0
 * tells the others through an eventfd each.
 *
 * Out of memory: allocation failures abort (h2o already does so underneath
 * us); recovering per request would only be half a policy.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "config.h"
#include "http.h"
#include "lag.h"
#include "log.h"
#include "loop.h"
#include "pgparams.h"
#include "sdnotify.h"
#include "statements.h"

static const notesd_config_t *cfg; /* config_load's, read-only */
static pgparams_t pgparams;        /* how every pool's connections open; built once */
static h2o_socket_t *signals;      /* loop 0 only */
static int shutdown_requested;

/* The signals that stop the server: blocked in every thread, read by loop 0's signalfd. */
static sigset_t stop_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

/* Prints the database target without its password. */
static void describe_db(char *out, size_t len)
{
    PQconninfoOption *opts = PQconninfoParse(cfg->db_url, NULL);
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

/* Tells systemd how the service is doing; nothing without NOTIFY_SOCKET. Two
 * messages in the process's life, one syscall each and never a wait, so also
 * fine on loop 0. A failure is logged: the service runs on, and systemd
 * judges it by its own timeout. */
static void notify_systemd(const char *message)
{
    if (sdnotify_send(message) < 0)
        log_warn("cannot notify systemd at NOTIFY_SOCKET=%s: %s", getenv("NOTIFY_SOCKET"),
                 strerror(errno));
}

/* ---- descriptors ------------------------------------------------------------------------- */

/* The descriptors notesd holds besides its API connections, as they are (see
 * "Admission" in docs/decisions.md), kept back from MAX_CONNECTIONS's default:
 * - per database connection, two: libpq's socket and the dup the loop watches (pgconn.c);
 * - per loop, its listeners and their wake-up eventfd (LISTEN_FDS_PER_LOOP), epoll,
 *   h2o's queue pipe (two ends), the timer service's timerfd and the shutdown eventfd;
 * - the metrics port: its listener and its own budget of connections;
 * - the process: stdio, the signalfd, the two files a scrape reads in /proc, and
 *   static files being sent (h2o's file handler holds one per response in flight;
 *   past these, it answers 503). */
#define FDS_PER_DB_CONNECTION 2
#define FDS_PER_LOOP_OWN 5
#define FDS_METRICS (1 + LISTEN_METRICS_MAX_CONNECTIONS)
#define FDS_STATIC_FILES 16
#define FDS_PROCESS (3 + 1 + 2 + FDS_STATIC_FILES)

/* What MAX_CONNECTIONS's default keeps back from a descriptor limit. */
static long fds_kept_back(void)
{
    long per_loop = FDS_PER_LOOP_OWN + LISTEN_FDS_PER_LOOP(cfg->tls_port != 0);
    return (long)FDS_PER_DB_CONNECTION * cfg->pool_max + per_loop * cfg->threads +
           (cfg->metrics_port != 0 ? FDS_METRICS : 0) + FDS_PROCESS;
}

/* Raises the soft RLIMIT_NOFILE to the hard one (as a server should: the soft
 * default of 1024 is for interactive shells), then returns MAX_CONNECTIONS as
 * set, or derived from the limit when it was not; at least one per loop.
 * Returns -1 after printing why when the limit leaves no room. */
static int admit_by_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("notesd: getrlimit");
        return -1;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t soft = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = soft; /* keep what we have */
    }
    long fds = rl.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (long)rl.rlim_cur;
    long room = fds - fds_kept_back();
    int max = cfg->max_connections;
    if (max == 0) {
        if (room < 1) {
            fprintf(stderr,
                    "notesd: RLIMIT_NOFILE (%ld) leaves no descriptor for connections after the "
                    "%ld the pool (%d per connection), the loops and the process hold; raise it "
                    "(ulimit -n) or set MAX_CONNECTIONS (see --help)\n",
                    fds, fds_kept_back(), FDS_PER_DB_CONNECTION);
            return -1;
        }
        max = (int)room;
    } else if (max > room) {
        log_warn("MAX_CONNECTIONS (%d) is more than RLIMIT_NOFILE (%ld) leaves room for (%ld); "
                 "when descriptors run out, accepting pauses for 100 ms at a time",
                 max, fds, room < 0 ? 0 : room);
    }
    return max;
}

/* ---- what each loop gets ------------------------------------------------------------------ */

/* Loop i's share of POOL_MAX: the first loops take the remainder. */
static int loop_share(int total, int i)
{
    return total / server.nloops + (i < total % server.nloops);
}

/* The pool settings of loop i: the configuration's, with its share of POOL_MAX.
 * Only `max` differs from one loop to the next. */
static pool_settings_t pool_settings_of(int i)
{
    return (pool_settings_t){.max = loop_share(cfg->pool_max, i),
                             .queue_max = cfg->pool_queue_max,
                             .idle_timeout_ms = cfg->pool_idle_timeout_ms,
                             .acquire_timeout_ms = cfg->pool_acquire_timeout_ms,
                             .connect_timeout_ms = cfg->pool_connect_timeout_ms,
                             .query_timeout_ms = cfg->query_timeout_ms,
                             .prepared = cfg->prepared,
                             .depth = cfg->pipeline_depth};
}

/* Everything each loop gets, in one place: its pool, with its share of
 * POOL_MAX; MAX_CONNECTIONS is not shared out but one budget that every
 * loop's API and TLS listeners draw on (the metrics listener has its own). */
static void configure_loops(int max_connections)
{
    server.api_budget.max = (size_t)max_connections;
    for (int i = 0; i < server.nloops; i++) {
        notesd_loop_t *loop = &server.loops[i];
        pool_settings_t settings = pool_settings_of(i);
        pool_configure(&loop->pool, &settings, &pgparams.conn, statements, STMT__COUNT);
        loop->listen.metrics_budget.max = LISTEN_METRICS_MAX_CONNECTIONS;
    }
}

/* ---- one loop's shutdown ----------------------------------------------------------------- */

static void on_drain_check(h2o_timeout_entry_t *entry)
{
    notesd_loop_t *loop = H2O_STRUCT_FROM_MEMBER(notesd_loop_t, drain_entry, entry);
    int drained =
        loop->stats.in_flight == 0 && pool_is_empty(&loop->pool) && ws_is_empty(&loop->ws);

    if (drained || stats_now_ns() >= loop->drain_deadline_ns) {
        if (!drained)
            log_warn("shutdown: loop %d: %lld request(s) still in flight after %d ms; exiting",
                     loop->index, (long long)loop->stats.in_flight, cfg->shutdown_timeout_ms);
        loop->state = LOOP_STOPPED;
        return;
    }
    h2o_timeout_link(loop->ctx.loop, &loop->drain_timeout, &loop->drain_entry);
}

/* On the loop's own thread. */
static void begin_shutdown(notesd_loop_t *loop)
{
    loop->state = LOOP_DRAINING;
    listen_stop(&loop->listen);
    /* The next response on each keep-alive connection says Connection: close. */
    h2o_context_request_shutdown(&loop->ctx);
    pool_shutdown(&loop->pool);
    ws_shutdown(&loop->ws); /* every WebSocket gets a close with 1001 */
    loop->drain_deadline_ns = stats_now_ns() + (uint64_t)cfg->shutdown_timeout_ms * 1000000;
    h2o_timeout_link(loop->ctx.loop, &loop->drain_timeout, &loop->drain_entry);
}

static void on_wakeup(h2o_socket_t *sock, const char *err)
{
    uint64_t n;
    if (read(h2o_socket_get_fd(sock), &n, sizeof(n)) == sizeof(n) &&
        this_loop->state == LOOP_RUNNING)
        begin_shutdown(this_loop);
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    struct signalfd_siginfo info;

    while (read(h2o_socket_get_fd(sock), &info, sizeof(info)) == sizeof(info)) {
        const char *name = info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
        if (shutdown_requested) {
            log_warn("%s again: exiting now", name);
            _exit(1);
        }
        shutdown_requested = 1;
        notify_systemd("STOPPING=1");
        log_info("%s: no new connections; finishing in-flight requests (up to %d ms)", name,
                 cfg->shutdown_timeout_ms);
        uint64_t one = 1;
        for (int i = 1; i < server.nloops; i++)
            if (write(server.loops[i].wakeup_fd, &one, sizeof(one)) < 0)
                log_error("cannot wake loop %d", i);
        begin_shutdown(this_loop);
    }
}

static h2o_socket_t *watch_signals(h2o_loop_t *loop)
{
    sigset_t set = stop_signals();
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        perror("notesd: signalfd");
        exit(1);
    }
    h2o_socket_t *sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(sock, on_signal);
    return sock;
}

/* ---- loops --------------------------------------------------------------------------------- */

/* On the loop's own thread: everything that belongs to one event loop. */
static void start_loop(notesd_loop_t *loop)
{
    http_start_loop(loop);
    h2o_loop_t *evloop = loop->ctx.loop;
    if (timers_start(&loop->timers, evloop) != 0) {
        perror("notesd: timerfd_create");
        exit(1);
    }
    pool_start(&loop->pool, evloop, &loop->timers);
    lag_start(&loop->lag, &loop->timers);
    h2o_timeout_init(evloop, &loop->drain_timeout, 20);
    loop->drain_entry.cb = on_drain_check;
    loop->wakeup = h2o_evloop_socket_create(evloop, loop->wakeup_fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(loop->wakeup, on_wakeup);
}

static void run_loop(notesd_loop_t *loop)
{
    /* h2o_evloop_run returns -1 on EINTR too; its result is not a reason to stop. */
    while (loop->state != LOOP_STOPPED)
        h2o_evloop_run(loop->ctx.loop, INT32_MAX);
}

/* Frees what the loop owns, when nothing is left that h2o would assert on;
 * otherwise (connections still open after the deadline) the exit frees it. */
static void finish_loop(notesd_loop_t *loop)
{
    if (loop->stats.open_connections > 0 || !pool_is_empty(&loop->pool))
        return;
    h2o_socket_read_stop(loop->wakeup);
    h2o_socket_close(loop->wakeup);
    lag_stop(&loop->lag);
    h2o_timeout_dispose(loop->ctx.loop, &loop->drain_timeout);
    listen_dispose(&loop->listen);
    pool_dispose(&loop->pool);
    timers_stop(&loop->timers);
}

static void *worker_main(void *arg)
{
    notesd_loop_t *loop = arg;
    start_loop(loop);
    run_loop(loop);
    finish_loop(loop);
    return NULL;
}

int main(int argc, char **argv)
{
    char err[512], db[256];

    cfg = config_load(argc, argv);
    if (cfg->db_url == NULL || cfg->db_url[0] == '\0') {
        fprintf(stderr, "notesd: DB_URL is not set (a libpq URI such as "
                        "postgresql://user@127.0.0.1:5432/notes; see --help)\n");
        return 2;
    }
    if (cfg->pool_max < cfg->threads) {
        fprintf(stderr, "notesd: POOL_MAX (%d) must be at least THREADS (%d) (see --help)\n",
                cfg->pool_max, cfg->threads);
        return 2;
    }
    /* h2o writes with writev(), which raises SIGPIPE on a peer that went away. */
    signal(SIGPIPE, SIG_IGN);

    /* Everything that can be wrong with the settings is found before any listener opens. */
    /* Every loop's memory exists before any thread starts, so no thread
     * publishes a pointer that another one reads. */
    loops_init(cfg->threads, cfg->lag_interval_ms);
    pool_settings_t pool_settings = pool_settings_of(0);
    if (pgparams_build(&pgparams, cfg->db_url, &pool_settings, statements, STMT__COUNT, err,
                       sizeof(err)) != 0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    int max_connections = admit_by_fd_limit();
    if (max_connections < 0)
        return 2;
    configure_loops(max_connections);
    /* The settings of every request: the process's, read-only from here on. */
    static request_settings_t request_settings;
    request_settings =
        (request_settings_t){.server_timing = cfg->server_timing,
                             .answer_half_closed = cfg->half_close == CONFIG_HALF_CLOSE_ANSWER,
                             .primes_max = cfg->primes_max,
                             .max_body_bytes = (size_t)cfg->max_body_bytes,
                             .static_dir = cfg->static_dir,
                             .ws = {
                                 .max_message_bytes = (uint64_t)cfg->ws_max_message_bytes,
                                 .max_fragment_bytes = (uint64_t)cfg->ws_max_fragment_bytes,
                                 .max_messages = (uint64_t)cfg->ws_max_messages,
                                 .idle_timeout_ms = (uint64_t)cfg->ws_idle_timeout_ms,
                             }};
    http_configure(cfg, &request_settings);
    if (http_tls_configure(cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "notesd: %s\n", err);
        return 2;
    }
    if (http_open_listeners(cfg) != 0)
        return 1;

    /* Block the signals before any thread starts, so only loop 0's signalfd sees them. */
    sigset_t set = stop_signals();
    sigprocmask(SIG_BLOCK, &set, NULL);

    for (int i = 0; i < server.nloops; i++) {
        notesd_loop_t *loop = &server.loops[i];
        int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fd < 0) {
            perror("notesd: eventfd");
            return 1;
        }
        loop->state = LOOP_RUNNING;
        loop->wakeup_fd = fd; /* wrapped for the loop by start_loop, on its own thread */
    }
    for (int i = 1; i < server.nloops; i++)
        if (pthread_create(&server.loops[i].thread, NULL, worker_main, &server.loops[i]) != 0) {
            perror("notesd: pthread_create");
            return 1;
        }
    notesd_loop_t *main_loop = &server.loops[0];
    start_loop(main_loop);
    signals = watch_signals(main_loop->ctx.loop);

    describe_db(db, sizeof(db));
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
              cfg->prepared ? "prepared" : "unnamed", pipeline, max_connections, db);
    /* Every listener is bound and every loop's thread started: connections are
     * accepted from here on, so a Type=notify service is started. */
    char ready[160];
    snprintf(ready, sizeof(ready), "READY=1\nSTATUS=API on port %d, %d loop(s)", server.api_port,
             server.nloops);
    notify_systemd(ready);

    run_loop(main_loop);
    for (int i = 1; i < server.nloops; i++)
        pthread_join(server.loops[i].thread, NULL);
    h2o_socket_read_stop(signals);
    h2o_socket_close(signals);
    finish_loop(main_loop);
    pgparams_free(&pgparams);
    log_info("%s", "stopped");
    return 0;
}
