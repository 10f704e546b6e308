/*
 * test_pool.c - unit tests of server/pool.c on a real h2o event loop.
 *
 * No database is needed: the pool talks to addresses that fail in known ways.
 * Port 1 on the loopback refuses at once (the "database is down" case), and a
 * listening socket that never accepts completes the TCP handshake but never
 * answers libpq's startup packet (the "database hangs" case), so connections
 * stay in the connecting state for as long as the test wants.
 *
 * A third kind of address is a fake server (fake_server_start) that speaks just
 * enough of PostgreSQL's protocol to let a connection open, reads the queries
 * sent on it without answering any, and closes the connection after a given
 * number of them: a database that dies with queries in flight.
 *
 * The loop runs in short steps until a condition holds or a deadline passes;
 * nothing sleeps. Callbacks are counted and the counts checked afterwards, so
 * "exactly one callback per admitted query" is checked, not assumed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <h2o.h>
#include "check.h"
#include "log.h"
#include "pgparams.h"
#include "pool.h"

#define REFUSING_URL "postgresql://nobody@127.0.0.1:1/none"
#define DEADLINE_MS 5000

static const pool_statement_t statements[] = {
    {"test_one", "select $1::int", 1},
    {"test_two", "select 2", 0},
};
#define NSTATEMENTS (sizeof(statements) / sizeof(statements[0]))

/* ---- fixtures and loop driving --------------------------------------------------------------- */

typedef struct test_query {
    pool_query_t q;
    int calls;           /* how often the callback ran */
    enum pool_error err; /* what the last call said */
    int had_result;      /* whether it came with a PGresult */
} test_query_t;

static int callbacks;   /* over all queries of the current test */
static timers_t timers; /* the test loop's timer service (connect and query deadlines) */

static void on_query_done(pool_query_t *q, PGresult *res, enum pool_error err)
{
    test_query_t *t = q->data;
    t->calls++;
    t->err = err;
    t->had_result = res != NULL;
    callbacks++;
}

