/*
 * listen.c - admission: the descriptor budget, listeners, their states and
 * connection budgets, and accepting (see listen.h).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "listen.h"
#include "log.h"

/* How long a listener out of descriptors waits before it tries again. */
#define LISTEN_BACKOFF_NS (100 * 1000000ULL)

static void on_accept(h2o_socket_t *listener, const char *err);

/* Every state change of a listener goes through here: only an ACCEPTING
 * listener is watched, so a full or starved one costs the loop nothing. */
static void listener_set_state(listener_t *l, enum listener_state state)
{
    assert(l->state != LISTENER_CLOSED);
    if (state == LISTENER_ACCEPTING && l->state != LISTENER_ACCEPTING)
        h2o_socket_read_start(l->sock, on_accept);
    else if (state != LISTENER_ACCEPTING && l->state == LISTENER_ACCEPTING)
        h2o_socket_read_stop(l->sock);
    if (state == LISTENER_CLOSED) {
        if (l->set->timers != NULL)
            timers_unlink(l->set->timers, &l->backoff);
        h2o_socket_close(l->sock);
        l->sock = NULL;
    }
    l->state = state;
}

/* Moves every listener of the loop that draws on `budget` from `from` to `to`:
 * the API and TLS listeners share one, so both stop when it is spent and both
 * start again when a place frees up. */
static void budget_move(listeners_t *set, conn_budget_t *budget, enum listener_state from,
                        enum listener_state to)
{
    listener_t *all[] = {&set->api, &set->tls, &set->metrics};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->budget == budget && all[i]->state == from) {
            if (to == LISTENER_FULL)
                STAT_ADD(set->stats.paused_full, 1);
            listener_set_state(all[i], to);
        }
}

/* ---- budgets: one count, taken and given back by any loop ------------------------------ */

static uint64_t loop_bit(const listeners_t *set)
{
    return UINT64_C(1) << set->index;
}

/* Takes a place for one connection; 0 when the budget is spent. A compare and
 * swap, so the count never goes past max even for a moment: a loop that looked
 * while another's take was being undone would wait for a place that is free. */
