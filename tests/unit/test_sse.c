/*
 * test_sse.c - unit tests of server/sse.c: an event's exact bytes and
 * length, and the schedule with and without jitter.
 */
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "sse.h"

static void an_event_is_framed_exactly(void)
{
    char out[SSE_EVENT_MAX];
    size_t n = sse_event(out, 7, 10, 1764606000123456LL);
    CHECK_MEM_EQ(out, n, "id: 7\ndata: {\"id\":7,\"of\":10,\"sent_us\":1764606000123456}\n\n");
    CHECK_INT_EQ(sse_event_len(7, 10, 1764606000123456LL), n);
    /* the longest: every field at its widest still fits */
    n = sse_event(out, SSE_MAX_COUNT, SSE_MAX_COUNT, INT64_MIN);
    CHECK_INT_EQ(n, sse_event_len(SSE_MAX_COUNT, SSE_MAX_COUNT, INT64_MIN));
    CHECK(n < SSE_EVENT_MAX);
    CHECK_MEM_EQ(out + n - 3, 3, "}\n\n");
    CHECK_INT_EQ(sse_event_len(1, 1, 0),
                 strlen("id: 1\ndata: {\"id\":1,\"of\":1,\"sent_us\":0}\n\n"));
}

static void the_schedule_keeps_its_nominal_instants(void)
{
    const uint64_t ms = 1000000;
    /* no jitter: exactly start + k * delay, whatever u is */
    CHECK_INT_EQ(sse_due_ns(1000, 1000, 1, 100 * ms, 0, 0.9), 1000 + 100 * ms);
    CHECK_INT_EQ(sse_due_ns(1000, 0, 5, 100 * ms, 0, 0.1), 1000 + 500 * ms);
    /* jitter moves an instant by (2u - 1) * J around its nominal one, not around the last */
    CHECK_INT_EQ(sse_due_ns(0, 0, 2, 100 * ms, 10 * ms, 0.75), 205 * ms);
    CHECK_INT_EQ(sse_due_ns(0, 0, 2, 100 * ms, 10 * ms, 0.25), 195 * ms);
    /* never before the previous event, never before the start */
    CHECK_INT_EQ(sse_due_ns(0, 150 * ms, 1, 100 * ms, 80 * ms, 0.0), 150 * ms);
    CHECK_INT_EQ(sse_due_ns(0, 0, 1, 10 * ms, 50 * ms, 0.0), 0);
    /* zero delay: everything at once */
    CHECK_INT_EQ(sse_due_ns(7, 7, 100, 0, 0, 0.5), 7);
}

int main(void)
{
    CHECK_RUN(an_event_is_framed_exactly);
    CHECK_RUN(the_schedule_keeps_its_nominal_instants);
    return check_summary();
}
