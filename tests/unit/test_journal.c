/*
 * test_journal.c - unit tests of server/journal.c: records read back whole and
 * in order, pages that neither lose nor repeat a record, the ring going
 * round (lost for the reader, dropped when no reader had it), a `since` past
 * the newest record changing nothing, a record line's escaping (NDJSON and
 * CSV), and a reader on another thread while the writer laps it: what it was
 * given and what it was told it lost add up to every record, and what it lost
 * is exactly what the writer counted dropped.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "journal.h"

/* A record whose every field is a function of n, so a torn copy shows. */
static journal_record_t made(uint64_t n)
{
    journal_record_t r;
    memset(&r, 0, sizeof(r));
    r.conn_id = n * 3;
    r.arrived_us = (int64_t)n * 7;
    r.started_us = (int64_t)n * 7 + 1;
    r.ended_us = (int64_t)n * 7 + 2;
    r.status = (uint16_t)(n % 600);
    r.bytes_out = (uint32_t)(n * 11);
    r.answer_us = (uint32_t)(n * 5);
    r.trace_lo = n ^ 0x5555;
    r.request_id_len = 8;
    memcpy(r.request_id, &n, 8);
    return r;
}

static int consistent(const journal_record_t *r)
{
    uint64_t n = r->conn_id / 3, id;
    memcpy(&id, r->request_id, 8);
    return r->conn_id == n * 3 && r->arrived_us == (int64_t)n * 7 &&
           r->ended_us == (int64_t)n * 7 + 2 && r->status == n % 600 && r->bytes_out == n * 11 &&
           r->answer_us == n * 5 && r->trace_lo == (n ^ 0x5555) && id == n;
}