static void query_init(test_query_t *t, int statement)
{
    memset(t, 0, sizeof(*t));
    t->q.statement = statement;
    t->q.params[0] = "1";
    t->q.cb = on_query_done;
    t->q.data = t;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One turn of the loop, as run_loop in loop.c turns it: its events, then what
 * it queued for its end (a connection's sync). */
static void turn(h2o_loop_t *loop, int32_t max_wait_ms)
{
    h2o_evloop_run(loop, max_wait_ms);
    timers_end_turn(&timers);
}

/* Runs the loop in 10 ms steps until cond(arg) holds; returns 0 if the deadline passed first. */
static int run_until(h2o_loop_t *loop, int (*cond)(void *), void *arg)
{
    uint64_t deadline = now_ms() + DEADLINE_MS;
    while (!cond(arg)) {
        if (now_ms() > deadline)
            return 0;
        turn(loop, 10);
    }
    return 1;
}

static int callbacks_at_least(void *arg)
{
    return callbacks >= *(int *)arg;
}

static int fast_fail_over(void *arg)
{
    return stats_now_ns() >= ((pool_t *)arg)->down_until_ns;
}

static int retry_timer_idle(void *arg)
{
    return !timers_is_linked(&((pool_t *)arg)->retry);
}

static int wait_for_callbacks(h2o_loop_t *loop, int n)
{
    return run_until(loop, callbacks_at_least, &n);
}

#define CHECK_LISTS(pool, want_connecting, want_idle, want_busy, want_waiting)                     \
    do {                                                                                           \
        CHECK_INT_EQ((pool)->connecting.len, want_connecting);                                     \
        CHECK_INT_EQ((pool)->idle.len, want_idle);                                                 \
        CHECK_INT_EQ((pool)->busy.len, want_busy);                                                 \
        CHECK_INT_EQ((pool)->waiting.len, want_waiting);                                           \
    } while (0)

/* The settings of the pool under test: config.c's defaults, but an unbounded
 * queue. Each test changes what it depends on; nothing global is read. */
static pool_settings_t settings;

static void reset_settings(void)
{
    settings = (pool_settings_t){.max = 20,
                                 .queue_max = 0,
                                 .idle_timeout_ms = 10000,
                                 .acquire_timeout_ms = 10000,
                                 .connect_timeout_ms = 5000,
                                 .query_timeout_ms = 30000,
                                 .prepared = 0,
                                 .depth = 0};
    /* Discarded connections are logged as warnings; the checks below say more. */
    log_level_current = LOG_ERROR;
}

/* The connection parameters of the pools open on the test loop, freed by loop_finish. */
static pgparams_t params[2];
static int nparams;

/* pgparams_build for `url`, pool_configure with `settings`, then pool_start on
 * `loop`; returns pgparams_build's answer. */
static int pool_open(pool_t *pool, h2o_loop_t *loop, const char *url)
{
    char err[256] = "";
    pgparams_t *p = &params[nparams];
    int rc = pgparams_build(p, url, &settings, statements, NSTATEMENTS, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "    pgparams_build: %s\n", err);
        return rc;
    }
    nparams++;
    pool_configure(pool, &settings, &p->conn, statements, NSTATEMENTS);
    pool_start(pool, loop, &timers);
    return 0;
}

static h2o_loop_t *loop_create(void)
{
    callbacks = 0;
    h2o_loop_t *loop = h2o_evloop_create();
    if (timers_start(&timers, loop) != 0) {
        perror("timers_start");
        exit(1);
    }
    return loop;
}

static int pool_emptied(void *arg)
{
    return pool_is_empty(arg);
}

/* Shuts the pool down, runs the loop until its last connection is gone, and frees everything. */
static void pool_drain(pool_t *pool, h2o_loop_t *loop)
{
    pool_shutdown(pool);
    CHECK(run_until(loop, pool_emptied, pool));
    CHECK_LISTS(pool, 0, 0, 0, 0);
    turn(loop, 0); /* sockets closed above are freed on the next turn */
    if (pool_is_empty(pool) && pool->waiting.len == 0)
        pool_dispose(pool);
}

/* Frees the pools' parameters, stops the loop's timer service and frees the loop. */
static void loop_finish(h2o_loop_t *loop)
{
    while (nparams > 0)
        pgparams_free(&params[--nparams]);
    timers_stop(&timers);
    h2o_evloop_run(loop, 0); /* frees the timerfd's socket */
    h2o_evloop_destroy(loop);
}

static void pool_finish(pool_t *pool, h2o_loop_t *loop)
{
    pool_drain(pool, loop);
    loop_finish(loop);
}

/* A TCP listener on 127.0.0.1 that never accepts: connects succeed, nothing answers. */
static int silent_listener(int *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &slen) != 0) {
        perror("silent listener");
        exit(1);
    }
    *port = ntohs(sin.sin_port);
    return fd;
}

/* A PostgreSQL that lets one client connect, reads `close_after` queries
 * (their Execute messages) and the Sync after the last of them without
 * answering any, then closes the connection. It counts the Syncs it read: one
 * per batch. It runs on a thread of its own with blocking sockets; the pool
 * under test never waits for it. */
typedef struct fake_server {
    int listen_fd, port, close_after;
    int executes, syncs; /* read, as counted when it closed (after fake_server_stop) */
    pthread_t thread;
} fake_server_t;

