/*
 * lag.c - the event-loop lag probe (see lag.h).
 *
 * The timer is a timerfd (CLOCK_MONOTONIC, nanoseconds) watched by the loop,
 * re-armed for `interval` after each tick as setInterval re-arms. An h2o
 * timeout would do too, but it fires against the loop's cached millisecond
 * clock, which adds up to 1 ms of lateness that is not the loop's.
 *
 * Each loop keeps at most LAG_WINDOW_MAX samples (about 7 minutes at 100 ms);
 * if scrapes stop for longer, the newest are kept, so memory stays fixed. The
 * window is the one thing here that two threads change (the loop adds, the
 * scrape empties), so it has a mutex; ten ticks a second make that free.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "http.h"
#include "lag.h"

#define LAG_WINDOW_MAX 4096

typedef struct lag_probe {
    h2o_socket_t *sock; /* watches the timerfd */
    uint64_t last_ns, interval_ns;
    histogram_t histogram;
    pthread_mutex_t lock; /* guards window, window_len, window_next */
    double window[LAG_WINDOW_MAX];
    size_t window_len, window_next;
} lag_probe_t;

static lag_probe_t *probes[NOTESD_MAX_LOOPS];
static __thread lag_probe_t *probe;

static void arm(void)
{
    struct itimerspec its = {
        {0, 0},
        {(time_t)(probe->interval_ns / 1000000000u), (long)(probe->interval_ns % 1000000000u)}};
    timerfd_settime(h2o_socket_get_fd(probe->sock), 0, &its, NULL);
}

static void on_tick(h2o_socket_t *sock, const char *err)
{
    uint64_t expirations, now = metrics_now_ns();
    uint64_t due = probe->last_ns + probe->interval_ns;
    double late = now > due ? (double)(now - due) / 1e9 : 0;

    if (read(h2o_socket_get_fd(sock), &expirations, sizeof(expirations)) != sizeof(expirations))
        return; /* not due yet (a spurious wake-up) */
    probe->last_ns = now;
    histogram_observe(&probe->histogram, late);
    pthread_mutex_lock(&probe->lock);
    probe->window[probe->window_next] = late;
    probe->window_next = (probe->window_next + 1) % LAG_WINDOW_MAX;
    if (probe->window_len < LAG_WINDOW_MAX)
        probe->window_len++;
    pthread_mutex_unlock(&probe->lock);
    /* Re-armed from here, like setInterval: the next period starts now. */
    arm();
}

void lag_start(h2o_loop_t *loop, int interval_ms, int index)
{
    probe = calloc(1, sizeof(*probe));
    if (probe == NULL)
        abort();
    histogram_init(&probe->histogram, metrics_fine_bounds, metrics_fine_nbounds);
    pthread_mutex_init(&probe->lock, NULL);
    probe->interval_ns = (uint64_t)interval_ms * 1000000;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        perror("notesd: timerfd_create");
        exit(1);
    }
    probe->sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(probe->sock, on_tick);
    probe->last_ns = metrics_now_ns();
    arm();
    probes[index] = probe;
}

void lag_stop(void)
{
    h2o_socket_read_stop(probe->sock);
    h2o_socket_close(probe->sock);
    probe->sock = NULL;
}

void lag_accumulate_histograms(histogram_t *dst)
{
    for (int i = 0; i < server.nloops; i++)
        if (probes[i] != NULL)
            histogram_accumulate(dst, &probes[i]->histogram);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    return sorted[(rank > n ? n : rank) - 1];
}

void lag_take_window(lag_window_t *out)
{
    /* Only the thread that renders /metrics calls this. */
    static double samples[LAG_WINDOW_MAX];
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < server.nloops; i++) {
        lag_probe_t *p = probes[i];
        if (p == NULL)
            continue;
        pthread_mutex_lock(&p->lock);
        for (size_t k = 0; k < p->window_len && n < LAG_WINDOW_MAX; k++)
            samples[n++] = p->window[k]; /* order does not matter: we sort */
        p->window_len = p->window_next = 0;
        pthread_mutex_unlock(&p->lock);
    }
    out->n = n;
    if (n == 0)
        return;
    qsort(samples, n, sizeof(double), compare_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    out->min = samples[0];
    out->max = samples[n - 1];
    out->mean = sum / (double)n;
    out->p50 = percentile(samples, n, 0.50);
    out->p90 = percentile(samples, n, 0.90);
    out->p99 = percentile(samples, n, 0.99);
}
