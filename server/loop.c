/*
 * loop.c - the loops' memory, allocated once before any thread starts, and
 * their lives: threads, signals, the drain and the stop (see loop.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "log.h"
#include "loop.h"
#include "sdnotify.h"

notesd_server_t server;

static h2o_socket_t *signals; /* loop 0's signalfd */
static int shutdown_requested;

void loops_init(int n, int lag_interval_ms, int shutdown_timeout_ms, int journal)
{
    server.nloops = n;
    server.shutdown_timeout_ms = shutdown_timeout_ms;
    server.loops = calloc((size_t)n, sizeof(*server.loops));
    if (server.loops == NULL)
        abort(); /* out of memory at start-up: nothing to recover */
    for (int i = 0; i < n; i++) {
        notesd_loop_t *loop = &server.loops[i];
        loop->index = i;
        stats_loop_init(&loop->stats);
        if (listen_init(&loop->listen, (unsigned)i, &server.api_budget) != 0 ||
            (loop->wakeup_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
            perror("notesd: eventfd");
            exit(1);
        }
        lag_init(&loop->lag, lag_interval_ms);
        if (journal_init(&loop->journal, (size_t)journal) != 0) {
            fprintf(stderr, "notesd: JOURNAL=%d: cannot allocate %zu bytes for loop %d's ring\n",
                    journal, (size_t)journal * sizeof(journal_record_t), i);
            exit(2);
        }
        ws_loop_init(&loop->ws, &loop->timers, journal > 0 ? &loop->journal : NULL);
        loop->view = (request_loop_t){.index = (unsigned)i,
                                      .timers = &loop->timers,
                                      .pool = &loop->pool,
                                      .stats = &loop->stats,
                                      .ws = &loop->ws,
                                      .lag = &loop->lag,
                                      .listen = &loop->listen,
                                      .journal = journal > 0 ? &loop->journal : NULL};
        server.views[i] = &loop->view;
    }
}

/* ---- one loop's shutdown ----------------------------------------------------------------- */

/* How often a draining loop looks whether it is done. */
#define DRAIN_CHECK_NS (20 * 1000000ULL)

static void on_drain_check(timer_entry_t *entry)
{
    notesd_loop_t *loop = H2O_STRUCT_FROM_MEMBER(notesd_loop_t, drain_check, entry);
    int drained =
        loop->stats.in_flight == 0 && pool_is_empty(&loop->pool) && ws_is_empty(&loop->ws);

    if (drained || stats_now_ns() >= loop->drain_deadline_ns) {
        if (!drained)
            log_warn("shutdown: loop %d: %lld request(s) still in flight after %d ms; exiting",
                     loop->index, (long long)loop->stats.in_flight, server.shutdown_timeout_ms);
        loop->state = LOOP_STOPPED;
        return;
    }
    timers_link(&loop->timers, entry, stats_now_ns() + DRAIN_CHECK_NS);
}

/* On the loop's own thread. */
static void begin_shutdown(notesd_loop_t *loop)
{
    loop->state = LOOP_DRAINING;
    listen_stop(&loop->listen);
    /* The next response on each keep-alive connection says Connection: close. */
    h2o_context_request_shutdown(&loop->ctx);
    if (loop->metrics_ctx.loop != NULL)
        h2o_context_request_shutdown(&loop->metrics_ctx);
    pool_shutdown(&loop->pool);
    ws_shutdown(&loop->ws); /* every WebSocket gets a close with 1001 */
    loop->drain_deadline_ns = stats_now_ns() + (uint64_t)server.shutdown_timeout_ms * 1000000;
    timers_link(&loop->timers, &loop->drain_check, stats_now_ns() + DRAIN_CHECK_NS);
}

static void on_wakeup(h2o_socket_t *sock, const char *err)
{
    notesd_loop_t *loop = sock->data;
    uint64_t n;
    if (read(h2o_socket_get_fd(sock), &n, sizeof(n)) == sizeof(n) && loop->state == LOOP_RUNNING)
        begin_shutdown(loop);
}

/* ---- signals, on loop 0 ------------------------------------------------------------------ */

/* The signals that stop the server: blocked in every thread, read by loop 0's signalfd. */
static sigset_t stop_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
}