static int read_exactly(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

static void *fake_server_main(void *arg)
{
    fake_server_t *f = arg;
    int fd = accept(f->listen_fd, NULL, NULL);
    unsigned char head[5], skip[4096];
    uint32_t len;

    if (fd < 0)
        return NULL;
    /* The startup packet: its length, then the rest. */
    if (read_exactly(fd, &len, 4) == 0 && ntohl(len) >= 8 && ntohl(len) - 4 <= sizeof(skip) &&
        read_exactly(fd, skip, ntohl(len) - 4) == 0) {
        /* AuthenticationOk, then ReadyForQuery (idle). */
        static const unsigned char ready[] = {'R', 0, 0, 0, 8, 0, 0, 0, 0, 'Z', 0, 0, 0, 5, 'I'};
        int last_synced = 0;
        if (write(fd, ready, sizeof(ready)) == (ssize_t)sizeof(ready))
            while (!(f->executes >= f->close_after && last_synced) &&
                   read_exactly(fd, head, 5) == 0) {
                memcpy(&len, head + 1, 4);
                size_t left = ntohl(len) - 4;
                while (left > 0) {
                    size_t n = left < sizeof(skip) ? left : sizeof(skip);
                    if (read_exactly(fd, skip, n) != 0)
                        break;
                    left -= n;
                }
                f->executes += head[0] == 'E';
                f->syncs += head[0] == 'S';
                last_synced = head[0] == 'S';
            }
    }
    close(fd);
    return NULL;
}

static void fake_server_start(fake_server_t *f, int close_after)
{
    f->listen_fd = silent_listener(&f->port);
    f->close_after = close_after;
    f->executes = f->syncs = 0;
    if (pthread_create(&f->thread, NULL, fake_server_main, f) != 0) {
        perror("pthread_create");
        exit(1);
    }
}

static void fake_server_stop(fake_server_t *f)
{
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}

/* ---- tests ------------------------------------------------------------------------------- */

/* pool_configure opens nothing: node-postgres connects lazily. */
static void pool_configure_opens_no_connection(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;

    reset_settings();
    settings.prepared = 1;
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK(pool_is_empty(&pool));
    CHECK(!pool_has_live_connection(&pool));
    CHECK_INT_EQ(pool.settings.max, 20);
    CHECK_INT_EQ(pool.per_conn, 1); /* --prepared alone: one query at a time per connection */
    pool_finish(&pool, loop);
}

static void refused_connect_fails_every_admitted_query_once(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[3];

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    /* pool_query only queues and starts connecting; one connection per waiter. */
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], i % 2);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
        CHECK_LISTS(&pool, i + 1, 0, 0, i + 1);
    }
    CHECK_INT_EQ(callbacks, 0); /* never before pool_query returns */

    CHECK(wait_for_callbacks(loop, 3));
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(t[i].calls, 1);
        CHECK_INT_EQ(t[i].err, POOL_ERR_UNAVAILABLE);
        CHECK_INT_EQ(t[i].had_result, 0);
    }
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.connection_errors, 3);
    CHECK_INT_EQ(pool.stats.connects, 0);
    CHECK_INT_EQ(pool.stats.rejected, 0);
    CHECK(!pool_has_live_connection(&pool));

    /* The retry timer armed on the way fires into an empty queue: no second callback. */
    CHECK(run_until(loop, retry_timer_idle, &pool));
    CHECK_INT_EQ(callbacks, 3);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    pool_finish(&pool, loop);
}

