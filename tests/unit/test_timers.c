/*
 * test_timers.c - unit tests of server/timers.c: the heap's order, unlinking
 * from anywhere, growth, the timerfd on a real h2o event loop, and the queue
 * for the end of the turn.
 *
 * The heap is driven two ways: with timers_run and made-up instants, which
 * checks the order exactly and waits for nothing, and through the real
 * timerfd, which checks that an entry never fires early and that the lazy
 * arming (no re-arm when an entry leaves) still wakes the loop for the next
 * one. Timing is asserted one way only: not before the deadline. How late a
 * wake-up comes depends on the machine, so it is printed, not asserted.
 */
#include <stdlib.h>
#include <string.h>
#include <h2o.h>
#include "check.h"
#include "stats.h"
#include "timers.h"

#define N 1000

typedef struct probe {
    timer_entry_t entry;
    int id;
    int fired;         /* how often the callback ran */
    uint64_t fired_ns; /* stats_now_ns() when it last ran */
} probe_t;

static int order[N * 2]; /* ids in the order their callbacks ran */
static size_t norder;

static void on_probe(timer_entry_t *e)
{
    probe_t *p = H2O_STRUCT_FROM_MEMBER(probe_t, entry, e);
    p->fired++;
    p->fired_ns = stats_now_ns();
    order[norder++] = p->id;
}

static void probes_init(probe_t *p, size_t n)
{
    memset(p, 0, n * sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        p[i].id = (int)i;
        p[i].entry.cb = on_probe;
    }
    norder = 0;
}

/* A fixed pseudo-random sequence, so a failure can be replayed. */
static uint64_t lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

/* ---- the heap, driven with made-up instants ---------------------------------------------- */

static void entries_fire_in_deadline_order_whatever_the_link_order(void)
{
    static probe_t p[N];
    timers_t t = {0};
    uint64_t seed = 42;

    probes_init(p, N);
    for (size_t i = 0; i < N; i++)
        timers_link(&t, &p[i].entry, 1 + lcg(&seed) % 100000);
    CHECK_INT_EQ(timers_pending(&t), N);
    CHECK(t.cap >= N); /* grown past its first size */
    timers_run(&t, UINT64_MAX);
    CHECK_INT_EQ(norder, N);
    CHECK_INT_EQ(timers_pending(&t), 0);
    int sorted = 1;
    for (size_t i = 1; i < norder; i++)
        sorted &= p[order[i - 1]].entry.due_ns <= p[order[i]].entry.due_ns;
    CHECK(sorted);
    for (size_t i = 0; i < N; i++)
        CHECK_INT_EQ(p[i].fired, 1);
    timers_stop(&t);
}

/* An entry taken out of the middle of the heap never fires, and the others keep their order. */
static void unlinked_entries_never_fire(void)
{
    static probe_t p[N];
    timers_t t = {0};
    uint64_t seed = 7;

    probes_init(p, N);
    for (size_t i = 0; i < N; i++)
        timers_link(&t, &p[i].entry, 1 + lcg(&seed) % 1000);
    for (size_t i = 0; i < N; i += 3)
        timers_unlink(&t, &p[i].entry);
    timers_unlink(&t, &p[0].entry); /* twice: does nothing */
    CHECK_INT_EQ(timers_pending(&t), N - (N + 2) / 3);
    CHECK(!timers_is_linked(&p[3].entry));
    CHECK(timers_is_linked(&p[4].entry));

    /* Run in steps: only what is due at each instant fires. */
    for (uint64_t now = 0; now <= 1000; now += 100) {
        size_t before = norder;
        timers_run(&t, now);
        for (size_t k = before; k < norder; k++)
            CHECK(p[order[k]].entry.due_ns <= now);
        CHECK(timers_pending(&t) == 0 || t.heap[0]->due_ns > now);
    }
    CHECK_INT_EQ(norder, N - (N + 2) / 3);
    int sorted = 1;
    for (size_t i = 1; i < norder; i++)
        sorted &= p[order[i - 1]].entry.due_ns <= p[order[i]].entry.due_ns;
    CHECK(sorted);
    for (size_t i = 0; i < N; i++)
        CHECK_INT_EQ(p[i].fired, i % 3 == 0 ? 0 : 1);
    timers_stop(&t);
}