static int budget_take(conn_budget_t *b)
{
    size_t open = __atomic_load_n(&b->open, __ATOMIC_SEQ_CST);
    do {
        if (open >= b->max)
            return 0;
    } while (!__atomic_compare_exchange_n(&b->open, &open, open + 1, 0, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    return 1;
}

/* The loop's listeners on `b` read again: a place may be free. */
static void budget_resume(listeners_t *set, conn_budget_t *b)
{
    __atomic_and_fetch(&b->paused, ~loop_bit(set), __ATOMIC_SEQ_CST);
    budget_move(set, b, LISTENER_FULL, LISTENER_ACCEPTING);
}

/* The budget is spent: the loop's listeners on it stop until a place frees
 * up, on any loop. The bit goes up before the count is looked at again, and
 * budget_give lowers the count before it looks at the bits, so a place freed
 * in between is seen by one side or the other, never lost. */
static void budget_wait(listeners_t *set, conn_budget_t *b)
{
    __atomic_or_fetch(&b->paused, loop_bit(set), __ATOMIC_SEQ_CST);
    budget_move(set, b, LISTENER_ACCEPTING, LISTENER_FULL);
    if (__atomic_load_n(&b->open, __ATOMIC_SEQ_CST) < b->max)
        budget_resume(set, b);
}

/* Gives a place back (on the loop whose connection closed, or whose accept
 * found no client after all) and wakes every loop waiting for one: this one
 * directly, the others through their eventfd. Each takes what it can; the
 * others wait again. */
static void budget_give(listeners_t *set, conn_budget_t *b)
{
    __atomic_sub_fetch(&b->open, 1, __ATOMIC_SEQ_CST);
    uint64_t paused = __atomic_load_n(&b->paused, __ATOMIC_SEQ_CST);
    for (unsigned i = 0; paused != 0; i++, paused >>= 1) {
        if ((paused & 1) == 0)
            continue;
        uint64_t one = 1;
        if (i == set->index)
            budget_resume(set, b);
        else if (write(b->wake_fd[i], &one, sizeof(one)) < 0) {
            /* EAGAIN: the counter is full, so a wake-up is pending anyway. */
        }
    }
}

/* Another loop freed a place of the shared budget. */
static void on_wake(h2o_socket_t *sock, const char *err)
{
    listeners_t *set = sock->data;
    uint64_t n;
    if (read(set->wake_fd, &n, sizeof(n)) < 0) {
        /* EAGAIN: woken twice for one write; nothing to read */
    }
    if (__atomic_load_n(&set->api_budget->paused, __ATOMIC_SEQ_CST) & loop_bit(set))
        budget_resume(set, set->api_budget);
}

static void on_connection_closed(void *data)
{
    listener_t *l = data;
    STAT_SUB(l->set->stats.open, 1);
    /* One place is free again: take the next clients from the backlog. */
    budget_give(l->set, l->budget);
}

/* ---- the metrics port's connections --------------------------------------------------------
 *
 * Each one is tracked from accept to close, so that when the port's places are
 * all taken and a client waits, the one idle the longest can be closed for it:
 * sockets that send nothing, or stopped between requests, cannot keep a
 * scraper out. A busy one (an answer being made or written) is never closed
 * for room; its answer has a deadline instead. Closing is a shutdown() of the
 * socket: h2o then sees the end and closes the connection itself, disposing
 * of its request, as it does for a client that leaves. */

typedef struct metrics_conn {
    h2o_linklist_t link; /* in set->metrics_conns, in the order accepted */
    listener_t *listener;
    h2o_socket_t *sock;     /* NULL once h2o closed it */
    uint64_t active_ns;     /* accepted, or a request of it began or ended */
    unsigned busy;          /* its requests not yet disposed of (HTTP/1.1: 0 or 1) */
    uint8_t closing;        /* shut down by notesd: on its way out */
    timer_entry_t too_slow; /* while busy: the deadline of its answer */
} metrics_conn_t;

static void on_metrics_conn_closed(void *data);

/* Shuts the connection down for `why`; h2o closes it when it sees that. */
static void metrics_conn_shut(metrics_conn_t *mc, uint64_t *why)
{
    mc->closing = 1;
    STAT_ADD(*why, 1);
    shutdown(h2o_socket_get_fd(mc->sock), SHUT_RDWR);
}

static void on_answer_too_slow(timer_entry_t *entry)
{
    metrics_conn_t *mc = H2O_STRUCT_FROM_MEMBER(metrics_conn_t, too_slow, entry);
    if (mc->sock != NULL && !mc->closing)
        metrics_conn_shut(mc, &mc->listener->set->stats.metrics_too_slow);
}

/* 1 if a client waits in the listener's backlog. */
static int client_waiting(const listener_t *l)
{
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

/* The connection idle the longest that is not already on its way out, or NULL. */
static metrics_conn_t *metrics_idlest(listeners_t *set)
{
    metrics_conn_t *idlest = NULL;
    for (h2o_linklist_t *n = set->metrics_conns.next; n != &set->metrics_conns; n = n->next) {
        metrics_conn_t *mc = H2O_STRUCT_FROM_MEMBER(metrics_conn_t, link, n);
        if (mc->busy == 0 && !mc->closing && (idlest == NULL || mc->active_ns < idlest->active_ns))
            idlest = mc;
    }
    return idlest;
}

/* 1 if a connection is on its way out: its place is the next client's. */
static int metrics_closing(listeners_t *set)
{
    for (h2o_linklist_t *n = set->metrics_conns.next; n != &set->metrics_conns; n = n->next)
        if (H2O_STRUCT_FROM_MEMBER(metrics_conn_t, link, n)->closing)
            return 1;
    return 0;
}

/* The metrics port is full. Returns 1 when the listener stays watched: no
 * client waits yet, and one connection is idle, to be closed for the next
 * client that comes (which the listener must see). When a client waits, the
 * connection idle the longest is closed for it, unless one is closing
 * already; the listener then waits for that close (budget_give resumes it),
 * as it does when every connection is busy. */
static int metrics_full(listeners_t *set)
{
    metrics_conn_t *idlest = metrics_idlest(set);
    if (!client_waiting(&set->metrics))
        return idlest != NULL;
    if (idlest != NULL && !metrics_closing(set))
        metrics_conn_shut(idlest, &set->stats.metrics_evicted);
    return 0;
}

static void metrics_conn_track(listener_t *l, h2o_socket_t *sock)
{
    metrics_conn_t *mc = calloc(1, sizeof(*mc));
    if (mc == NULL)
        abort(); /* out of memory: see main.c */
    mc->listener = l;
    mc->sock = sock;
    mc->active_ns = stats_now_ns();
    mc->too_slow.cb = on_answer_too_slow;
    h2o_linklist_insert(&l->set->metrics_conns, &mc->link);
    sock->on_close.cb = on_metrics_conn_closed;
    sock->on_close.data = mc;
}

/* Frees the connection's record once it is closed and its last request disposed of. */
static void metrics_conn_release(metrics_conn_t *mc)
{
    if (mc->sock == NULL && mc->busy == 0)
        free(mc);
}

static void on_metrics_conn_closed(void *data)
{
    metrics_conn_t *mc = data;
    listener_t *l = mc->listener;
    timers_unlink(l->set->timers, &mc->too_slow);
    h2o_linklist_unlink(&mc->link);
    mc->sock = NULL;
    metrics_conn_release(mc);
    on_connection_closed(l);
}

static void on_metrics_request_done(void *p)
{
    metrics_conn_t *mc = *(metrics_conn_t **)p;
    mc->active_ns = stats_now_ns();
    if (--mc->busy == 0 && mc->sock != NULL) {
        listener_t *l = mc->listener;
        timers_unlink(l->set->timers, &mc->too_slow);
        /* Idle now: a client waiting for a place may take this one's. */
        if (l->state == LISTENER_FULL)
            listener_set_state(l, LISTENER_ACCEPTING);
    }
    metrics_conn_release(mc);
}

void listen_metrics_request(listeners_t *set, h2o_req_t *req)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || sock->on_close.cb != on_metrics_conn_closed)
        return;
    metrics_conn_t *mc = sock->on_close.data;
    metrics_conn_t **done =
        h2o_mem_alloc_shared(&req->pool, sizeof(*done), on_metrics_request_done);
    *done = mc;
    mc->active_ns = stats_now_ns();
    if (mc->busy++ == 0)
        timers_link(set->timers, &mc->too_slow, mc->active_ns + set->answer_timeout_ns);
}

/* What listen_metrics_hold holds, given back when the request is disposed of. */
typedef struct metrics_hold {
    listeners_t *set;
    size_t bytes;
} metrics_hold_t;

static void on_hold_released(void *p)
{
    metrics_hold_t *h = p;
    STAT_SUB(h->set->stats.metrics_held, h->bytes);
}

int listen_metrics_hold(listeners_t *set, h2o_mem_pool_t *pool, size_t bytes)
{
    if (bytes > LISTEN_METRICS_HOLD_MAX - set->stats.metrics_held)
        return -1;
    STAT_ADD(set->stats.metrics_held, bytes);
    metrics_hold_t *h = h2o_mem_alloc_shared(pool, sizeof(*h), on_hold_released);
    h->set = set;
    h->bytes = bytes;
    return 0;
}

/* ---- accepting ------------------------------------------------------------------------------ */

static void on_backoff_end(timer_entry_t *entry)
{
    listener_t *l = H2O_STRUCT_FROM_MEMBER(listener_t, backoff, entry);
    if (l->state != LISTENER_BACKOFF)
        return;
    listener_set_state(l, LISTENER_ACCEPTING);
    if (__atomic_load_n(&l->budget->open, __ATOMIC_SEQ_CST) >= l->budget->max)
        budget_wait(l->set, l->budget);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    listener_t *l = listener->data;
    listeners_t *set = l->set;
    conn_budget_t *budget = l->budget;
    h2o_socket_t *sock;

    if (err != NULL)
        return;
    /* Accept everything that is waiting, so a burst costs one wake-up, up to the limit. */
    while (budget_take(budget)) {
        if ((sock = h2o_evloop_socket_accept(listener)) == NULL) {
            budget_give(set, budget); /* not taken after all */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The listener stays readable, and epoll is level-triggered: retrying
                 * now would spin. The clients wait in the backlog meanwhile. */
                STAT_ADD(set->stats.paused_fds, 1);
                /* Once per episode, not every 100 ms; the counts are the process's, whichever
                 * listener ran out (the metrics port's own budget is nearly always empty). */
                if (!l->starved)
                    log_warn("accept on the %s port: %s; pausing 100 ms at a time until one is "
                             "free (%zu API connections open, %zu on the metrics port)",
                             l == &set->metrics ? "metrics"
                             : l == &set->tls   ? "TLS"
                                                : "API",
                             strerror(errno),
                             __atomic_load_n(&set->api_budget->open, __ATOMIC_SEQ_CST),
                             __atomic_load_n(&set->metrics_budget.open, __ATOMIC_SEQ_CST));
                l->starved = 1;
                listener_set_state(l, LISTENER_BACKOFF);
                timers_link(set->timers, &l->backoff, stats_now_ns() + LISTEN_BACKOFF_NS);
            }
            return; /* EAGAIN: nothing more waiting */
        }
        l->starved = 0;
        STAT_ADD(set->stats.open, 1);
        if (l == &set->metrics) {
            metrics_conn_track(l, sock);
        } else {
            STAT_ADD(set->stats.accepted, 1);
            sock->on_close.cb = on_connection_closed;
            sock->on_close.data = l;
        }
        h2o_accept(&l->accept, sock);
    }
    if (l == &set->metrics && metrics_full(set))
        return;
    budget_wait(set, budget);
}

