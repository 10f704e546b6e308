/*
 * timers.h - the loop's timer service: one timerfd per loop and a min-heap of deadlines.
 *
 * Owns the timerfd and the heap; the entries are their owners' memory (a
 * request's context, a pool connection, the lag probe), linked in and out
 * without allocating. Deadlines are CLOCK_MONOTONIC nanoseconds (stats_now_ns's
 * clock) and the timerfd is armed for the earliest one, so a timer fires at its
 * instant to the loop's wake-up, never early, whatever the wall clock does
 * (h2o's timeouts run on the loop's cached gettimeofday milliseconds). Used by
 * the lag probe, the pool's connect and query deadlines, and the requests that
 * answer later (/delay, /fault's delay, /drip's chunks) or pause the loop
 * (/stall).
 *
 * The timerfd is re-armed only when an entry earlier than the one it is armed
 * for arrives. An entry that leaves the heap does not disarm it: the wake-up it
 * then causes finds nothing due and arms the next one. So the common case, a
 * query deadline linked when a query is sent and unlinked when its result
 * comes, costs no system call.
 *
 * A pass of the service (timers_run) fires what is due when it starts, and
 * nothing linked while it runs: an entry linked (or linked again) during a
 * pass with a deadline already passed is due just after it, so fires on the
 * loop's next turn. A callback that re-arms itself "now" cannot keep the loop
 * inside one pass, and timers_defer is how anything runs "as soon as the
 * current callbacks have returned": the loop's one way to close later.
 *
 * The end of the turn is the service's other "later": a turn is one wake-up
 * of the loop with every callback of the events it found, and work queued
 * with timers_after_turn runs once they have all returned, before the loop
 * waits again (loop.c calls timers_end_turn after each h2o_evloop_run). That
 * is how work collected during a turn goes out together (a database
 * connection's sync, after every query the turn gave it), at no cost to a
 * turn that queued nothing: no timerfd, no wake-up of its own.
 *
 * One service per loop, used by that loop's thread only.
 */
#ifndef NOTESD_TIMERS_H
#define NOTESD_TIMERS_H

#include <stddef.h>
#include <stdint.h>
#include <h2o.h>

typedef struct timer_entry timer_entry_t;

/* Called once when the entry's deadline has come; the entry is unlinked
 * first, so the callback may link it again. */
typedef void (*timer_cb)(timer_entry_t *entry);

/* Ownership: the owner's memory, which must stay valid while it is linked. */
struct timer_entry {
    timer_cb cb;     /* set by the owner before linking */
    uint64_t due_ns; /* while linked: when it fires (see timers_link) */
    size_t index;    /* position in the heap plus one; 0 while not linked */
};

typedef struct turn_entry turn_entry_t;

/* Called once at the end of the turn it was queued in; the entry is out of
 * the queue first, so the callback may queue it again (for the same turn's end). */
typedef void (*turn_cb)(turn_entry_t *entry);

/* Ownership: the owner's memory, which must stay valid while it is queued. */
struct turn_entry {
    turn_cb cb;         /* set by the owner before queueing */
    turn_entry_t *next; /* while queued: the one queued after it */
    int queued;
};

typedef struct timers {
    h2o_socket_t *sock;   /* watches the timerfd; NULL before timers_start */
    timer_entry_t **heap; /* by due_ns, earliest first; grows, never shrinks */
    size_t len, cap;      /* entries linked, and room */
    uint64_t armed_ns;    /* the instant the timerfd is set for; 0: not armed */
    uint64_t pass_ns;     /* inside timers_run: the instant the pass fires up to; 0 outside */
    turn_entry_t *turn_first, *turn_last; /* timers_after_turn's queue, oldest first */
} timers_t;

/* On the loop's own thread, once its event loop exists: opens the timerfd.
 * Returns 0, or -1 with errno set. */
int timers_start(timers_t *t, h2o_loop_t *loop);

/* Runs what is queued for the end of the turn and the entries due by now
 * (frees deferred with timers_defer among them), then closes the timerfd and
 * frees the heap; entries still linked after that are dropped (unlinked,
 * never called). */
void timers_stop(timers_t *t);

/* Calls e->cb at `due_ns` (stats_now_ns's clock). A deadline already passed
 * fires on the next turn of the loop, never in the pass of timers_run that is
 * running (its due_ns then reads one nanosecond after that pass's instant).
 * `e` must not be linked. */
void timers_link(timers_t *t, timer_entry_t *e, uint64_t due_ns);

/* Calls e->cb on the loop's next turn, once the callbacks on the stack now
 * have returned: how an object whose own callback may be running (a database
 * connection handing out results, a WebSocket inside wslay) is freed later.
 * `e` must not be linked. */
static inline void timers_defer(timers_t *t, timer_entry_t *e)
{
    timers_link(t, e, 0);
}

/* Takes `e` out, if linked: its callback will not run. */
void timers_unlink(timers_t *t, timer_entry_t *e);

static inline int timers_is_linked(const timer_entry_t *e)
{
    return e->index != 0;
}

/* How many entries are linked. */
static inline size_t timers_pending(const timers_t *t)
{
    return t->len;
}

/* Calls e->cb at the end of the loop's current turn, once every callback of
 * its wake-up has returned and before the loop waits again; entries run in
 * the order they were queued. Does nothing if `e` is queued already. */
void timers_after_turn(timers_t *t, turn_entry_t *e);

/* Takes `e` out of the queue, if queued: its callback will not run. */
void timers_cancel_turn(timers_t *t, turn_entry_t *e);

/* The end of a turn: runs every queued entry, and those their callbacks
 * queue, until none is left. The loop calls it after each turn that queued
 * something (run_loop in loop.c; a test that turns a loop itself calls it too). */
void timers_end_turn(timers_t *t);

/* 1 if something waits for the end of the turn. */
static inline int timers_turn_pending(const timers_t *t)
{
    return t->turn_first != NULL;
}

/* One pass: runs every entry that is due at `now_ns` and was linked before
 * the pass began, earliest first, then arms the timerfd for the next one;
 * what the timerfd's wake-up does (on_timerfd, with stats_now_ns()). For
 * tests that drive the heap without waiting. */
void timers_run(timers_t *t, uint64_t now_ns);

#endif