static void on_signal(h2o_socket_t *sock, const char *err)
{
    notesd_loop_t *loop = sock->data;
    struct signalfd_siginfo info;

    while (read(h2o_socket_get_fd(sock), &info, sizeof(info)) == sizeof(info)) {
        const char *name = info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
        if (shutdown_requested) {
            log_warn("%s again: exiting now", name);
            _exit(1);
        }
        shutdown_requested = 1;
        /* systemd hears that the service is stopping; nothing without NOTIFY_SOCKET */
        if (sdnotify_send("STOPPING=1") < 0)
            log_warn("cannot notify systemd at NOTIFY_SOCKET=%s: %s", getenv("NOTIFY_SOCKET"),
                     strerror(errno));
        log_info("%s: no new connections; finishing in-flight requests (up to %d ms)", name,
                 server.shutdown_timeout_ms);
        uint64_t one = 1;
        for (int i = 1; i < server.nloops; i++)
            if (write(server.loops[i].wakeup_fd, &one, sizeof(one)) < 0)
                log_error("cannot wake loop %d", i);
        begin_shutdown(loop);
    }
}

static h2o_socket_t *watch_signals(notesd_loop_t *loop)
{
    sigset_t set = stop_signals();
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        perror("notesd: signalfd");
        exit(1);
    }
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = loop;
    h2o_socket_read_start(sock, on_signal);
    return sock;
}

/* ---- one loop's life ----------------------------------------------------------------------- */

/* On the loop's own thread: everything that belongs to one event loop. */
static void start_loop(notesd_loop_t *loop)
{
    h2o_loop_t *evloop = h2o_evloop_create();
    if (timers_start(&loop->timers, evloop) != 0) {
        perror("notesd: timerfd_create");
        exit(1);
    }
    server.start_http(loop, evloop);
    pool_start(&loop->pool, evloop, &loop->timers);
    lag_start(&loop->lag, &loop->timers);
    loop->drain_check.cb = on_drain_check;
    loop->wakeup = h2o_evloop_socket_create(evloop, loop->wakeup_fd, H2O_SOCKET_FLAG_DONT_READ);
    loop->wakeup->data = loop;
    h2o_socket_read_start(loop->wakeup, on_wakeup);
    loop->state = LOOP_RUNNING;
}

static void run_loop(notesd_loop_t *loop)
{
    /* h2o_evloop_run returns -1 on EINTR too; its result is not a reason to stop.
     * Each call is one turn; what the turn queued for its end (the database
     * connections' syncs) goes out before the loop waits again. */
    while (loop->state != LOOP_STOPPED) {
        h2o_evloop_run(loop->ctx.loop, INT32_MAX);
        if (timers_turn_pending(&loop->timers))
            timers_end_turn(&loop->timers);
    }
}

/* Frees what the loop owns, when nothing is left that h2o would assert on;
 * otherwise (connections still open after the deadline) the exit frees it. */
static void finish_loop(notesd_loop_t *loop)
{
    if (listen_open_connections(&loop->listen) > 0 || !pool_is_empty(&loop->pool))
        return;
    h2o_socket_read_stop(loop->wakeup);
    h2o_socket_close(loop->wakeup);
    lag_stop(&loop->lag);
    timers_unlink(&loop->timers, &loop->drain_check);
    listen_dispose(&loop->listen);
    pool_dispose(&loop->pool);
    server.stop_http(loop); /* the route modules' state on the loop goes (dispatch.c) */
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

int loops_start(void)
{
    sigset_t set = stop_signals();
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 1; i < server.nloops; i++)
        if (pthread_create(&server.loops[i].thread, NULL, worker_main, &server.loops[i]) != 0) {
            perror("notesd: pthread_create");
            return -1;
        }
    start_loop(&server.loops[0]);
    signals = watch_signals(&server.loops[0]);
    return 0;
}

void loops_run(void)
{
    notesd_loop_t *main_loop = &server.loops[0];
    run_loop(main_loop);
    for (int i = 1; i < server.nloops; i++)
        pthread_join(server.loops[i].thread, NULL);
    h2o_socket_read_stop(signals);
    h2o_socket_close(signals);
    finish_loop(main_loop);
}