int listen_init(listeners_t *set, unsigned index, conn_budget_t *api_budget)
{
    assert(index < LISTEN_MAX_LOOPS);
    memset(set, 0, sizeof(*set));
    set->index = index;
    listener_t *all[] = {&set->api, &set->tls, &set->metrics};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        all[i]->fd = -1;
        all[i]->state = LISTENER_CLOSED;
        all[i]->set = set;
    }
    set->api_budget = api_budget;
    set->api.budget = set->tls.budget = api_budget; /* every loop's, plain and TLS */
    set->metrics.budget = &set->metrics_budget;
    h2o_linklist_init_anchor(&set->metrics_conns);
    /* Created now, before any thread starts, so another loop never reads it half-made. */
    if ((set->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return -1;
    api_budget->wake_fd[index] = set->wake_fd;
    set->metrics_budget.wake_fd[index] = set->wake_fd;
    return 0;
}

int listen_bind(const char *host, int port, int reuseport, int *bound)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV},
                    *res;
    struct sockaddr_storage addr;
    socklen_t addrlen = sizeof(addr);
    char portstr[16];
    int fd, on = 1, rc;

    snprintf(portstr, sizeof(portstr), "%d", port);
    if ((rc = getaddrinfo(host, portstr, &hints, &res)) != 0) {
        log_error("cannot listen on %s:%d: %s (an IP address is expected)", host, port,
                  gai_strerror(rc));
        return -1;
    }
    if ((fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, H2O_SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &addrlen) != 0) {
        log_error("cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    *bound = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                              : ((struct sockaddr_in *)&addr)->sin_port);
    return fd;
}

static void watch_listener(listener_t *l, h2o_context_t *ctx, h2o_hostconf_t **hosts,
                           SSL_CTX *ssl_ctx)
{
    if (l->fd < 0)
        return;
    l->accept.ctx = ctx;
    l->accept.hosts = hosts;
    l->accept.ssl_ctx = ssl_ctx; /* h2o does the handshake, then ALPN picks the protocol */
    l->backoff.cb = on_backoff_end;
    l->sock = h2o_evloop_socket_create(ctx->loop, l->fd, H2O_SOCKET_FLAG_DONT_READ);
    l->sock->data = l;
    l->state = LISTENER_FULL; /* watched from the next line on */
    listener_set_state(l, LISTENER_ACCEPTING);
}

void listen_start(listeners_t *set, h2o_context_t *ctx, h2o_context_t *metrics_ctx,
                  timers_t *timers, h2o_hostconf_t **api_hosts, h2o_hostconf_t **metrics_hosts,
                  SSL_CTX *ssl_ctx, uint64_t answer_timeout_ms)
{
    set->timers = timers;
    set->answer_timeout_ns = answer_timeout_ms * 1000000;
    set->wake = h2o_evloop_socket_create(ctx->loop, set->wake_fd, H2O_SOCKET_FLAG_DONT_READ);
    set->wake->data = set;
    h2o_socket_read_start(set->wake, on_wake);
    watch_listener(&set->api, ctx, api_hosts, NULL);
    watch_listener(&set->tls, ctx, api_hosts, ssl_ctx);
    watch_listener(&set->metrics, metrics_ctx, metrics_hosts, NULL);
}

void listen_stop(listeners_t *set)
{
    listener_t *all[] = {&set->api, &set->tls, &set->metrics};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->state != LISTENER_CLOSED)
            listener_set_state(all[i], LISTENER_CLOSED);
}

