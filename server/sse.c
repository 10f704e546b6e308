/*
 * sse.c - Server-Sent Events: an event's bytes and the schedule (see sse.h).
 */
#include <stdio.h>
#include "sse.h"

size_t sse_event(char *out, uint64_t id, uint64_t count, int64_t sent_us)
{
    int n = snprintf(out, SSE_EVENT_MAX,
                     "id: %llu\ndata: {\"id\":%llu,\"of\":%llu,\"sent_us\":%lld}\n\n",
                     (unsigned long long)id, (unsigned long long)id, (unsigned long long)count,
                     (long long)sent_us);
    return n < 0 ? 0 : (size_t)n;
}

static size_t digits(uint64_t v)
{
    size_t n = 1;
    while (v >= 10)
        v /= 10, n++;
    return n;
}

size_t sse_event_len(uint64_t id, uint64_t count, int64_t sent_us)
{
    size_t t = sent_us < 0 ? 1 + digits(0 - (uint64_t)sent_us) : digits((uint64_t)sent_us);
    /* "id: " K "\n" "data: {\"id\":" K ",\"of\":" C ",\"sent_us\":" T "}\n\n" */
    return 4 + digits(id) + 1 + 12 + digits(id) + 6 + digits(count) + 11 + t + 3;
}

uint64_t sse_due_ns(uint64_t start_ns, uint64_t prev_ns, uint64_t k, uint64_t delay_ns,
                    uint64_t jitter_ns, double u)
{
    int64_t offset = (int64_t)((2 * u - 1) * (double)jitter_ns);
    uint64_t nominal = start_ns + k * delay_ns, due;
    if (offset >= 0)
        due = nominal + (uint64_t)offset;
    else if ((uint64_t)-offset > k * delay_ns)
        due = start_ns; /* never before the stream began */
    else
        due = nominal - (uint64_t)-offset;
    return due < prev_ns ? prev_ns : due;
}
