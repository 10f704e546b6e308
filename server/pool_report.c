/*
 * pool_report.c - the pool's part of the metrics page: every loop's pool added
 * up (pool_report_add) and written as the notes_db_* families.
 *
 * Declared in pool.h with the rest of the pool's interface. It reads a pool's
 * lists and counters and changes nothing, from any thread (STAT_READ): the
 * list lengths are the gauges, so total, idle and waiting are what the lists
 * hold at that moment, never a second count kept beside them.
 */
#include <stdio.h>
#include <string.h>
#include "pool.h"

void pool_report_init(pool_report_t *r)
{
    memset(r, 0, sizeof(*r));
    histogram_init(&r->stats.acquire, stats_fine_bounds, stats_fine_nbounds);
    for (size_t i = 0; i < POOL_STATEMENTS_MAX; i++)
        histogram_init(&r->stats.query[i], stats_fine_bounds, stats_fine_nbounds);
}

/* Read from each pool's lists now, not kept as separate counters. */
void pool_report_add(pool_report_t *r, const pool_t *pool)
{
    size_t idle = STAT_READ(pool->idle.len);
    r->connections += STAT_READ(pool->connecting.len) + idle + STAT_READ(pool->busy.len);
    r->idle += idle;
    r->waiting += STAT_READ(pool->waiting.len);
    r->in_flight += STAT_READ(pool->in_flight);
    r->max += pool->settings.max;
    const pool_stats_t *st = &pool->stats;
    r->stats.connection_errors += STAT_READ(st->connection_errors);
    r->stats.connects += STAT_READ(st->connects);
    r->stats.rejected += STAT_READ(st->rejected);
    r->stats.acquire_timeouts += STAT_READ(st->acquire_timeouts);
    r->stats.query_timeouts += STAT_READ(st->query_timeouts);
    r->stats.syncs += STAT_READ(st->syncs);
    r->stats.resent += STAT_READ(st->resent);
    histogram_accumulate(&r->stats.acquire, &st->acquire);
    for (size_t i = 0; i < pool->nstatements; i++)
        histogram_accumulate(&r->stats.query[i], &st->query[i]);
    r->statements = pool->statements;
    r->nstatements = pool->nstatements;
}

void pool_report_write(const pool_report_t *r, exposition_t *o)
{
    exposition_one(o, "notes_db_pool_connections", "gauge",
                   "Open database connections, including those still connecting (pg.Pool "
                   "totalCount).",
                   r->connections);
    exposition_one(o, "notes_db_pool_idle_connections", "gauge",
                   "Connections ready for a query (pg.Pool idleCount).", r->idle);
    exposition_one(o, "notes_db_pool_waiting_requests", "gauge",
                   "Queries waiting for a connection (pg.Pool waitingCount).", r->waiting);
    exposition_one(o, "notes_db_pool_queries_in_flight", "gauge",
                   "Queries sent and not yet answered, over every connection (above the busy "
                   "connections only with --pipeline).",
                   r->in_flight);
    exposition_one(o, "notes_db_pool_max_connections", "gauge",
                   "The pool's connection limit (POOL_MAX).", (uint64_t)r->max);
    exposition_family(o, "notes_db_pool_acquire_duration_seconds", "histogram",
                      "Seconds from a query entering the pool to a connection being handed to "
                      "it.");
    exposition_histogram(o, "notes_db_pool_acquire_duration_seconds", "", &r->stats.acquire, NULL);
    exposition_family(o, "notes_db_query_duration_seconds", "histogram",
                      "Seconds from sending a statement to its complete result, per statement.");
    for (size_t i = 0; i < r->nstatements; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "statement=\"%s\",", r->statements[i].name);
        exposition_histogram(o, "notes_db_query_duration_seconds", labels, &r->stats.query[i],
                             NULL);
    }
    exposition_one(o, "notes_db_connection_errors_total", "counter",
                   "Connection attempts that failed and connections that broke.",
                   r->stats.connection_errors);
    exposition_one(o, "notes_db_connections_opened_total", "counter",
                   "Connections opened successfully.", r->stats.connects);
    exposition_one(o, "notes_db_pool_rejected_total", "counter",
                   "Queries answered 503 at once: queue full, database down or shutting down.",
                   r->stats.rejected);
    exposition_one(o, "notes_db_pool_acquire_timeouts_total", "counter",
                   "Queries that waited longer than POOL_ACQUIRE_TIMEOUT_MS (503).",
                   r->stats.acquire_timeouts);
    exposition_one(o, "notes_db_query_timeouts_total", "counter",
                   "Queries that ran past QUERY_TIMEOUT_MS (504), each once: statement_timeout, "
                   "the --pipeline deadline from sending, or the loop's backstop.",
                   r->stats.query_timeouts);
    exposition_one(o, "notes_db_syncs_total", "counter",
                   "Sync points sent, each the end of an implicit transaction: one per query, "
                   "or with --pipeline one per connection per loop turn.",
                   r->stats.syncs);
    exposition_one(o, "notes_db_queries_resent_total", "counter",
                   "Queries sent again, alone, because another statement failed the batch "
                   "(--pipeline) they shared: they had not run or were rolled back.",
                   r->stats.resent);
}