static void records_come_back_whole_and_in_order(void)
{
    journal_t j;
    journal_record_t out[16];
    journal_page_t page;
    CHECK_INT_EQ(journal_init(&j, 8), 0);
    for (uint64_t n = 1; n <= 5; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    journal_read(&j, 0, out, 16, &page);
    CHECK_INT_EQ(page.n, 5);
    CHECK_INT_EQ(page.lost_from, 0);
    CHECK_INT_EQ(page.next, 5);
    CHECK_INT_EQ(page.newest, 5);
    for (size_t i = 0; i < page.n; i++) {
        CHECK_INT_EQ(out[i].seq, i + 1);
        CHECK_INT_EQ(out[i].conn_id, (i + 1) * 3);
        CHECK(consistent(&out[i]));
    }
    /* the next page starts after the last: nothing new yet */
    journal_read(&j, page.next, out, 16, &page);
    CHECK_INT_EQ(page.n, 0);
    CHECK_INT_EQ(page.next, 5);
    journal_free(&j);
}

static void small_pages_neither_lose_nor_repeat(void)
{
    journal_t j;
    journal_record_t out[3];
    journal_page_t page;
    CHECK_INT_EQ(journal_init(&j, 100), 0);
    for (uint64_t n = 1; n <= 50; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    uint64_t since = 0, expect = 1, pages = 0;
    do {
        journal_read(&j, since, out, 3, &page);
        for (size_t i = 0; i < page.n; i++)
            CHECK_INT_EQ(out[i].seq, expect++);
        CHECK_INT_EQ(page.lost_from, 0);
        since = page.next;
        pages++;
    } while (page.n > 0);
    CHECK_INT_EQ(expect, 51);
    CHECK_INT_EQ(pages, 18); /* 17 pages of records, one empty */
    journal_free(&j);
}

/* The ring goes round: a reader is told what it missed (lost), and what no
 * reader was given is counted (dropped); what a reader had is not. */
static void the_ring_going_round_is_lost_and_dropped_never_silent(void)
{
    journal_t j;
    journal_record_t out[16];
    journal_page_t page;
    CHECK_INT_EQ(journal_init(&j, 4), 0);
    for (uint64_t n = 1; n <= 3; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    journal_read(&j, 0, out, 16, &page); /* 1..3 given */
    CHECK_INT_EQ(page.n, 3);
    for (uint64_t n = 4; n <= 10; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    /* slots of 1..6 overwritten: 1..3 had been given, 4..6 had not */
    CHECK_INT_EQ(j.dropped, 3);
    /* a read tells the gap, and the next one gives what follows it */
    journal_read(&j, 3, out, 16, &page);
    CHECK_INT_EQ(page.lost_from, 4);
    CHECK_INT_EQ(page.lost_to, 6);
    CHECK_INT_EQ(page.n, 0);
    CHECK_INT_EQ(page.next, 6);
    journal_read(&j, page.next, out, 16, &page);
    CHECK_INT_EQ(page.lost_from, 0);
    CHECK_INT_EQ(page.n, 4);
    CHECK_INT_EQ(out[0].seq, 7);
    CHECK_INT_EQ(out[3].seq, 10);
    CHECK_INT_EQ(page.next, 10);
    /* 7..10 were given: overwriting them drops nothing more */
    for (uint64_t n = 11; n <= 14; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    CHECK_INT_EQ(j.dropped, 3);
    journal_report_t rep = {0};
    journal_report_add(&rep, &j);
    CHECK_INT_EQ(rep.records, 14);
    CHECK_INT_EQ(rep.dropped, 3);
    CHECK_INT_EQ(rep.cap, 4);
    journal_free(&j);
}

/* A reader whose `since` is past the newest record (its position from an
 * earlier process, or 2^64 - 1) is given nothing and changes nothing: the
 * records after it are still dropped when no reader had them. */
static void a_since_past_the_newest_changes_nothing(void)
{
    journal_t j;
    journal_record_t out[16];
    journal_page_t page;
    uint64_t far[] = {6, 1000, UINT64_MAX - 1, UINT64_MAX};
    CHECK_INT_EQ(journal_init(&j, 4), 0);
    for (uint64_t n = 1; n <= 5; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
        journal_read(&j, far[i], out, 16, &page);
        CHECK_INT_EQ(page.n, 0);
        CHECK_INT_EQ(page.lost_from, 0);
        CHECK_INT_EQ(page.next, far[i]);
        CHECK_INT_EQ(page.newest, 5);
    }
    CHECK_INT_EQ(j.dropped, 1); /* record 1, overwritten by 5 */
    for (uint64_t n = 6; n <= 12; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    CHECK_INT_EQ(j.dropped, 8); /* 1..8: no reader had any of them */
    journal_read(&j, 0, out, 16, &page);
    CHECK_INT_EQ(page.lost_from, 1);
    CHECK_INT_EQ(page.lost_to, 8);
    CHECK_INT_EQ(page.n, 0);
    journal_read(&j, page.next, out, 16, &page);
    CHECK_INT_EQ(page.n, 4);
    CHECK_INT_EQ(out[0].seq, 9);
    journal_free(&j);
}

/* Two readers: what one was given is not dropped when the other missed it;
 * a record read twice is given once. */
static void a_record_is_given_once_whoever_reads_it(void)
{
    journal_t j;
    journal_record_t out[16];
    journal_page_t page;
    CHECK_INT_EQ(journal_init(&j, 4), 0);
    for (uint64_t n = 1; n <= 4; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    journal_read(&j, 2, out, 16, &page); /* reader A: 3 and 4 */
    CHECK_INT_EQ(page.n, 2);
    journal_read(&j, 0, out, 1, &page); /* reader B: 1 */
    CHECK_INT_EQ(page.n, 1);
    journal_read(&j, 2, out, 16, &page); /* reader A again: 3 and 4 once more */
    CHECK_INT_EQ(page.n, 2);
    CHECK_INT_EQ(out[0].seq, 3);
    for (uint64_t n = 5; n <= 8; n++) {
        journal_record_t r = made(n);
        journal_add(&j, &r);
    }
    CHECK_INT_EQ(j.dropped, 1); /* record 2 alone: no reader had it */
    journal_free(&j);
}

static void a_line_is_json_with_its_request_id_escaped(void)
{
    journal_record_t r = made(9);
    char line[JOURNAL_LINE_MAX];
    r.seq = 9;
    r.proto = JOURNAL_H2 | JOURNAL_TLS;
    r.stream_id = 5;
    r.trace_hi = 0x0af7651916cd43ddULL, r.trace_lo = 0x8448eb211c80319cULL;
    memcpy(r.request_id, "a\"b\\c\x01\xff", 7);
    r.request_id_len = 7;
    r.request_id_cut = 1;
    size_t n = journal_format(&r, "GET", "/notes/:id", line);
    CHECK(n < sizeof(line));
    line[n] = '\0';
    CHECK(line[n - 1] == '\n');
    CHECK(strstr(line, "\"seq\":9,") != NULL);
    CHECK(strstr(line, "\"query_us\":0,\"answer_us\":45,\"bytes_in\":0,") != NULL);
    CHECK(strstr(line, "\"proto\":\"h2\",\"tls\":true,\"stream\":5,") != NULL);
    CHECK(strstr(line, "\"route\":\"/notes/:id\"") != NULL);
    CHECK(strstr(line, "\"trace_id\":\"0af7651916cd43dd8448eb211c80319c\"") != NULL);
    CHECK(strstr(line, "\"request_id\":\"a\\\"b\\\\c\\u0001\\u00ff\",\"request_id_cut\":true}") !=
          NULL);
    /* the longest line fits JOURNAL_LINE_MAX */
    memset(&r, 0xff, sizeof(r));
    r.kind = JOURNAL_WS_OUT;
    r.request_id_len = JOURNAL_REQUEST_ID_MAX;
    r.request_id_cut = 1;
    n = journal_format(&r, "OPTIONS", "/fault/:status", line);
    CHECK(n <= JOURNAL_LINE_MAX);
}

static void a_csv_line_has_the_header_s_columns(void)
{
    journal_record_t r = made(9);
    char line[JOURNAL_LINE_MAX + 1];
    r.seq = 9;
    r.loop = 1;
    r.proto = JOURNAL_H2 | JOURNAL_TLS;
    r.stream_id = 5;
    r.trace_hi = 0x0af7651916cd43ddULL, r.trace_lo = 0x8448eb211c80319cULL;
    memcpy(r.request_id, "a\"b,c\\\x01", 7);
    r.request_id_len = 7;
    size_t n = journal_format_csv(&r, "GET", "/notes/:id", line);
    line[n] = '\0';
    CHECK_STR_EQ(line, "9,1,http,27,h2,1,5,GET,/notes/:id,9,0,63,64,65,0,0,45,0,99,"
                       "0af7651916cd43dd8448eb211c80319c,\"a\"\"b,c\\\\\\u0001\"\n");
    /* as many fields as the header has columns, none of them absent ones */
    size_t commas = 0;
    for (const char *h = JOURNAL_CSV_HEADER; *h != '\0'; h++)
        commas += *h == ',';
    r.trace_hi = r.trace_lo = 0;
    r.request_id_len = 0;
    n = journal_format_csv(&r, "GET", "/json", line);
    line[n] = '\0';
    size_t fields = 0;
    for (const char *c = line; *c != '\0'; c++)
        fields += *c == ',';
    CHECK_INT_EQ(fields, commas);
    CHECK(strstr(line, ",99,,\n") != NULL);
    /* the longest line fits JOURNAL_LINE_MAX */
    memset(&r, 0xff, sizeof(r));
    r.kind = JOURNAL_WS_OUT;
    r.request_id_len = JOURNAL_REQUEST_ID_MAX;
    n = journal_format_csv(&r, "OPTIONS", "/fault/:status", line);
    CHECK(n <= JOURNAL_LINE_MAX);
}

static void a_request_id_is_kept_without_the_spaces_around_it(void)
{
    journal_record_t r;
    memset(&r, 0, sizeof(r));
    journal_set_request_id(&r, " \tr-1 \t", 7);
    CHECK_INT_EQ(r.request_id_len, 3);
    CHECK(memcmp(r.request_id, "r-1", 3) == 0);
    CHECK_INT_EQ(r.request_id_cut, 0);
    char longer[JOURNAL_REQUEST_ID_MAX + 3];
    memset(longer, 'x', sizeof(longer));
    journal_set_request_id(&r, longer, sizeof(longer));
    CHECK_INT_EQ(r.request_id_len, JOURNAL_REQUEST_ID_MAX);
    CHECK_INT_EQ(r.request_id_cut, 1);
}

/* ---- a reader on another thread ------------------------------------------------------------ */

#define LAPS 400000

static journal_t shared;
static int writer_done;

static void *write_many(void *arg)
{
    for (uint64_t n = 1; n <= LAPS; n++) {
        journal_record_t r = made(n);
        journal_add(&shared, &r);
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
    return arg;
}

/* Every record a reader gets is whole, seqs only go up, and what it got plus
 * what it was told it lost is everything written. */
static void a_reader_racing_the_writer_gets_whole_records_or_is_told(void)
{
    static journal_record_t out[64];
    journal_page_t page;
    pthread_t writer;
    uint64_t since = 0, got = 0, lost = 0, torn = 0, backwards = 0;

    CHECK_INT_EQ(journal_init(&shared, 256), 0);
    pthread_create(&writer, NULL, write_many, NULL);
    for (;;) {
        int done = __atomic_load_n(&writer_done, __ATOMIC_ACQUIRE);
        journal_read(&shared, since, out, 64, &page);
        if (page.lost_from != 0) {
            lost += page.lost_to - page.lost_from + 1;
            backwards += page.lost_from != since + 1;
        }
        for (size_t i = 0; i < page.n; i++) {
            torn += !consistent(&out[i]) || out[i].conn_id != out[i].seq * 3;
            backwards += out[i].seq <= since;
            since = out[i].seq;
        }
        got += page.n;
        if (page.n == 0 && page.lost_from == 0 && done)
            break;
        since = page.next;
    }
    pthread_join(writer, NULL);
    /* the records still in the ring when the writer stopped were read, never dropped */
    printf("    read %llu records, told of %llu lost, %llu dropped\n", (unsigned long long)got,
           (unsigned long long)lost, (unsigned long long)shared.dropped);
    CHECK_INT_EQ(torn, 0);
    CHECK_INT_EQ(backwards, 0);
    CHECK_INT_EQ(got + lost, LAPS);
    CHECK_INT_EQ(shared.dropped, lost);
    CHECK(got > 0);
    journal_free(&shared);
}

int main(void)
{
    CHECK_RUN(records_come_back_whole_and_in_order);
    CHECK_RUN(small_pages_neither_lose_nor_repeat);
    CHECK_RUN(the_ring_going_round_is_lost_and_dropped_never_silent);
    CHECK_RUN(a_since_past_the_newest_changes_nothing);
    CHECK_RUN(a_record_is_given_once_whoever_reads_it);
    CHECK_RUN(a_line_is_json_with_its_request_id_escaped);
    CHECK_RUN(a_csv_line_has_the_header_s_columns);
    CHECK_RUN(a_request_id_is_kept_without_the_spaces_around_it);
    CHECK_RUN(a_reader_racing_the_writer_gets_whole_records_or_is_told);
    return check_summary();
}
