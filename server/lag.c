/*
 * lag.c - the event-loop lag probe (see lag.h).
 *
 * The timer is a timerfd (CLOCK_MONOTONIC, nanoseconds) watched by the loop,
 * re-armed for `interval` after each tick as setInterval re-arms. An h2o
 * timeout would do too, but it fires against the loop's cached millisecond
 * clock, which adds up to 1 ms of lateness that is not the loop's.
 *
 * The window keeps at most LAG_WINDOW_MAX samples (about 7 minutes at 100 ms);
 * if scrapes stop for longer, the newest samples are kept, so memory stays fixed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "lag.h"

#define LAG_WINDOW_MAX 4096

histogram_t lag_histogram;

static h2o_socket_t *tick_sock; /* watches the timerfd */
static uint64_t last_ns, interval_ns;
static double window[LAG_WINDOW_MAX];
static size_t window_len, window_next;

static void arm(void)
{
    struct itimerspec its = {
        {0, 0}, {(time_t)(interval_ns / 1000000000u), (long)(interval_ns % 1000000000u)}};
    timerfd_settime(h2o_socket_get_fd(tick_sock), 0, &its, NULL);
}

static void on_tick(h2o_socket_t *sock, const char *err)
{
    uint64_t expirations, now = metrics_now_ns();
    double late = now > last_ns + interval_ns ? (double)(now - last_ns - interval_ns) / 1e9 : 0;

    if (read(h2o_socket_get_fd(sock), &expirations, sizeof(expirations)) != sizeof(expirations))
        return; /* not due yet (a spurious wake-up) */
    last_ns = now;
    histogram_observe(&lag_histogram, late);
    window[window_next] = late;
    window_next = (window_next + 1) % LAG_WINDOW_MAX;
    if (window_len < LAG_WINDOW_MAX)
        window_len++;
    /* Re-armed from here, like setInterval: the next period starts now. */
    arm();
}

void lag_start(h2o_loop_t *loop, int interval_ms)
{
    histogram_init(&lag_histogram, metrics_fine_bounds, metrics_fine_nbounds);
    interval_ns = (uint64_t)interval_ms * 1000000;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        perror("notesd: timerfd_create");
        exit(1);
    }
    tick_sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(tick_sock, on_tick);
    last_ns = metrics_now_ns();
    arm();
}

void lag_stop(h2o_loop_t *loop)
{
    h2o_socket_read_stop(tick_sock);
    h2o_socket_close(tick_sock);
    tick_sock = NULL;
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
    static double sorted[LAG_WINDOW_MAX];
    size_t n = window_len;

    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n == 0)
        return;
    memcpy(sorted, window, n * sizeof(double)); /* order does not matter: we sort */
    qsort(sorted, n, sizeof(double), compare_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += sorted[i];
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->mean = sum / (double)n;
    out->p50 = percentile(sorted, n, 0.50);
    out->p90 = percentile(sorted, n, 0.90);
    out->p99 = percentile(sorted, n, 0.99);
    window_len = window_next = 0;
}
