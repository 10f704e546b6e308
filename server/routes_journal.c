/*
 * routes_journal.c - GET /journal on the metrics port: who may read the
 * request journal, and its pages, as NDJSON or CSV (docs/journal.md).
 *
 * The records are the journal's (journal.c: the rings, given or dropped);
 * this file decides who reads them, checks the reader's position (`since`,
 * `epoch`), and writes a page in 64 KiB pieces, each held against the metrics
 * port's budget (listen_metrics_hold): a page is cut short, never lost, when
 * readers that do not read hold that budget, so memory stays bounded whatever
 * they do. Journal-Next is where the next page starts, whatever cut this one.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "hex.h"
#include "journal.h"
#include "knob.h"
#include "respond.h"
#include "routes.h"

/* Records one page gives at most. */
#define JOURNAL_PAGE_MAX 5000
/* A page is written in pieces of this many bytes: room for this many records each. */
#define PIECE_RECORDS 64
#define PIECE_BYTES (PIECE_RECORDS * JOURNAL_LINE_MAX + 512) /* and CSV's header, a lost line */

enum journal_format { FORMAT_NDJSON, FORMAT_CSV };

/* 1 if the client is on this machine: 127.0.0.0/8, ::1, or 127/8 mapped into IPv6. */
static int peer_is_loopback(h2o_req_t *req)
{
    struct sockaddr_storage ss;
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (len == 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

/* 1 if the request carries `Authorization: Bearer <token>`; compared in a
 * time that does not depend on where the two differ. */
static int has_token(h2o_req_t *req, const char *token)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (i < 0)
        return 0;
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t len = strlen(token);
    if (v.len != 7 + len || !h2o_lcstris(v.base, 7, H2O_STRLIT("bearer ")))
        return 0;
    unsigned char diff = 0;
    for (size_t k = 0; k < len; k++)
        diff |= (unsigned char)(v.base[7 + k] ^ token[k]);
    return diff == 0;
}

/* Reads `format` (ndjson, the default, or csv) and `epoch` (16 hex digits,
 * which must be this process's); answers 400 or 409 and returns -1 when they
 * are not right. */
static int read_format_and_epoch(notesd_req_t *r, enum journal_format *format)
{
    h2o_req_t *req = r->req;
    const char *query = req->query_at != SIZE_MAX ? req->path.base + req->query_at + 1 : "";
    size_t qlen = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0;
    const char *v;
    size_t vlen;

    *format = FORMAT_NDJSON;
    if (validate_query_param(query, qlen, "format", &v, &vlen) > 0) {
        if (v != NULL && vlen == 3 && memcmp(v, "csv", 3) == 0)
            *format = FORMAT_CSV;
        else if (v == NULL || vlen != 6 || memcmp(v, "ndjson", 6) != 0) {
            respond_error(r, 400, "format must be ndjson or csv");
            return -1;
        }
    }
    if (validate_query_param(query, qlen, "epoch", &v, &vlen) > 0) {
        uint64_t epoch;
        if (v == NULL || vlen != 16 || hex_read(v, 16, HEX_ANY_CASE, &epoch) != 0) {
            respond_error(r, 400, "epoch must be 16 hex digits, as Journal-Epoch gives it");
            return -1;
        }
        if (epoch != r->settings->journal_epoch) {
            respond_error(r, 409,
                          "epoch is not this journal's: notesd restarted since that page, and "
                          "its records are gone (start again at since=0)");
            return -1;
        }
    }
    return 0;
}

static void add_header(h2o_req_t *req, const char *name, size_t len, const char *fmt,
                       unsigned long long value)
{
    char *text = h2o_mem_alloc_pool(&req->pool, 24);
    int n = snprintf(text, 24, fmt, value);
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, len, 0, NULL, text, (size_t)n);
}

/* One piece of a page, held against the port's budget; NULL when the budget
 * has no room for it (the page ends before it). */
static char *new_piece(notesd_req_t *r)
{
    if (listen_metrics_hold(r->loop->listen, &r->req->pool, PIECE_BYTES) != 0)
        return NULL;
    return h2o_mem_alloc_pool(&r->req->pool, PIECE_BYTES);
}

/* GET /journal?loop=L&since=SEQ&limit=N&format=F&epoch=E: loop L's records
 * after SEQ, oldest first (docs/journal.md). */