void listen_dispose(listeners_t *set)
{
    /* The wake-up eventfd stays open until the process exits: another loop
     * still running may write to it, and a closed number could be reused. */
    h2o_socket_read_stop(set->wake);
}

/* ---- admission ---------------------------------------------------------------------------- */

/* The descriptors notesd holds besides its API connections, as they are (see
 * "Admission" in docs/decisions.md), kept back from MAX_CONNECTIONS's default:
 * - per database connection, two: libpq's socket and the dup the loop watches (pgconn.c);
 * - per loop, its API listener, its TLS one, the listeners' wake-up eventfd, epoll,
 *   h2o's queue pipe (two ends), the timer service's timerfd and the shutdown eventfd;
 * - the metrics port: its listener and its own budget of connections;
 * - the process: stdio, the signalfd, the two files a scrape reads in /proc, and
 *   static files being sent (h2o's file handler holds one per response in flight;
 *   past these, it answers 503). */
#define FDS_PER_DB_CONNECTION 2
#define FDS_PER_LOOP(tls) (2 + ((tls) ? 1 : 0) + 5)
#define FDS_METRICS (1 + LISTEN_METRICS_MAX_CONNECTIONS)
#define FDS_STATIC_FILES 16
#define FDS_PROCESS (3 + 1 + 2 + FDS_STATIC_FILES)

