/*
 * test_openmetrics.c - unit tests of server/openmetrics.c: which Accept
 * headers get OpenMetrics, and the exemplar's exact bytes.
 */
#include <string.h>
#include "check.h"
#include "openmetrics.h"

static int wanted(const char *accept)
{
    return openmetrics_wanted(accept, strlen(accept));
}

static void prometheus_gets_openmetrics_and_everyone_else_text(void)
{
    /* what Prometheus 2.x sends on every scrape */
    CHECK_INT_EQ(wanted("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                        "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                 1);
    CHECK_INT_EQ(wanted("application/openmetrics-text; version=1.0.0"), 1);
    CHECK_INT_EQ(wanted("Application/OpenMetrics-Text"), 1);
    /* curl, browsers, loadlib, an old Prometheus: unchanged */
    CHECK_INT_EQ(wanted(""), 0);
    CHECK_INT_EQ(wanted("*/*"), 0);
    CHECK_INT_EQ(wanted("application/*"), 0);
    CHECK_INT_EQ(wanted("text/plain;version=0.0.4;q=1,*/*;q=0.1"), 0);
    CHECK_INT_EQ(wanted("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), 0);
}

static void q_values_decide(void)
{
    CHECK_INT_EQ(wanted("application/openmetrics-text;q=0"), 0);
    CHECK_INT_EQ(wanted("application/openmetrics-text;q=0.000"), 0);
    CHECK_INT_EQ(wanted("text/plain, application/openmetrics-text;q=0.5"), 0);
    CHECK_INT_EQ(wanted("text/plain;q=0.4, application/openmetrics-text;q=0.5"), 1);
    /* equal preference: OpenMetrics, the richer of the two */
    CHECK_INT_EQ(wanted("text/plain, application/openmetrics-text"), 1);
    CHECK_INT_EQ(wanted(" application/openmetrics-text ; charset=utf-8 ; q=1 "), 1);
}

static void the_exemplar_is_written_exactly(void)
{
    char out[OPENMETRICS_EXEMPLAR_MAX];
    size_t n = openmetrics_exemplar(out, 0x4bf92f3577b34da6ULL, 0xa3ce929d0e0e4736ULL, 0.0123,
                                    1764606000123LL);
    CHECK_MEM_EQ(out, n,
                 " # {trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\"} 0.0123 1764606000.123");
    /* leading zeros of the id and of the milliseconds are kept */
    n = openmetrics_exemplar(out, 0, 1, 2.5, 1764606000007LL);
    CHECK_MEM_EQ(out, n, " # {trace_id=\"00000000000000000000000000000001\"} 2.5 1764606000.007");
    CHECK(strlen(out) == n);
}

int main(void)
{
    CHECK_RUN(prometheus_gets_openmetrics_and_everyone_else_text);
    CHECK_RUN(q_values_decide);
    CHECK_RUN(the_exemplar_is_written_exactly);
    return check_summary();
}
