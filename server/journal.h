/*
 * journal.h - the request journal: one record per HTTP request and per
 * WebSocket message, kept in a ring per loop, so that a reader can say when
 * each request arrived and which one a load tool's figure belongs to.
 *
 * Owns journal_t, one loop's ring of JOURNAL records allocated at start-up
 * (no allocation per request), and the record's layout. The loop's thread
 * writes (journal_add); the metrics port's thread reads (journal_read) with
 * a sequence lock per record, every word an atomic access, so neither waits
 * for the other and no lock is shared across loops. Each record carries the
 * loop's sequence number (1, 2, ...); a reader pages through a loop with
 * `since`, and a record overwritten before any reader was given it is
 * counted (dropped), never lost in silence. What each timestamp is, exactly,
 * and what the journal costs: docs/journal.md.
 *
 * Filling a record from a request is request.c's (request_journal_fill; a
 * WebSocket message's record is its handshake's, ws_report_journal);
 * the metrics port's GET /journal formats records (journal_format).
 */
#ifndef NOTESD_JOURNAL_H
#define NOTESD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include "compiler.h"
#include "exposition.h"

/* Most records a loop's ring holds (JOURNAL's upper bound). */
#define JOURNAL_MAX 10000000
/* Longest X-Request-Id kept; a longer one is cut there (request_id_cut says so). */
#define JOURNAL_REQUEST_ID_MAX 64

enum journal_kind {
    JOURNAL_HTTP,   /* an HTTP request, when h2o disposed of it */
    JOURNAL_WS_IN,  /* a WebSocket data message received whole */
    JOURNAL_WS_OUT, /* a WebSocket data message queued to be sent */
};

enum journal_proto {
    JOURNAL_H1 = 1,  /* HTTP/1.x */
    JOURNAL_H2 = 2,  /* HTTP/2 */
    JOURNAL_TLS = 4, /* either, over TLS */
};

/* One record. Times are microseconds since the Unix epoch (the wall clock); 0: not known. */
typedef struct journal_record {
    uint64_t seq;                /* the loop's sequence number; 0 while the slot is being written */
    uint64_t conn_id;            /* h2o's connection id, unique in the process */
    int64_t conn_at_us;          /* the connection was accepted (h2o's timestamp) */
    int64_t arrived_us;          /* the request's head began to arrive (h2o's timestamp); for a
                                    message, when it was received whole */
    int64_t started_us;          /* the handler received the request (notesd's clock) */
    int64_t ended_us;            /* h2o disposed of the request: its last byte written, or the
                                    client gone (notesd's clock); for a message, = started_us */
    uint64_t trace_hi, trace_lo; /* the trace id of a valid traceparent; both 0: none */
    uint32_t wait_us;            /* waited for a database connection (0: no query) */
    uint32_t query_us;           /* its query, from sending to the complete result */
    uint32_t answer_us;          /* from started_us to when notesd began its answer (status and
                                    headers to h2o; all but the streams, the body too): a time
                                    every client waited; 0: none sent (a message: 0) */
    uint32_t bytes_in;           /* request body bytes (a message: its payload) */
    uint32_t bytes_out;          /* response body bytes h2o sent (a message: its payload) */
    uint32_t stream_id;          /* the HTTP/2 stream; 0 for HTTP/1 */
    uint16_t status;             /* the status recorded (0: no answer was sent) */
    uint8_t kind;                /* enum journal_kind */
    uint8_t proto;               /* enum journal_proto, or-ed */
    uint8_t method;              /* request_method_labels' index */
    uint8_t route;               /* the route id (routes.h) */
    uint8_t loop;                /* the loop that served it */
    uint8_t request_id_len : 7;  /* bytes of request_id used */
    uint8_t request_id_cut : 1;  /* 1: X-Request-Id was longer and is cut */
    char request_id[JOURNAL_REQUEST_ID_MAX]; /* the X-Request-Id header's value */
} journal_record_t;

#define JOURNAL_WORDS (sizeof(journal_record_t) / sizeof(uint64_t))

/* A slot of the ring: the record, or its words for the atomic copies. */
typedef union journal_slot {
    journal_record_t rec;
    uint64_t words[JOURNAL_WORDS];
} journal_slot_t;