static void refused_connect_makes_the_next_query_fail_fast(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t first, fast, later;

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    CHECK_INT_EQ(pool.backoff_ms, 50);
    query_init(&first, 0);
    CHECK_INT_EQ(pool_query(&pool, &first.q), POOL_ADMITTED);
    CHECK(wait_for_callbacks(loop, 1));
    CHECK_INT_EQ(first.err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(pool.stats.connection_errors, 1);
    CHECK(pool.down_until_ns > stats_now_ns());
    CHECK_INT_EQ(pool.backoff_ms, 100);

    /* Right after the failure: answered at once, no connection attempt, no callback. */
    query_init(&fast, 0);
    CHECK_INT_EQ(pool_query(&pool, &fast.q), POOL_DOWN);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.rejected, 1);
    CHECK_INT_EQ(pool.stats.connection_errors, 1);

    /* Once the back-off is over, the pool tries again, and fails again, once. */
    CHECK(run_until(loop, fast_fail_over, &pool));
    query_init(&later, 1);
    CHECK_INT_EQ(pool_query(&pool, &later.q), POOL_ADMITTED);
    CHECK_LISTS(&pool, 1, 0, 0, 1);
    CHECK(wait_for_callbacks(loop, 2));
    CHECK_INT_EQ(later.calls, 1);
    CHECK_INT_EQ(later.err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(fast.calls, 0);
    CHECK_INT_EQ(first.calls, 1);
    CHECK_INT_EQ(pool.stats.connection_errors, 2);
    CHECK_INT_EQ(pool.stats.rejected, 1);
    CHECK_INT_EQ(pool.backoff_ms, 200);
    pool_finish(&pool, loop);
}

/* Connections failing together are one round: they double the back-off once. */
static void concurrent_failures_double_the_backoff_once(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[6];

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    uint64_t before = stats_now_ns();
    for (int i = 0; i < 6; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&pool, 6, 0, 0, 6);
    CHECK(wait_for_callbacks(loop, 6));
    CHECK_INT_EQ(pool.stats.connection_errors, 6);
    CHECK_INT_EQ(pool.backoff_ms, 100); /* 50 once doubled, not 50 * 2^6 */
    /* The fast-fail window is the first back-off, 50 ms, not a longer one. */
    CHECK(pool.down_until_ns > before && pool.down_until_ns <= stats_now_ns() + 50000000);
    for (int i = 0; i < 6; i++)
        CHECK_INT_EQ(t[i].calls, 1);
    pool_finish(&pool, loop);
}

/* Each later round doubles it again, up to a second. */
static void backoff_doubles_per_round_up_to_one_second(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[2];
    uint64_t expect = 50;

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    for (int round = 0; round < 7; round++) {
        CHECK(run_until(loop, fast_fail_over, &pool));
        callbacks = 0;
        for (int i = 0; i < 2; i++) {
            query_init(&t[i], 0);
            CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
        }
        CHECK(wait_for_callbacks(loop, 2));
        expect = expect * 2 > 1000 ? 1000 : expect * 2;
        CHECK_INT_EQ(pool.backoff_ms, expect);
    }
    CHECK_INT_EQ(pool.backoff_ms, 1000); /* 50 * 2^7 = 6400, capped */
    CHECK_INT_EQ(pool.stats.connection_errors, 14);
    pool_finish(&pool, loop);
}

static void queue_full_refuses_the_next_query_without_callback(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[4];

    reset_settings();
    settings.max = 2;
    settings.queue_max = 3;
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    /* Two connect (pool_max), all three wait: the loop has not run yet. */
    CHECK_LISTS(&pool, 2, 0, 0, 3);
    query_init(&t[3], 0);
    CHECK_INT_EQ(pool_query(&pool, &t[3].q), POOL_QUEUE_FULL);
    CHECK_LISTS(&pool, 2, 0, 0, 3);
    CHECK_INT_EQ(pool.stats.rejected, 1);

    CHECK(wait_for_callbacks(loop, 3));
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(t[i].calls, 1);
        CHECK_INT_EQ(t[i].err, POOL_ERR_UNAVAILABLE);
    }
    CHECK_INT_EQ(t[3].calls, 0);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.connection_errors, 2);
    CHECK_INT_EQ(pool.stats.rejected, 1);
    CHECK(run_until(loop, retry_timer_idle, &pool));
    CHECK_INT_EQ(callbacks, 3);
    pool_finish(&pool, loop);
}

static void cancelled_waiting_query_gets_no_callback(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[3];

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&pool, 3, 0, 0, 3);
    pool_query_cancel(&pool, &t[1].q);
    CHECK_LISTS(&pool, 3, 0, 0, 2);
    CHECK_INT_EQ(t[1].q.state, POOL_QUERY_DONE);
    pool_query_cancel(&pool, &t[1].q); /* twice does nothing */
    CHECK_LISTS(&pool, 3, 0, 0, 2);

    CHECK(wait_for_callbacks(loop, 2));
    CHECK(run_until(loop, retry_timer_idle, &pool));
    CHECK_INT_EQ(callbacks, 2);
    CHECK_INT_EQ(t[0].calls, 1);
    CHECK_INT_EQ(t[1].calls, 0);
    CHECK_INT_EQ(t[2].calls, 1);
    CHECK_INT_EQ(t[0].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(t[2].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(pool.stats.connection_errors, 3);
    /* Cancelling a query that is already done does nothing either. */
    pool_query_cancel(&pool, &t[0].q);
    CHECK_INT_EQ(t[0].calls, 1);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    pool_finish(&pool, loop);
}

/* The database accepts TCP but never answers: queries wait until the acquire timeout. */
static void silent_database_times_out_waiting_queries(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    char url[128];
    test_query_t t[4];
    int port, lfd = silent_listener(&port);

    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", port);
    reset_settings();
    settings.max = 2;
    settings.queue_max = 3;
    settings.acquire_timeout_ms = 50;
    settings.connect_timeout_ms = 300;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&pool, 2, 0, 0, 3);
    turn(loop, 10); /* the TCP connects complete; the startup packets go unanswered */
    CHECK_INT_EQ(callbacks, 0);
    CHECK_LISTS(&pool, 2, 0, 0, 3);
    query_init(&t[3], 0);
    CHECK_INT_EQ(pool_query(&pool, &t[3].q), POOL_QUEUE_FULL);
    CHECK_INT_EQ(pool.stats.rejected, 1);

    CHECK(wait_for_callbacks(loop, 3));
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(t[i].calls, 1);
        CHECK_INT_EQ(t[i].err, POOL_ERR_ACQUIRE_TIMEOUT);
    }
    CHECK_INT_EQ(t[3].calls, 0);
    CHECK_INT_EQ(pool.stats.acquire_timeouts, 3);
    CHECK_INT_EQ(pool.stats.connection_errors, 0);
    /* The connections are still trying: not failures yet, and not live either. */
    CHECK_LISTS(&pool, 2, 0, 0, 0);
    CHECK(!pool_has_live_connection(&pool));
    CHECK(!pool_is_empty(&pool));

    /* Nobody waits for them; the connect timeout ends them without another callback. */
    CHECK(run_until(loop, pool_emptied, &pool));
    CHECK_INT_EQ(pool.stats.connection_errors, 2);
    CHECK_INT_EQ(callbacks, 3);
    pool_finish(&pool, loop);
    close(lfd);
}

