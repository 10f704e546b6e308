/*
 * feed.c - /ws/feed's schedule and message bytes (see feed.h).
 */
#include <stdio.h>
#include <string.h>
#include "feed.h"

uint64_t feed_due_ns(uint64_t start_ns, uint32_t rate, uint64_t seq)
{
    /* (seq - 1) < 1e6 and 1e9 * 1e6 fits in 64 bits */
    return start_ns + (seq - 1) * 1000000000u / rate;
}

size_t feed_render(char *out, size_t size, uint64_t seq, uint64_t count, int64_t sent_us,
                   uint64_t late_us)
{
    char head[FEED_MIN_BYTES];
    if (late_us > 999999999)
        late_us = 999999999;
    int n = snprintf(head, sizeof(head),
                     "{\"seq\":%llu,\"of\":%llu,\"sent_us\":%lld,\"late_us\":%llu,\"pad\":\"",
                     (unsigned long long)seq, (unsigned long long)count, (long long)sent_us,
                     (unsigned long long)late_us);
    /* FEED_MIN_BYTES holds every field at its longest, with the closing "}. */
    size_t len = (size_t)n;
    memcpy(out, head, len);
    memset(out + len, 'x', size - len - 2);
    memcpy(out + size - 2, "\"}", 2);
    return size;
}