/* One loop's journal. Whether a reader was given a record is kept in its
 * slot (a bit of its seq word), so the writer and a reader decide it with one
 * atomic operation each, and exactly one of them wins: the reader that sets
 * the bit before the writer takes the slot was given the record; a record the
 * writer takes without the bit is dropped. */
typedef struct journal {
    journal_slot_t *ring; /* `cap` slots, allocated by journal_init */
    size_t cap;
    uint64_t next;    /* the sequence number of the next record (atomic: the reader reads it) */
    uint64_t dropped; /* records overwritten before any reader was given them (the writer's) */
} journal_t;

/* Allocates a ring of `cap` records (0: the journal is off, journal_add must
 * not be called). At start-up. Returns 0, or -1 when the memory is not there. */
NOTESD_MUSTCHECK int journal_init(journal_t *j, size_t cap);

void journal_free(journal_t *j);

/* The words of a record before its request_id. */
#define JOURNAL_HEAD_WORDS (offsetof(journal_record_t, request_id) / sizeof(uint64_t))

/* Adds one record (its seq is set here) on the loop's own thread. Only the
 * bytes of request_id that request_id_len uses are read (and kept). */
void journal_add(journal_t *j, const journal_record_t *rec);

/* Sets the record's request_id from an X-Request-Id header's value: without
 * the spaces and tabs around it (as every header value notesd reads), its
 * first JOURNAL_REQUEST_ID_MAX bytes, request_id_cut when it was longer. */
void journal_set_request_id(journal_record_t *rec, const char *value, size_t len);

/* The newest record's sequence number (0: none yet); from any thread. */
static inline uint64_t journal_newest(const journal_t *j)
{
    return __atomic_load_n(&j->next, __ATOMIC_ACQUIRE) - 1;
}

/* What a reader got: up to `max` records with seq > since, oldest first,
 * copied whole into out[]. */
typedef struct journal_page {
    size_t n;                    /* records copied */
    uint64_t lost_from, lost_to; /* records after `since` overwritten before this read:
                                    seq lost_from..lost_to; 0, 0: none */
    uint64_t next;               /* `since` of the next page: the last seq given, or `since` */
    uint64_t newest;             /* the newest seq the loop had written when read */
} journal_page_t;

/* Copies records after `since` into out[0 .. max) (from any thread) and
 * marks each given, so its slot is no longer dropped when overwritten. When
 * the record after `since` is gone (the ring went round), it says so instead
 * (lost_from..lost_to, n = 0, next = lost_to), and the next read gives the
 * records after the gap: a read tells a gap or gives records, never both. A
 * `since` past the newest record (one that belongs to an earlier process, or
 * none) gives nothing, loses nothing and marks nothing: page->n is 0, and
 * page->next is `since`. */
void journal_read(journal_t *j, uint64_t since, journal_record_t *out, size_t max,
                  journal_page_t *page);

/* Longest line journal_format writes, newline included. */
#define JOURNAL_LINE_MAX 1024

/* One record as a line of NDJSON (a JSON object and '\n'); `method` and
 * `route` name the record's indices. Returns the bytes written. */
size_t journal_format(const journal_record_t *r, const char *method, const char *route, char *out);

/* The first line of a CSV page: the columns, named as NDJSON's fields. */
#define JOURNAL_CSV_HEADER                                                                         \
    "seq,loop,kind,conn,proto,tls,stream,method,route,status,conn_at_us,arrived_us,started_us,"    \
    "ended_us,wait_us,query_us,answer_us,bytes_in,bytes_out,trace_id,request_id\n"

/* One record as a line of CSV (RFC 4180), the columns of JOURNAL_CSV_HEADER:
 * the same values as journal_format's, tls as 0 or 1, an absent trace id or
 * request id as an empty field, a request id quoted (its '"' doubled; bytes
 * outside printable ASCII as \u00XX, as in NDJSON). At most JOURNAL_LINE_MAX
 * bytes. Returns the bytes written. */
size_t journal_format_csv(const journal_record_t *r, const char *method, const char *route,
                          char *out);

/* ---- the metrics page's figures ---------------------------------------------------------- */

typedef struct journal_report {
    uint64_t records, dropped;
    size_t cap; /* records per loop */
} journal_report_t;

void journal_report_add(journal_report_t *r, const journal_t *j);

/* Writes notes_journal_records_total, notes_journal_dropped_total, notes_journal_capacity. */
void journal_report_write(const journal_report_t *r, exposition_t *o);

#endif