/* Equal deadlines all fire, each once. */
static void equal_deadlines_all_fire(void)
{
    probe_t p[5];
    timers_t t = {0};

    probes_init(p, 5);
    for (int i = 0; i < 5; i++)
        timers_link(&t, &p[i].entry, 100);
    timers_unlink(&t, &p[2].entry);
    timers_run(&t, 99);
    CHECK_INT_EQ(norder, 0);
    timers_run(&t, 100);
    CHECK_INT_EQ(norder, 4);
    for (int i = 0; i < 5; i++)
        CHECK_INT_EQ(p[i].fired, i == 2 ? 0 : 1);
    timers_stop(&t);
}

/* A periodic timer: the callback links its own entry again. */
static timers_t *periodic_timers;

static void on_periodic(timer_entry_t *e)
{
    probe_t *p = H2O_STRUCT_FROM_MEMBER(probe_t, entry, e);
    p->fired++;
    if (p->fired < 5)
        timers_link(periodic_timers, e, e->due_ns + 10);
}

/* A pass fires what was due when it began: an entry that links itself again
 * at an instant the pass has reached waits for the next pass, just after it. */
static void a_callback_may_link_its_entry_again(void)
{
    probe_t p;
    timers_t t = {0};

    probes_init(&p, 1);
    p.entry.cb = on_periodic;
    periodic_timers = &t;
    timers_link(&t, &p.entry, 10);
    timers_run(&t, 25);
    CHECK_INT_EQ(p.fired, 1); /* at 10; linked again for 20, which this pass has reached */
    CHECK(timers_is_linked(&p.entry));
    CHECK_INT_EQ(p.entry.due_ns, 26); /* just after the pass */
    timers_run(&t, 30);
    CHECK_INT_EQ(p.fired, 2);
    CHECK_INT_EQ(p.entry.due_ns, 36); /* 26 + 10: after 30, so a deadline of its own */
    for (uint64_t pass = 0; pass < 10; pass++)
        timers_run(&t, 1000 + 100 * pass);
    CHECK_INT_EQ(p.fired, 5);
    CHECK(!timers_is_linked(&p.entry));
    timers_stop(&t);
}

/* An entry that keeps linking itself into the past fires once per pass: the
 * loop gets back to its sockets in between. */
static timers_t *eager_timers;

static void on_eager(timer_entry_t *e)
{
    probe_t *p = H2O_STRUCT_FROM_MEMBER(probe_t, entry, e);
    p->fired++;
    timers_link(eager_timers, e, 0);
}

static void an_entry_linked_into_the_past_waits_for_the_next_pass(void)
{
    probe_t p[2];
    timers_t t = {0};

    probes_init(p, 2);
    p[0].entry.cb = on_eager;
    eager_timers = &t;
    timers_link(&t, &p[0].entry, 5);
    timers_link(&t, &p[1].entry, 100);
    for (int pass = 1; pass <= 3; pass++) {
        timers_run(&t, 100 + (uint64_t)pass);
        CHECK_INT_EQ(p[0].fired, pass);
    }
    CHECK_INT_EQ(p[1].fired, 1); /* due in the first pass, not starved by p[0] */
    CHECK(timers_is_linked(&p[0].entry));
    timers_unlink(&t, &p[0].entry);
    timers_stop(&t);
}

/* timers_defer: the callback runs in the next pass, never in the one that deferred it. */
static timers_t *deferring_timers;
static probe_t deferred;

static void on_defers(timer_entry_t *e)
{
    probe_t *p = H2O_STRUCT_FROM_MEMBER(probe_t, entry, e);
    p->fired++;
    timers_defer(deferring_timers, &deferred.entry);
}

static void a_deferred_entry_runs_in_the_next_pass(void)
{
    probe_t p;
    timers_t t = {0};

    probes_init(&p, 1);
    memset(&deferred, 0, sizeof(deferred));
    deferred.entry.cb = on_probe;
    p.entry.cb = on_defers;
    deferring_timers = &t;
    timers_link(&t, &p.entry, 50);
    timers_run(&t, 50);
    CHECK_INT_EQ(p.fired, 1);
    CHECK_INT_EQ(deferred.fired, 0);
    CHECK(timers_is_linked(&deferred.entry));
    timers_run(&t, 51);
    CHECK_INT_EQ(deferred.fired, 1);
    /* Outside a pass it is due at once: the next pass, whatever its instant. */
    timers_defer(&t, &deferred.entry);
    timers_run(&t, 1);
    CHECK_INT_EQ(deferred.fired, 2);
    timers_stop(&t);
}

