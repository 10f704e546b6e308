/*
 * journal.c - the request journal's ring, its sequence locks and its lines
 * (see journal.h).
 *
 * A slot is written as a sequence lock: the writer swaps its seq word for 0,
 * then writes every other word, then the record's seq, with release order;
 * j->next moves last. A reader takes records up to the `next` it saw, checks
 * each slot's seq before and after copying it, and counts a record whose slot
 * changed meanwhile (the writer lapped the reader) as lost, like one
 * overwritten before the read.
 *
 * Given or dropped: the top bit of a slot's seq word (JOURNAL_GIVEN) says a
 * reader was given the record. A reader sets it with a compare-and-swap from
 * the seq it copied; the writer's swap for 0 returns the word as it was. One
 * of the two comes first, so each overwritten record is either given (the
 * bit was set) or dropped (counted by the writer), never both and never
 * neither. Nothing else is shared: a reader that asks for records far ahead,
 * or reads the same ones twice, changes no other record's fate.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "head.h"
#include "journal.h"
#include "stats.h"

_Static_assert(sizeof(journal_record_t) % sizeof(uint64_t) == 0, "a record is whole words");
_Static_assert(sizeof(journal_record_t) == 160, "the record's size, as docs/journal.md states");
_Static_assert(offsetof(journal_record_t, request_id) % sizeof(uint64_t) == 0,
               "request_id starts a word");

/* The bit of a slot's seq word that says a reader was given its record; a
 * sequence number never reaches it (2^63 records). */
#define JOURNAL_GIVEN (UINT64_C(1) << 63)

int journal_init(journal_t *j, size_t cap)
{
    memset(j, 0, sizeof(*j));
    j->next = 1;
    if (cap == 0)
        return 0;
    /* calloc: the kernel's zero pages, touched (and counted in RSS) as the ring fills */
    if ((j->ring = calloc(cap, sizeof(*j->ring))) == NULL)
        return -1;
    j->cap = cap;
    return 0;
}

void journal_free(journal_t *j)
{
    free(j->ring);
    j->ring = NULL;
    j->cap = 0;
}

void journal_add(journal_t *j, const journal_record_t *rec)
{
    uint64_t seq = j->next; /* only this thread writes it */
    journal_slot_t *slot = &j->ring[(seq - 1) % j->cap];
    const journal_slot_t *from = (const journal_slot_t *)rec;

    /* The slot's old record leaves it now: dropped, unless a reader set its bit first. */
    uint64_t was = __atomic_exchange_n(&slot->words[0], 0, __ATOMIC_RELAXED);
    if (was != 0 && (was & JOURNAL_GIVEN) == 0)
        STAT_ADD(j->dropped, 1);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    /* the fields, then the words of request_id it uses: a slot's other bytes
     * may be an older record's, which request_id_len says to ignore */
    size_t words = JOURNAL_HEAD_WORDS + (rec->request_id_len + 7u) / 8;
    for (size_t w = 1; w < words; w++)
        __atomic_store_n(&slot->words[w], from->words[w], __ATOMIC_RELAXED);
    __atomic_store_n(&slot->words[0], seq, __ATOMIC_RELEASE);
    __atomic_store_n(&j->next, seq + 1, __ATOMIC_RELEASE);
}

void journal_set_request_id(journal_record_t *rec, const char *value, size_t len)
{
    len = head_trim(&value, len);
    rec->request_id_cut = len > JOURNAL_REQUEST_ID_MAX;
    rec->request_id_len = (uint8_t)(rec->request_id_cut ? JOURNAL_REQUEST_ID_MAX : len);
    memcpy(rec->request_id, value, rec->request_id_len);
}

/* Copies the record `seq` from its slot and marks it given; 0 when the slot
 * holds another record now, or the writer took it before it could be marked
 * (then it is dropped, and counted so by the writer). */