static void silent_database_connect_timeout_fails_waiting_queries(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    char url[128];
    test_query_t t[3], fast;
    int port, lfd = silent_listener(&port);

    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", port);
    reset_settings();
    settings.max = 2;
    settings.connect_timeout_ms = 100;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    /* the first fast-fail window 2 s, not 50 ms: on a busy machine more than 50 ms can pass
     * between the failures and the query below that must find the pool down */
    pool.backoff_ms = 2000;
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&pool, 2, 0, 0, 3);

    /* Both connects time out; with no connection left, all three waiters fail together. */
    CHECK(wait_for_callbacks(loop, 3));
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(t[i].calls, 1);
        CHECK_INT_EQ(t[i].err, POOL_ERR_UNAVAILABLE);
    }
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.connection_errors, 2);
    CHECK_INT_EQ(pool.stats.acquire_timeouts, 0);

    /* A timed-out connect counts as a failed one: fast-fail follows. */
    query_init(&fast, 0);
    CHECK_INT_EQ(pool_query(&pool, &fast.q), POOL_DOWN);
    CHECK_INT_EQ(pool.stats.rejected, 1);
    CHECK(run_until(loop, retry_timer_idle, &pool));
    CHECK_INT_EQ(callbacks, 3);
    pool_finish(&pool, loop);
    close(lfd);
}

/* With --pipeline N one connection carries N queries, so the pool opens one
 * connection per N waiters, not one per waiter; and each waiter still gets
 * exactly one callback when the connects fail. */