/* timers_stop runs what is due (a deferred free must not leak) and drops the rest. */
static void stop_runs_what_is_due_and_drops_the_rest(void)
{
    probe_t p[3];
    timers_t t = {0};

    probes_init(p, 3);
    timers_defer(&t, &p[0].entry);
    for (int i = 1; i < 3; i++)
        timers_link(&t, &p[i].entry, stats_now_ns() + 3600000000000ULL + (uint64_t)i);
    timers_stop(&t);
    CHECK_INT_EQ(p[0].fired, 1);
    for (int i = 0; i < 3; i++)
        CHECK(!timers_is_linked(&p[i].entry));
    CHECK_INT_EQ(p[1].fired, 0);
    CHECK_INT_EQ(p[2].fired, 0);
    CHECK_INT_EQ(timers_pending(&t), 0);
}

/* ---- the timerfd, on a real loop --------------------------------------------------------- */

/* Runs the loop until cond(arg) holds or 5 s pass; returns whether it held. */
static int run_until(h2o_loop_t *loop, int (*cond)(void *), void *arg)
{
    uint64_t deadline = stats_now_ns() + 5000000000u;
    while (!cond(arg)) {
        if (stats_now_ns() > deadline)
            return 0;
        h2o_evloop_run(loop, 10);
    }
    return 1;
}

static int all_fired(void *arg)
{
    probe_t *p = arg;
    return p[0].fired && p[1].fired && p[2].fired;
}

static int fired_once(void *arg)
{
    return ((probe_t *)arg)->fired == 1;
}

static uint64_t armed_wanted;

static int armed_for_wanted(void *arg)
{
    return ((timers_t *)arg)->armed_ns == armed_wanted;
}

/* Deadlines of a few milliseconds fire in order, none before its instant. */
static void the_timerfd_wakes_the_loop_at_each_deadline(void)
{
    h2o_loop_t *loop = h2o_evloop_create();
    timers_t t = {0};
    probe_t p[3];

    CHECK_INT_EQ(timers_start(&t, loop), 0);
    probes_init(p, 3);
    uint64_t now = stats_now_ns();
    timers_link(&t, &p[0].entry, now + 30000000); /* 30 ms */
    timers_link(&t, &p[1].entry, now + 10000000); /* 10 ms */
    timers_link(&t, &p[2].entry, now + 20000000); /* 20 ms */
    CHECK_INT_EQ(t.armed_ns, now + 10000000);
    CHECK(run_until(loop, all_fired, p));
    CHECK_INT_EQ(norder, 3);
    CHECK_INT_EQ(order[0], 1);
    CHECK_INT_EQ(order[1], 2);
    CHECK_INT_EQ(order[2], 0);
    for (int i = 0; i < 3; i++)
        CHECK(p[i].fired_ns >= p[i].entry.due_ns); /* never early */
    printf("    late by %.3f, %.3f, %.3f ms\n", (p[1].fired_ns - p[1].entry.due_ns) / 1e6,
           (p[2].fired_ns - p[2].entry.due_ns) / 1e6, (p[0].fired_ns - p[0].entry.due_ns) / 1e6);
    timers_stop(&t);
    h2o_evloop_run(loop, 0); /* frees the closed socket */
    h2o_evloop_destroy(loop);
}

/* The timerfd is re-armed only for an earlier deadline; an entry leaving the
 * heap leaves it armed, and the wake-up that follows arms the next one. */
static void arming_is_lazy_and_still_wakes_for_the_next_deadline(void)
{
    h2o_loop_t *loop = h2o_evloop_create();
    timers_t t = {0};
    probe_t p[3];

    CHECK_INT_EQ(timers_start(&t, loop), 0);
    probes_init(p, 3);
    uint64_t now = stats_now_ns();
    timers_link(&t, &p[0].entry, now + 10000000);
    CHECK_INT_EQ(t.armed_ns, now + 10000000);
    timers_link(&t, &p[1].entry, now + 40000000); /* later: no re-arm */
    CHECK_INT_EQ(t.armed_ns, now + 10000000);
    timers_unlink(&t, &p[0].entry); /* leaves it armed for 10 ms */
    CHECK_INT_EQ(t.armed_ns, now + 10000000);
    timers_link(&t, &p[2].entry, now + 5000000); /* earlier: re-armed */
    CHECK_INT_EQ(t.armed_ns, now + 5000000);
    timers_unlink(&t, &p[2].entry);

    /* The wake-up at 5 ms finds nothing due and arms p[1]'s deadline, which then fires. */
    armed_wanted = now + 40000000;
    CHECK(run_until(loop, armed_for_wanted, &t));
    CHECK_INT_EQ(p[1].fired, 0);
    CHECK(run_until(loop, fired_once, &p[1]));
    CHECK_INT_EQ(p[1].fired, 1);
    CHECK(p[1].fired_ns >= now + 40000000);
    CHECK_INT_EQ(p[0].fired, 0);
    CHECK_INT_EQ(p[2].fired, 0);
    timers_stop(&t);
    h2o_evloop_run(loop, 0);
    h2o_evloop_destroy(loop);
}

