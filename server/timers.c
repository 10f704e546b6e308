/*
 * timers.c - the loop's timer service: a binary min-heap of entries and the
 * timerfd armed for its root (see timers.h).
 *
 * Each entry keeps its position in the heap, so unlinking one from the middle
 * (a request that went away, a query that was answered) is O(log n) without a
 * search.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "stats.h"
#include "timers.h"

/* Room for the loop's own timers and a few requests' before the first growth. */
#define TIMERS_INITIAL_CAP 64

static void heap_put(timers_t *t, size_t i, timer_entry_t *e)
{
    t->heap[i] = e;
    e->index = i + 1;
}

static void sift_up(timers_t *t, size_t i)
{
    timer_entry_t *e = t->heap[i];
    while (i > 0 && t->heap[(i - 1) / 2]->due_ns > e->due_ns) {
        heap_put(t, i, t->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_put(t, i, e);
}

static void sift_down(timers_t *t, size_t i)
{
    timer_entry_t *e = t->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= t->len)
            break;
        if (c + 1 < t->len && t->heap[c + 1]->due_ns < t->heap[c]->due_ns)
            c++;
        if (t->heap[c]->due_ns >= e->due_ns)
            break;
        heap_put(t, i, t->heap[c]);
        i = c;
    }
    heap_put(t, i, e);
}

/* Arms the timerfd for the earliest entry, unless it is armed for that
 * instant or an earlier one already (that wake-up arms the next). */
static void arm(timers_t *t)
{
    if (t->len == 0 || t->sock == NULL || t->pass_ns != 0)
        return; /* inside a pass: timers_run arms once at its end */
    uint64_t due = t->heap[0]->due_ns;
    if (t->armed_ns != 0 && t->armed_ns <= due)
        return;
    if (due == 0)
        due = 1; /* an it_value of 0 would disarm it */
    struct itimerspec its = {{0, 0}, {(time_t)(due / 1000000000u), (long)(due % 1000000000u)}};
    timerfd_settime(h2o_socket_get_fd(t->sock), TFD_TIMER_ABSTIME, &its, NULL);
    t->armed_ns = due;
}

void timers_link(timers_t *t, timer_entry_t *e, uint64_t due_ns)
{
    /* Inside a pass, a deadline it has reached goes to the next one: the
     * pass stops at what was due when it began (h2o's wheel collects, then
     * fires, for the same reason). */
    if (due_ns <= t->pass_ns)
        due_ns = t->pass_ns + 1;
    if (t->len == t->cap) {
        t->cap = t->cap > 0 ? t->cap * 2 : TIMERS_INITIAL_CAP;
        t->heap = realloc(t->heap, t->cap * sizeof(*t->heap));
        if (t->heap == NULL)
            abort(); /* out of memory: see the policy in main.c */
    }
    e->due_ns = due_ns;
    t->heap[t->len++] = e;
    sift_up(t, t->len - 1);
    if (e->index == 1)
        arm(t);
}

void timers_unlink(timers_t *t, timer_entry_t *e)
{
    if (e->index == 0)
        return;
    size_t i = e->index - 1;
    e->index = 0;
    if (--t->len == i)
        return;
    /* The last entry takes the hole, then moves whichever way restores the order. */
    timer_entry_t *last = t->heap[t->len];
    heap_put(t, i, last);
    sift_down(t, i);
    sift_up(t, last->index - 1);
}

void timers_run(timers_t *t, uint64_t now_ns)
{
    t->pass_ns = now_ns;
    while (t->len > 0 && t->heap[0]->due_ns <= now_ns) {
        timer_entry_t *e = t->heap[0];
        timers_unlink(t, e);
        e->cb(e); /* may link entries, this one included: due after this pass */
    }
    t->pass_ns = 0;
    arm(t);
}

void timers_after_turn(timers_t *t, turn_entry_t *e)
{
    if (e->queued)
        return;
    e->queued = 1;
    e->next = NULL;
    if (t->turn_last != NULL)
        t->turn_last->next = e;
    else
        t->turn_first = e;
    t->turn_last = e;
}

void timers_cancel_turn(timers_t *t, turn_entry_t *e)
{
    if (!e->queued)
        return;
    /* A walk: the queue holds what one turn collected (a few connections). */
    turn_entry_t *prev = NULL;
    for (turn_entry_t *q = t->turn_first; q != e; q = q->next)
        prev = q;
    if (prev != NULL)
        prev->next = e->next;
    else
        t->turn_first = e->next;
    if (t->turn_last == e)
        t->turn_last = prev;
    e->queued = 0;
    e->next = NULL;
}

void timers_end_turn(timers_t *t)
{
    turn_entry_t *e;
    while ((e = t->turn_first) != NULL) {
        t->turn_first = e->next;
        if (t->turn_first == NULL)
            t->turn_last = NULL;
        e->queued = 0;
        e->next = NULL;
        e->cb(e); /* may queue entries, this one included: they run before this returns */
    }
}

static void on_timerfd(h2o_socket_t *sock, const char *err)
{
    timers_t *t = sock->data;
    uint64_t expirations;

    if (read(h2o_socket_get_fd(sock), &expirations, sizeof(expirations)) < 0) {
        /* EAGAIN: re-armed before this wake-up was handled; nothing to read. */
    }
    t->armed_ns = 0;
    timers_run(t, stats_now_ns());
}

int timers_start(timers_t *t, h2o_loop_t *loop)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return -1;
    t->sock = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    t->sock->data = t;
    t->armed_ns = 0;
    h2o_socket_read_start(t->sock, on_timerfd);
    arm(t); /* entries linked before the loop existed */
    return 0;
}

void timers_stop(timers_t *t)
{
    timers_end_turn(t);            /* before the frees: it may read what they free */
    timers_run(t, stats_now_ns()); /* what was deferred, such as a connection's free */
    if (t->sock != NULL) {
        h2o_socket_read_stop(t->sock);
        h2o_socket_close(t->sock);
        t->sock = NULL;
    }
    for (size_t i = 0; i < t->len; i++)
        t->heap[i]->index = 0;
    free(t->heap);
    t->heap = NULL;
    t->len = t->cap = 0;
    t->armed_ns = 0;
}
