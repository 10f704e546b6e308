/*
 * loop.c - the loops' memory, allocated once before any thread starts (see loop.h).
 */
#include <stdlib.h>
#include "loop.h"

notesd_server_t server;
__thread notesd_loop_t *this_loop;

void loops_init(int n, int lag_interval_ms)
{
    server.nloops = n;
    server.loops = calloc((size_t)n, sizeof(*server.loops));
    if (server.loops == NULL)
        abort(); /* out of memory at start-up: nothing to recover */
    for (int i = 0; i < n; i++) {
        notesd_loop_t *loop = &server.loops[i];
        loop->index = i;
        loop->api.fd = loop->tls.fd = loop->metrics.fd = loop->wakeup_fd = -1;
        loop->api.state = loop->tls.state = loop->metrics.state = LISTENER_CLOSED;
        loop->api.budget = loop->tls.budget = &loop->api_budget; /* one share for both */
        loop->metrics.budget = &loop->metrics_budget;
        stats_loop_init(&loop->stats);
        lag_init(&loop->lag, lag_interval_ms);
    }
}