static long fds_kept_back(const listen_admission_t *a)
{
    return (long)FDS_PER_DB_CONNECTION * a->db_connections + (long)FDS_PER_LOOP(a->tls) * a->loops +
           (a->metrics ? FDS_METRICS : 0) + FDS_PROCESS;
}

int listen_admit(const listen_admission_t *a, char *err, size_t len)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(err, len, "getrlimit: %s", strerror(errno));
        return -1;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t soft = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = soft; /* keep what we have */
    }
    long fds = rl.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (long)rl.rlim_cur;
    long kept = fds_kept_back(a), room = fds - kept;
    if (a->max_connections == 0) {
        if (room < 1) {
            snprintf(err, len,
                     "RLIMIT_NOFILE (%ld) leaves no descriptor for connections after the %ld the "
                     "pool (%d per connection), the loops and the process hold; raise it (ulimit "
                     "-n) or set MAX_CONNECTIONS (see --help)",
                     fds, kept, FDS_PER_DB_CONNECTION);
            return -1;
        }
        return room > INT_MAX ? INT_MAX : (int)room;
    }
    if (a->max_connections > room)
        log_warn("MAX_CONNECTIONS (%d) is more than RLIMIT_NOFILE (%ld) leaves room for (%ld); "
                 "when descriptors run out, accepting pauses for 100 ms at a time",
                 a->max_connections, fds, room < 0 ? 0 : room);
    return a->max_connections;
}

/* ---- the metrics page's figures ----------------------------------------------------------- */

void listen_report_add(listen_report_t *r, const listeners_t *set)
{
    r->sum.open += STAT_READ(set->stats.open);
    r->sum.accepted += STAT_READ(set->stats.accepted);
    r->sum.paused_full += STAT_READ(set->stats.paused_full);
    r->sum.paused_fds += STAT_READ(set->stats.paused_fds);
    r->sum.metrics_evicted += STAT_READ(set->stats.metrics_evicted);
    r->sum.metrics_too_slow += STAT_READ(set->stats.metrics_too_slow);
    r->sum.metrics_held += STAT_READ(set->stats.metrics_held);
    r->max = set->api_budget->max; /* every loop's is the same one */
}

void listen_report_write(const listen_report_t *r, exposition_t *o)
{
    exposition_one(o, "notes_http_connections", "gauge", "Open HTTP connections on both ports.",
                   r->sum.open);
    exposition_one(o, "notes_http_connections_max", "gauge",
                   "Most open API connections, plain and TLS, all loops together "
                   "(MAX_CONNECTIONS); beyond it clients wait in the backlog.",
                   r->max);
    exposition_family(o, "notes_http_accept_paused_total", "counter",
                      "Times a listener stopped accepting: at MAX_CONNECTIONS, or out of "
                      "descriptors.");
    exposition_printf(o,
                      "notes_http_accept_paused_total{reason=\"max_connections\"} %llu\n"
                      "notes_http_accept_paused_total{reason=\"fd_exhausted\"} %llu\n",
                      (unsigned long long)r->sum.paused_full,
                      (unsigned long long)r->sum.paused_fds);
    exposition_one(o, "notes_http_connections_accepted_total", "counter",
                   "Connections accepted on the API ports (plain and TLS), every protocol.",
                   r->sum.accepted);
    exposition_family(o, "notes_metrics_port_closed_total", "counter",
                      "Metrics-port connections notesd closed: the one idle the longest, for a "
                      "client waiting for a place; or one whose answer was not taken within "
                      "CLIENT_TIMEOUT_MS.");
    exposition_printf(o,
                      "notes_metrics_port_closed_total{reason=\"make_room\"} %llu\n"
                      "notes_metrics_port_closed_total{reason=\"too_slow\"} %llu\n",
                      (unsigned long long)r->sum.metrics_evicted,
                      (unsigned long long)r->sum.metrics_too_slow);
    exposition_one(o, "notes_metrics_port_held_bytes", "gauge",
                   "Bytes of answers (journal pages) the metrics port holds until they are "
                   "written; at most 16 MiB.",
                   r->sum.metrics_held);
}