static void pipeline_opens_a_connection_per_depth_waiters(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    char url[128];
    test_query_t t[20];
    int port, lfd = silent_listener(&port);

    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", port);
    reset_settings();
    settings.depth = 8;
    settings.connect_timeout_ms = 100;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    CHECK_INT_EQ(pool.per_conn, 8);
    CHECK_INT_EQ(pool.params->pipeline, 1);
    for (int i = 0; i < 20; i++) {
        query_init(&t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&pool, 3, 0, 0, 20); /* ceil(20 / 8) */
    CHECK_INT_EQ(pool.in_flight, 0);
    CHECK(wait_for_callbacks(loop, 20));
    for (int i = 0; i < 20; i++) {
        CHECK_INT_EQ(t[i].calls, 1);
        CHECK_INT_EQ(t[i].err, POOL_ERR_UNAVAILABLE);
    }
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK(run_until(loop, retry_timer_idle, &pool));
    CHECK_INT_EQ(callbacks, 20);
    pool_finish(&pool, loop);
    close(lfd);
}

/* Graceful shutdown: queries already queued still get their one answer. */
static void shutdown_lets_waiting_queries_finish(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t[3];

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    for (int i = 0; i < 3; i++) {
        query_init(&t[i], 1);
        CHECK_INT_EQ(pool_query(&pool, &t[i].q), POOL_ADMITTED);
    }
    pool_query_cancel(&pool, &t[2].q);
    CHECK_LISTS(&pool, 3, 0, 0, 2);

    pool_shutdown(&pool);
    CHECK_INT_EQ(callbacks, 0);
    CHECK_LISTS(&pool, 3, 0, 0, 2);
    CHECK(!pool_is_empty(&pool));

    CHECK(run_until(loop, pool_emptied, &pool));
    CHECK(wait_for_callbacks(loop, 2));
    CHECK_INT_EQ(t[0].calls, 1);
    CHECK_INT_EQ(t[1].calls, 1);
    CHECK_INT_EQ(t[2].calls, 0);
    CHECK_INT_EQ(t[0].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(t[1].err, POOL_ERR_UNAVAILABLE);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.connection_errors, 3);
    CHECK_INT_EQ(pool.stats.rejected, 0);
    pool_finish(&pool, loop);
}

/* Draining: a new query is answered POOL_ERR_SHUTDOWN before pool_query returns,
 * counted as rejected, and opens no connection. */
static void shutdown_refuses_new_queries_at_once(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    test_query_t t;

    reset_settings();
    CHECK_INT_EQ(pool_open(&pool, loop, REFUSING_URL), 0);
    pool_shutdown(&pool);
    query_init(&t, 0);
    CHECK_INT_EQ(pool_query(&pool, &t.q), POOL_ADMITTED);
    CHECK_INT_EQ(t.calls, 1);
    CHECK_INT_EQ(t.err, POOL_ERR_SHUTDOWN);
    CHECK_INT_EQ(t.had_result, 0);
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(pool.stats.rejected, 1);
    CHECK(pool_is_empty(&pool));
    turn(loop, 10);
    CHECK_INT_EQ(pool.stats.connection_errors, 0);
    CHECK_INT_EQ(callbacks, 1);
    pool_finish(&pool, loop);
}

/* A connection that nobody waits for any more still ends once the pool shuts down. */
static void shutdown_empties_the_pool_within_the_connect_timeout(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    char url[128];
    test_query_t t;
    int port, lfd = silent_listener(&port);

    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", port);
    reset_settings();
    settings.connect_timeout_ms = 200;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    query_init(&t, 0);
    CHECK_INT_EQ(pool_query(&pool, &t.q), POOL_ADMITTED);
    turn(loop, 10);
    pool_query_cancel(&pool, &t.q);
    CHECK_LISTS(&pool, 1, 0, 0, 0);

    pool_shutdown(&pool);
    CHECK(run_until(loop, pool_emptied, &pool));
    CHECK_LISTS(&pool, 0, 0, 0, 0);
    CHECK_INT_EQ(callbacks, 0);
    pool_finish(&pool, loop);
    close(lfd);
}

/* Two pools on one loop, each with its own settings, since the pool reads no
 * global: against a database that never answers, the one with max 1 and a
 * 100 ms connect timeout opens one connection and fails its waiters at 100 ms,
 * while the one with max 3 and 1 s keeps its three connections trying. */
static void two_pools_on_one_loop_keep_their_own_settings(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t fast, slow;
    char url[128];
    test_query_t a[3], b[3];
    int port, lfd = silent_listener(&port);

    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", port);
    reset_settings();
    settings.max = 1;
    settings.connect_timeout_ms = 100;
    CHECK_INT_EQ(pool_open(&fast, loop, url), 0);
    settings.max = 3;
    settings.connect_timeout_ms = 1000;
    CHECK_INT_EQ(pool_open(&slow, loop, url), 0);
    /* the three connects time out together; a back-off of 2 s, not 50 ms, keeps a busy
     * machine's spread between their timers from letting a fourth connect start */
    slow.backoff_ms = 2000;
    settings.max = 20; /* the pools keep the values they were given */
    CHECK_INT_EQ(fast.settings.max, 1);
    CHECK_INT_EQ(slow.settings.max, 3);
    for (int i = 0; i < 3; i++) {
        query_init(&a[i], 0);
        query_init(&b[i], 0);
        CHECK_INT_EQ(pool_query(&fast, &a[i].q), POOL_ADMITTED);
        CHECK_INT_EQ(pool_query(&slow, &b[i].q), POOL_ADMITTED);
    }
    CHECK_LISTS(&fast, 1, 0, 0, 3);
    CHECK_LISTS(&slow, 3, 0, 0, 3);

    CHECK(wait_for_callbacks(loop, 3));
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(a[i].calls, 1);
        CHECK_INT_EQ(a[i].err, POOL_ERR_UNAVAILABLE);
        CHECK_INT_EQ(b[i].calls, 0);
    }
    CHECK_LISTS(&fast, 0, 0, 0, 0);
    CHECK_LISTS(&slow, 3, 0, 0, 3);
    CHECK_INT_EQ(fast.stats.connection_errors, 1);
    CHECK_INT_EQ(slow.stats.connection_errors, 0);

    /* The slow pool's connects time out in their turn. */
    CHECK(wait_for_callbacks(loop, 6));
    for (int i = 0; i < 3; i++)
        CHECK_INT_EQ(b[i].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(slow.stats.connection_errors, 3);
    pool_drain(&fast, loop);
    pool_drain(&slow, loop);
    loop_finish(loop);
    close(lfd);
}

/* A connection that breaks with several queries in flight answers each once,
 * and a callback that ends another request (its clean-up cancels that
 * request's query) finds the pool no longer pointing at the freed connection:
 * the cancelled query gets no callback. */
static test_query_t discard_t[3];

static void on_discard_first(pool_query_t *q, PGresult *res, enum pool_error err)
{
    on_query_done(q, res, err);
    pool_query_cancel(q->pool, &discard_t[1].q); /* what a request's clean-up does */
}

static int all_sent(void *arg)
{
    return ((pool_t *)arg)->in_flight == 3;
}

static void discarded_connection_answers_each_query_once(void)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    fake_server_t fake;
    char url[128];

    fake_server_start(&fake, 3);
    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", fake.port);
    reset_settings();
    settings.max = 1;
    settings.depth = 4;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    for (int i = 0; i < 3; i++) {
        query_init(&discard_t[i], 0);
        CHECK_INT_EQ(pool_query(&pool, &discard_t[i].q), POOL_ADMITTED);
    }
    discard_t[0].q.cb = on_discard_first;
    CHECK(run_until(loop, all_sent, &pool)); /* one connection carries all three */
    CHECK_LISTS(&pool, 0, 0, 1, 0);
    /* The server closes after reading the third: the connection is discarded. */
    CHECK(wait_for_callbacks(loop, 2));
    turn(loop, 10);
    CHECK_INT_EQ(discard_t[0].calls, 1);
    CHECK_INT_EQ(discard_t[0].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(discard_t[1].calls, 0); /* cancelled by the first callback */
    CHECK_INT_EQ(discard_t[1].q.state, POOL_QUERY_DONE);
    CHECK_INT_EQ(discard_t[2].calls, 1);
    CHECK_INT_EQ(discard_t[2].err, POOL_ERR_UNAVAILABLE);
    CHECK_INT_EQ(callbacks, 2);
    CHECK_INT_EQ(pool.in_flight, 0);
    CHECK_INT_EQ(pool.stats.connects, 1);
    CHECK_INT_EQ(pool.stats.connection_errors, 1);
    pool_finish(&pool, loop);
    fake_server_stop(&fake);
    CHECK_INT_EQ(fake.executes, 3);
    CHECK_INT_EQ(fake.syncs, 1); /* taken in one turn (on_pg_ready's): one batch */
}

/* Batches: queries a connection takes during one turn of the loop go out under
 * one sync, at the end of the turn; while a batch is out, the next one stays
 * open, for the queries of later turns too, until the connection is full (or
 * that batch is answered). With --pipeline 1, a sync per query. */
static int fake_executes;

static int sent_in_all(void *arg)
{
    return ((pool_t *)arg)->stats.syncs > 0 && ((pool_t *)arg)->in_flight == (size_t)fake_executes;
}

/* Queries admitted while the connection opens, `later` more in later turns
 * (one turn each) while the first batch is out; the fake server closes after
 * `closes_after` queries. Checks the syncs sent and that every query is
 * answered once (503: the server closed). */
static void batches_of(int depth, int first, int later, int want_syncs, int closes_after)
{
    h2o_loop_t *loop = loop_create();
    pool_t pool;
    fake_server_t fake;
    char url[128];
    test_query_t t[16];

    fake_server_start(&fake, closes_after);
    snprintf(url, sizeof(url), "postgresql://nobody@127.0.0.1:%d/none", fake.port);
    reset_settings();
    settings.max = 1;
    settings.depth = depth;
    CHECK_INT_EQ(pool_open(&pool, loop, url), 0);
    for (int k = 0; k < first; k++) {
        query_init(&t[k], 1);
        CHECK_INT_EQ(pool_query(&pool, &t[k].q), POOL_ADMITTED);
    }
    fake_executes = first; /* taken by the connection when it is ready: one turn */
    CHECK(run_until(loop, sent_in_all, &pool));
    CHECK_INT_EQ(pool.stats.syncs, 1);
    for (int k = first; k < first + later; k++) {
        query_init(&t[k], 1);
        CHECK_INT_EQ(pool_query(&pool, &t[k].q), POOL_ADMITTED);
        CHECK_LISTS(&pool, 0, 0, 1, 0);
        timers_end_turn(&timers); /* the end of the turn that took it */
    }
    CHECK_INT_EQ(pool.stats.syncs, want_syncs);
    CHECK(wait_for_callbacks(loop, first + later)); /* the server closes: 503 each, once */
    for (int k = 0; k < first + later; k++) {
        CHECK_INT_EQ(t[k].calls, 1);
        CHECK_INT_EQ(t[k].err, POOL_ERR_UNAVAILABLE);
    }
    pool_finish(&pool, loop);
    fake_server_stop(&fake);
    CHECK_INT_EQ(fake.syncs, want_syncs);
}

static void queries_taken_in_one_turn_share_one_sync(void)
{
    batches_of(/* depth= */ 8, /* first= */ 5, /* later= */ 0, /* want_syncs= */ 1,
               /* closes_after= */ 5);
    batches_of(1, 1, 0, 1, 1); /* --pipeline 1: its own sync, at once */
}

/* One batch out: the queries of the next turns wait in the next batch until
 * the connection is full, which sends it; the server never sees them before. */
static void the_next_batch_waits_for_room_or_for_the_one_before_it(void)
{
    batches_of(/* depth= */ 4, /* first= */ 1, /* later= */ 3, /* want_syncs= */ 2,
               /* closes_after= */ 4);
    /* Room left: it stays open, and goes nowhere before the server closes. */
    batches_of(8, 1, 2, 1, 1);
}

/* libpq reads its own variables; the tests must not depend on the caller's. */
static void unset_environment(void)
{
    char names[] = "PGCONNECT_TIMEOUT PGHOST PGHOSTADDR PGOPTIONS PGPORT PGSERVICE PGSSLMODE";
    char *save = NULL;
    for (char *name = strtok_r(names, " ", &save); name != NULL; name = strtok_r(NULL, " ", &save))
        unsetenv(name);
}

int main(void)
{
    unset_environment();

    CHECK_RUN(pool_configure_opens_no_connection);
    CHECK_RUN(refused_connect_fails_every_admitted_query_once);
    CHECK_RUN(refused_connect_makes_the_next_query_fail_fast);
    CHECK_RUN(concurrent_failures_double_the_backoff_once);
    CHECK_RUN(shutdown_refuses_new_queries_at_once);
    CHECK_RUN(backoff_doubles_per_round_up_to_one_second);
    CHECK_RUN(queue_full_refuses_the_next_query_without_callback);
    CHECK_RUN(cancelled_waiting_query_gets_no_callback);
    CHECK_RUN(silent_database_times_out_waiting_queries);
    CHECK_RUN(silent_database_connect_timeout_fails_waiting_queries);
    CHECK_RUN(pipeline_opens_a_connection_per_depth_waiters);
    CHECK_RUN(queries_taken_in_one_turn_share_one_sync);
    CHECK_RUN(the_next_batch_waits_for_room_or_for_the_one_before_it);
    CHECK_RUN(shutdown_lets_waiting_queries_finish);
    CHECK_RUN(shutdown_empties_the_pool_within_the_connect_timeout);
    CHECK_RUN(two_pools_on_one_loop_keep_their_own_settings);
    CHECK_RUN(discarded_connection_answers_each_query_once);
    return check_summary();
}