int journal_route(notesd_req_t *r)
{
    h2o_req_t *req = r->req;
    const request_settings_t *s = r->settings;
    uint64_t loop = 0, since = 0, limit = 1000;
    enum journal_format format;

    if (s->loops[0]->journal == NULL) {
        respond_error(r, 404, "the journal is off: start notesd with JOURNAL=N");
        return 0;
    }
    if (!peer_is_loopback(req) && (s->journal_token == NULL || !has_token(req, s->journal_token))) {
        respond_error(r, 403,
                      s->journal_token == NULL
                          ? "the journal is read from this machine only (JOURNAL_TOKEN lets "
                            "others read it with Authorization: Bearer)"
                          : "the journal needs Authorization: Bearer and JOURNAL_TOKEN's value");
        return 0;
    }
    if (knob_query(r, "loop", 0, (uint64_t)s->nloops - 1, &loop) < 0 ||
        knob_query(r, "since", 0, UINT64_MAX, &since) < 0 ||
        knob_query(r, "limit", 1, JOURNAL_PAGE_MAX, &limit) < 0 ||
        read_format_and_epoch(r, &format) < 0)
        return 0;
    journal_t *j = s->loops[loop]->journal;
    uint64_t newest = journal_newest(j);
    if (since > newest) {
        /* never given: a position from an earlier process, or a wrong one */
        char msg[192];
        snprintf(msg, sizeof(msg),
                 "since %llu is past loop %llu's newest record (%llu): notesd restarted since "
                 "that page (see Journal-Epoch), or since is wrong",
                 (unsigned long long)since, (unsigned long long)loop, (unsigned long long)newest);
        respond_error(r, 409, msg);
        return 0;
    }

    /* Records are read PIECE_RECORDS at a time and each line written at once
     * into the current piece, so a record is never held twice. A gap (records
     * overwritten before this read) is told first, as one range; one found
     * after records were given ends the page, and the next page tells it. */
    h2o_iovec_t *pieces =
        h2o_mem_alloc_pool(&req->pool, sizeof(*pieces) * (limit / PIECE_RECORDS + 2));
    size_t npieces = 0, given = 0, total = 0;
    uint64_t lost_from = 0, lost_to = 0;
    int gaps = 0, lost_told = 0;
    char *piece = NULL, *p = NULL;
    journal_record_t recs[PIECE_RECORDS];
    journal_page_t page;
    for (;;) {
        size_t want = limit - given < PIECE_RECORDS ? limit - given : PIECE_RECORDS;
        if (want == 0)
            break;
        if (piece == NULL || (size_t)(p - piece) + want * JOURNAL_LINE_MAX > PIECE_BYTES) {
            if (p > piece)
                pieces[npieces++] = h2o_iovec_init(piece, (size_t)(p - piece));
            if ((piece = p = new_piece(r)) == NULL)
                break; /* the port's budget is spent: the page ends here */
            if (npieces == 0 && format == FORMAT_CSV)
                p += sprintf(p, "%s", JOURNAL_CSV_HEADER);
        }
        journal_read(j, since, recs, want, &page);
        if (page.lost_from != 0) {
            if (given > 0 || ++gaps > 4)
                break; /* the next page tells it */
            lost_from = lost_from != 0 ? lost_from : page.lost_from;
            lost_to = page.lost_to;
            since = page.next;
            continue;
        }
        if (lost_from != 0 && !lost_told && format == FORMAT_NDJSON)
            p += sprintf(p, "{\"lost\":%llu,\"from\":%llu,\"to\":%llu,\"loop\":%llu}\n",
                         (unsigned long long)(lost_to - lost_from + 1),
                         (unsigned long long)lost_from, (unsigned long long)lost_to,
                         (unsigned long long)loop);
        lost_told = 1;
        for (size_t i = 0; i < page.n; i++) {
            const char *method = recs[i].method < REQUEST_NUM_METHODS
                                     ? request_method_labels[recs[i].method]
                                     : "other";
            const char *route =
                recs[i].route < ROUTE__COUNT ? routes[recs[i].route].label : "other";
            p += format == FORMAT_CSV ? journal_format_csv(&recs[i], method, route, p)
                                      : journal_format(&recs[i], method, route, p);
        }
        given += page.n;
        since = page.next;
        if (page.n == 0)
            break; /* nothing newer */
    }
    if (piece != NULL && p > piece)
        pieces[npieces++] = h2o_iovec_init(piece, (size_t)(p - piece));
    if (npieces == 0 && piece == NULL) {
        respond_unavailable(r, "the metrics port holds its most of unsent pages (16 MiB); "
                               "retry when readers have taken theirs");
        return 0;
    }
    for (size_t i = 0; i < npieces; i++)
        total += pieces[i].len;
    add_header(req, H2O_STRLIT("journal-next"), "%llu", since);
    add_header(req, H2O_STRLIT("journal-newest"), "%llu", newest);
    add_header(req, H2O_STRLIT("journal-loops"), "%llu", (unsigned long long)s->nloops);
    add_header(req, H2O_STRLIT("journal-epoch"), "%016llx", s->journal_epoch);
    if (lost_from != 0) {
        add_header(req, H2O_STRLIT("journal-lost-from"), "%llu", lost_from);
        add_header(req, H2O_STRLIT("journal-lost-to"), "%llu", lost_to);
    }
    respond_start(r, 200, format == FORMAT_CSV ? "text/csv; charset=utf-8" : "application/x-ndjson",
                  total);
    static h2o_generator_t generator = {NULL, NULL};
    h2o_start_response(req, &generator);
    h2o_send(req, pieces, req_is_head(req) ? 0 : npieces, H2O_SEND_STATE_FINAL);
    return 0;
}
