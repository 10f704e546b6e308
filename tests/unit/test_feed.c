/*
 * test_feed.c - unit tests of server/feed.c: /ws/feed's schedule (exact, no
 * drift) and its messages (exactly `size` bytes, JSON, every field).
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "feed.h"

static void the_schedule_is_exact_and_does_not_drift(void)
{
    CHECK_INT_EQ(feed_due_ns(1000, 10, 1), 1000); /* the first at once */
    CHECK_INT_EQ(feed_due_ns(1000, 10, 2), 1000 + 100000000);
    CHECK_INT_EQ(feed_due_ns(0, 3, 4), 1000000000); /* 3/s: the 4th after exactly 1 s */
    CHECK_INT_EQ(feed_due_ns(0, 3, 2), 333333333);  /* truncated, never rounded up */
    /* the millionth message at 7/s is (1e6 - 1) / 7 s in, computed without adding steps */
    CHECK_INT_EQ(feed_due_ns(5, 7, FEED_MAX_COUNT), 5 + (uint64_t)999999 * 1000000000u / 7);
    CHECK_INT_EQ(feed_due_ns(0, FEED_MAX_RATE, 10001), 1000000000);
}

static void a_message_is_exactly_its_size(void)
{
    char out[FEED_MAX_BYTES];
    size_t n = feed_render(out, FEED_MIN_BYTES, 3, 10, 1764606000123456LL, 42);
    CHECK_INT_EQ(n, FEED_MIN_BYTES);
    const char head[] =
        "{\"seq\":3,\"of\":10,\"sent_us\":1764606000123456,\"late_us\":42,\"pad\":\"";
    CHECK_MEM_EQ(out, sizeof(head) - 1,
                 "{\"seq\":3,\"of\":10,\"sent_us\":1764606000123456,"
                 "\"late_us\":42,\"pad\":\"");
    for (size_t i = sizeof(head) - 1; i < n - 2; i++)
        if (!CHECK(out[i] == 'x'))
            break;
    CHECK_MEM_EQ(out + n - 2, 2, "\"}");
    CHECK_INT_EQ(feed_render(out, FEED_MAX_BYTES, 1, 1, 0, 0), FEED_MAX_BYTES);
    CHECK_MEM_EQ(out + FEED_MAX_BYTES - 2, 2, "\"}");
}

static void every_field_at_its_longest_fits_the_smallest_size(void)
{
    char out[FEED_MIN_BYTES];
    /* the largest seq and count, a negative clock, and a lateness past the cap */
    size_t n =
        feed_render(out, FEED_MIN_BYTES, FEED_MAX_COUNT, FEED_MAX_COUNT, INT64_MIN, UINT64_MAX);
    CHECK_INT_EQ(n, FEED_MIN_BYTES);
    CHECK(memmem(out, n, "\"late_us\":999999999,", 20) != NULL);
    CHECK_MEM_EQ(out + n - 2, 2, "\"}");
}

int main(void)
{
    CHECK_RUN(the_schedule_is_exact_and_does_not_drift);
    CHECK_RUN(a_message_is_exactly_its_size);
    CHECK_RUN(every_field_at_its_longest_fits_the_smallest_size);
    return check_summary();
}
