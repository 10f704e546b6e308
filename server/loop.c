/*
 * loop.c - the loops' memory, allocated once before any thread starts (see loop.h).
 */
#include <stdio.h>
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
        loop->wakeup_fd = -1;
        stats_loop_init(&loop->stats);
        if (listen_init(&loop->listen, &loop->stats, (unsigned)i, &server.api_budget) != 0) {
            perror("notesd: eventfd");
            exit(1);
        }
        lag_init(&loop->lag, lag_interval_ms);
        ws_loop_init(&loop->ws, &loop->timers);
    }
}