static int copy_record(journal_t *j, uint64_t seq, journal_record_t *out)
{
    journal_slot_t *slot = &j->ring[(seq - 1) % j->cap];
    journal_slot_t *to = (journal_slot_t *)out;

    if ((__atomic_load_n(&slot->words[0], __ATOMIC_ACQUIRE) & ~JOURNAL_GIVEN) != seq)
        return 0;
    for (size_t w = 1; w < JOURNAL_WORDS; w++)
        to->words[w] = __atomic_load_n(&slot->words[w], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t now = __atomic_load_n(&slot->words[0], __ATOMIC_RELAXED);
    /* The copy is whole if the seq did not change; it is ours if the bit is
     * set, by this reader now or by another one before. */
    while (now == seq && !__atomic_compare_exchange_n(&slot->words[0], &now, seq | JOURNAL_GIVEN, 0,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    if (now != seq && now != (seq | JOURNAL_GIVEN))
        return 0;
    to->words[0] = seq;
    return 1;
}

void journal_read(journal_t *j, uint64_t since, journal_record_t *out, size_t max,
                  journal_page_t *page)
{
    memset(page, 0, sizeof(*page));
    page->next = since;
    if (j->cap == 0)
        return;
    uint64_t newest = journal_newest(j);
    page->newest = newest;
    if (since >= newest)
        return; /* nothing after it: and since + 1 cannot wrap */
    uint64_t oldest = newest > j->cap ? newest - j->cap + 1 : 1;
    uint64_t seq = since + 1;
    if (seq < oldest) {
        page->lost_from = seq, page->next = page->lost_to = oldest - 1;
        return;
    }
    for (; seq <= newest && page->n < max; seq++) {
        if (!copy_record(j, seq, &out[page->n])) {
            /* overwritten while this read ran: lost with everything the writer took since */
            uint64_t taken = __atomic_load_n(&j->next, __ATOMIC_ACQUIRE) - 1 - j->cap;
            if (page->n == 0) {
                if (page->lost_from == 0)
                    page->lost_from = seq;
                page->lost_to = taken > seq ? taken : seq;
            }
            break;
        }
        page->n++;
    }
    if (page->n > 0)
        page->next = out[page->n - 1].seq;
    else if (page->lost_to != 0)
        page->next = page->lost_to;
}

static const char *const kind_names[] = {"http", "ws_in", "ws_out"};

/* The X-Request-Id as a quoted string: printable ASCII kept, backslashes
 * escaped, anything else as \u00XX, and a quote written as `quote` (JSON's
 * \" or CSV's ""). */
static char *put_request_id(char *p, const journal_record_t *r, char quote)
{
    static const char hex[] = "0123456789abcdef";
    *p++ = '"';
    for (size_t i = 0; i < r->request_id_len; i++) {
        unsigned char c = (unsigned char)r->request_id[i];
        if (c == '"' || c == '\\') {
            *p++ = c == '"' ? quote : '\\', *p++ = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            memcpy(p, "\\u00", 4), p += 4;
            *p++ = hex[c >> 4], *p++ = hex[c & 15];
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = '"';
    return p;
}

static const char *kind_name(const journal_record_t *r)
{
    return r->kind < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[r->kind] : "?";
}

size_t journal_format(const journal_record_t *r, const char *method, const char *route, char *out)
{
    char *p = out;
    p += sprintf(p,
                 "{\"seq\":%llu,\"loop\":%u,\"kind\":\"%s\",\"conn\":%llu,\"proto\":\"%s\","
                 "\"tls\":%s,\"stream\":%u,\"method\":\"%s\",\"route\":\"%s\",\"status\":%u,"
                 "\"conn_at_us\":%lld,\"arrived_us\":%lld,\"started_us\":%lld,\"ended_us\":%lld,"
                 "\"wait_us\":%u,\"query_us\":%u,\"answer_us\":%u,\"bytes_in\":%u,"
                 "\"bytes_out\":%u",
                 (unsigned long long)r->seq, r->loop, kind_name(r), (unsigned long long)r->conn_id,
                 (r->proto & JOURNAL_H2) ? "h2" : "h1", (r->proto & JOURNAL_TLS) ? "true" : "false",
                 r->stream_id, method, route, r->status, (long long)r->conn_at_us,
                 (long long)r->arrived_us, (long long)r->started_us, (long long)r->ended_us,
                 r->wait_us, r->query_us, r->answer_us, r->bytes_in, r->bytes_out);
    if (r->trace_hi != 0 || r->trace_lo != 0)
        p += sprintf(p, ",\"trace_id\":\"%016llx%016llx\"", (unsigned long long)r->trace_hi,
                     (unsigned long long)r->trace_lo);
    if (r->request_id_len > 0 || r->request_id_cut) {
        memcpy(p, ",\"request_id\":", 14), p += 14;
        p = put_request_id(p, r, '\\');
        if (r->request_id_cut)
            memcpy(p, ",\"request_id_cut\":true", 22), p += 22;
    }
    *p++ = '}';
    *p++ = '\n';
    return (size_t)(p - out);
}

size_t journal_format_csv(const journal_record_t *r, const char *method, const char *route,
                          char *out)
{
    char *p = out;
    p += sprintf(p, "%llu,%u,%s,%llu,%s,%d,%u,%s,%s,%u,%lld,%lld,%lld,%lld,%u,%u,%u,%u,%u,",
                 (unsigned long long)r->seq, r->loop, kind_name(r), (unsigned long long)r->conn_id,
                 (r->proto & JOURNAL_H2) ? "h2" : "h1", (r->proto & JOURNAL_TLS) ? 1 : 0,
                 r->stream_id, method, route, r->status, (long long)r->conn_at_us,
                 (long long)r->arrived_us, (long long)r->started_us, (long long)r->ended_us,
                 r->wait_us, r->query_us, r->answer_us, r->bytes_in, r->bytes_out);
    if (r->trace_hi != 0 || r->trace_lo != 0)
        p += sprintf(p, "%016llx%016llx", (unsigned long long)r->trace_hi,
                     (unsigned long long)r->trace_lo);
    *p++ = ',';
    if (r->request_id_len > 0)
        p = put_request_id(p, r, '"');
    *p++ = '\n';
    return (size_t)(p - out);
}

void journal_report_add(journal_report_t *r, const journal_t *j)
{
    r->records += __atomic_load_n(&j->next, __ATOMIC_RELAXED) - 1;
    r->dropped += STAT_READ(j->dropped);
    r->cap = j->cap;
}

void journal_report_write(const journal_report_t *r, exposition_t *o)
{
    exposition_one(o, "notes_journal_capacity", "gauge",
                   "Records the request journal keeps per loop (JOURNAL; 0: off).", r->cap);
    exposition_one(o, "notes_journal_records_total", "counter",
                   "Records written to the request journal, every loop.", r->records);
    exposition_one(o, "notes_journal_dropped_total", "counter",
                   "Journal records overwritten before GET /journal gave them to a reader.",
                   r->dropped);
}