/* A deadline already passed fires on the loop's next turn. */
static void a_past_deadline_fires_at_once(void)
{
    h2o_loop_t *loop = h2o_evloop_create();
    timers_t t = {0};
    probe_t p[3];

    CHECK_INT_EQ(timers_start(&t, loop), 0);
    probes_init(p, 3);
    timers_link(&t, &p[0].entry, 1);
    timers_link(&t, &p[1].entry, stats_now_ns() - 1);
    timers_link(&t, &p[2].entry, 0);
    CHECK(run_until(loop, all_fired, p));
    CHECK_INT_EQ(norder, 3);
    timers_stop(&t);
    h2o_evloop_run(loop, 0);
    h2o_evloop_destroy(loop);
}

/* ---- the end of the turn ------------------------------------------------------------------ */

typedef struct turn_probe {
    turn_entry_t entry;
    int id;
    int fired;
} turn_probe_t;

static timers_t *turn_timers;
static turn_probe_t *requeued; /* queued again by the first probe's callback, once */

static void on_turn(turn_entry_t *e)
{
    turn_probe_t *p = H2O_STRUCT_FROM_MEMBER(turn_probe_t, entry, e);
    p->fired++;
    order[norder++] = p->id;
    if (requeued != NULL && p->id == 0) {
        timers_after_turn(turn_timers, &requeued->entry);
        requeued = NULL;
    }
}

/* Entries run in the order queued, once each however often they were queued,
 * not at all once cancelled; what a callback queues runs before the end of
 * the turn is over; and a turn that queued nothing has nothing pending. */
static void the_end_of_the_turn_runs_what_it_collected_once(void)
{
    timers_t t = {0};
    turn_probe_t p[4];

    memset(p, 0, sizeof(p));
    norder = 0;
    for (int i = 0; i < 4; i++) {
        p[i].id = i;
        p[i].entry.cb = on_turn;
    }
    turn_timers = &t;
    CHECK(!timers_turn_pending(&t));
    timers_after_turn(&t, &p[2].entry);
    timers_after_turn(&t, &p[0].entry);
    timers_after_turn(&t, &p[2].entry); /* queued already: nothing */
    timers_after_turn(&t, &p[1].entry);
    timers_after_turn(&t, &p[3].entry);
    timers_cancel_turn(&t, &p[1].entry); /* from the middle */
    timers_cancel_turn(&t, &p[3].entry); /* the last */
    timers_cancel_turn(&t, &p[3].entry); /* not queued: nothing */
    CHECK(timers_turn_pending(&t));
    requeued = &p[1];
    timers_end_turn(&t);
    CHECK_INT_EQ(norder, 3);
    CHECK_INT_EQ(order[0], 2);
    CHECK_INT_EQ(order[1], 0);
    CHECK_INT_EQ(order[2], 1); /* queued by p[0]'s callback: in the same end of turn */
    CHECK_INT_EQ(p[3].fired, 0);
    CHECK(!timers_turn_pending(&t));
    /* The queue is usable again, and cancelling its only entry empties it. */
    timers_after_turn(&t, &p[3].entry);
    timers_cancel_turn(&t, &p[3].entry);
    CHECK(!timers_turn_pending(&t));
    timers_after_turn(&t, &p[3].entry);
    timers_stop(&t); /* runs what waits for the end of the turn */
    CHECK_INT_EQ(p[3].fired, 1);
}

int main(void)
{
    CHECK_RUN(entries_fire_in_deadline_order_whatever_the_link_order);
    CHECK_RUN(unlinked_entries_never_fire);
    CHECK_RUN(equal_deadlines_all_fire);
    CHECK_RUN(a_callback_may_link_its_entry_again);
    CHECK_RUN(an_entry_linked_into_the_past_waits_for_the_next_pass);
    CHECK_RUN(a_deferred_entry_runs_in_the_next_pass);
    CHECK_RUN(stop_runs_what_is_due_and_drops_the_rest);
    CHECK_RUN(the_timerfd_wakes_the_loop_at_each_deadline);
    CHECK_RUN(arming_is_lazy_and_still_wakes_for_the_next_deadline);
    CHECK_RUN(a_past_deadline_fires_at_once);
    CHECK_RUN(the_end_of_the_turn_runs_what_it_collected_once);
    return check_summary();
}
