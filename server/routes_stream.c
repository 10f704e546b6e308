/*
 * routes_stream.c - the streaming fixture routes over plain HTTP: GET /sse
 * (Server-Sent Events on a schedule, resumable with Last-Event-ID) and
 * GET /stream/:n (n JSON lines). Both are sent with chunked encoding (no
 * Content-Length: a stream's end is its last chunk), a piece at a time from
 * h2o's generator, the next only when h2o has written the last, like /bytes
 * and /drip; /sse waits for each event on a request timer. The bytes of an
 * event are sse.h's, so a client's event count, ids and timing can be
 * checked exactly.
 *
 * A client that leaves is noticed when it leaves, not at the next event: while
 * an HTTP/1 /sse waits, its socket is watched (h2o does not read an HTTP/1
 * connection while it answers it), and a stream that ends before its last
 * event or line, whatever the protocol, is counted as its client gone.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "head.h"
#include "knob.h"
#include "respond.h"
#include "rng.h"
#include "routes.h"
#include "sse.h"
#include "validate.h"

#define STREAM_MAX_LINES 1000000 /* /stream/:n */
#define STREAM_CHUNK 16384       /* /stream's lines go to h2o this many bytes at most at once */
#define STREAM_LINE_MAX 32       /* {"id":K,"of":N}\n at its longest */

/* One stream's state, the request's one allocation for it (from its pool). */
struct stream {
    h2o_generator_t generator; /* h2o calls its proceed for the next piece */
    notesd_req_t *r;
    uint64_t next, last; /* the next event or line to send, and the last one */
    uint64_t count;      /* /sse: the stream's count ("of"); /stream: n */
    uint64_t first;      /* /sse: the first event this response sends */
    uint64_t start_ns;   /* /sse: when the first event was due (the handler's start) */
    uint64_t due_ns;     /* /sse: when the next event is due */
    uint64_t delay_ns, jitter_ns;
    h2o_socket_t *watched; /* /sse over HTTP/1: its socket, while watched between events */
    void *h2o_data;        /* the watched socket's data (h2o's connection), given back after */
    uint8_t ended;         /* its last piece (or its HEAD, or an end of ours) went to h2o */
    char buf[];            /* what h2o is writing: one event, or a chunk of lines */
};

/* The request's state (r->state): its stream, made by stream_new. */
const route_state_t stream_state = {.request_size = sizeof(struct stream *)};

static struct stream **stream_of(notesd_req_t *r)
{
    return (struct stream **)r->state;
}

/* ---- clients that leave ----------------------------------------------------------------- */

static void on_client_readable(h2o_socket_t *sock, const char *err);

/* While /sse waits for its next event over HTTP/1, nothing reads its socket
 * (h2o reads an HTTP/1 connection only between requests), so a client that
 * leaves would be noticed only by the next event's write, up to delay_ms
 * later. Reading it meanwhile notices at once: the client's FIN or reset is
 * an error of the read. HTTP/2 reads all the time and needs none of this. */
static void watch_start(struct stream *s)
{
    h2o_req_t *req = s->r->req;
    if (req->version >= 0x200 || s->watched != NULL)
        return;
    h2o_socket_t *sock = request_socket(req);
    if (sock == NULL || h2o_socket_is_reading(sock))
        return;
    /* The read callback is handed the socket alone: while it is watched, its
     * data is the stream. Nothing of h2o's runs on it meanwhile (no read, and
     * no write: watching stops before anything goes to h2o), so h2o gets its
     * connection back before it could look. */
    s->h2o_data = sock->data;
    sock->data = s;
    s->watched = sock;
    h2o_socket_read_start(sock, on_client_readable);
}

/* Stops watching: before anything is handed to h2o, which reads the socket
 * again itself once the response is out, and when the request goes. */
static void watch_stop(struct stream *s)
{
    if (s->watched == NULL)
        return;
    h2o_socket_read_stop(s->watched);
    s->watched->data = s->h2o_data;
    s->watched = NULL;
}

/* The watched socket is readable: the client closed it or reset it (an
 * error of the read), or sent more (the next request, which h2o reads after
 * this response; watching stops, and the write of the next event tells).
 * request_client_gone reads the TCP state and counts how it went; a client
 * that left ends its stream now, its timer taken back. */
static void on_client_readable(h2o_socket_t *sock, const char *err)
{
    struct stream *s = sock->data;
    notesd_req_t *r = s->r;
    watch_stop(s);
    if (request_client_gone(r)) {
        request_timer_cancel(r);
        s->ended = 1;
        h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
    }
}

/* A stream's clean-up: its timer and its watch go; and a stream that ended
 * before its last event or line lost its client (an HTTP/2 stream reset or
 * its connection closed, a write that failed), which is counted as gone:
 * aborted, unless the TCP state said how already. Its status stays the 200
 * its headers carried. */
static void on_stream_dispose(notesd_req_t *r)
{
    struct stream *s = *stream_of(r);
    request_timer_cancel(r);
    watch_stop(s);
    if (!s->ended && r->gone == REQUEST_PRESENT && !r->half_closed)
        r->gone = REQUEST_GONE_ABORTED;
}

static struct stream *stream_new(notesd_req_t *r, size_t cap,
                                 void (*proceed)(h2o_generator_t *, h2o_req_t *))
{
    struct stream *s = h2o_mem_alloc_pool(&r->req->pool, sizeof(*s) + cap);
    memset(s, 0, sizeof(*s));
    s->r = r;
    s->generator.proceed = proceed;
    *stream_of(r) = s;
    r->on_dispose = on_stream_dispose;
    return s;
}

/* Starts a chunked 200 (no Content-Length). Returns 1 when the body is to
 * follow, 0 for HEAD, which gets the headers alone. */
static int stream_begin(notesd_req_t *r, struct stream *s, const char *content_type)
{
    h2o_req_t *req = r->req;
    respond_start(r, 200, content_type, SIZE_MAX);
    h2o_start_response(req, &s->generator);
    if (req_is_head(req)) {
        s->ended = 1;
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
        return 0;
    }
    return 1;
}

/* ---- /sse --------------------------------------------------------------------------------- */

static int64_t wall_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

/* Sends the next event when it is due, or arms the timer for it. Runs when
 * the stream starts, when h2o has written the previous event (proceed), and
 * when the timer fires; never while an event is in h2o's hands. */
static void sse_pump(notesd_req_t *r)
{
    struct stream *s = *stream_of(r);
    watch_stop(s);
    if (s->due_ns > stats_now_ns()) {
        if (request_timer_arm(r, s->due_ns, sse_pump) != 0) {
            s->ended = 1; /* no timer left: end it short, not the client's doing */
            h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
            return;
        }
        watch_start(s);
        return;
    }
    h2o_iovec_t buf = h2o_iovec_init(s->buf, sse_event(s->buf, s->next, s->count, wall_us()));
    STAT_ADD(r->loop->stats->sse_events, 1);
    s->next++;
    if (s->next <= s->last)
        s->due_ns = sse_due_ns(s->start_ns, s->due_ns, s->next - s->first, s->delay_ns,
                               s->jitter_ns, rng_uniform());
    s->ended = s->next > s->last;
    h2o_send(r->req, &buf, 1, s->ended ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void on_sse_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
    sse_pump(H2O_STRUCT_FROM_MEMBER(struct stream, generator, generator)->r);
}

/* GET /sse?count=C&delay_ms=D&jitter=J: events 1..C (1..100000, default 10),
 * the first at once, event k nominally (k - 1) * D ms later (0..60000,
 * default 100), each moved by up to J ms either way (0..60000, default 0; in
 * order, no drift). A client that reconnects with Last-Event-ID: N gets
 * N + 1..C, the first at once; 204 when nothing is left. */
int stream_sse(notesd_req_t *r)
{
    uint64_t count = 10, delay_ms = 100, jitter = 0, last_id = 0;
    if (knob_query(r, "count", 1, SSE_MAX_COUNT, &count) < 0 ||
        knob_query(r, "delay_ms", 0, REQUEST_WAIT_MAX_MS, &delay_ms) < 0 ||
        knob_query(r, "jitter", 0, REQUEST_WAIT_MAX_MS, &jitter) < 0)
        return 0;
    h2o_req_t *req = r->req;
    ssize_t h = h2o_find_header_by_str(&req->headers, H2O_STRLIT("last-event-id"), -1);
    if (h >= 0) {
        /* a whole number, however long: one at or past the count has nothing left */
        h2o_iovec_t v = req->headers.entries[h].value;
        v.len = head_trim((const char **)&v.base, v.len);
        switch (validate_whole_number(v.base, v.len, count, &last_id)) {
        case VALIDATE_NUMBER:
            break;
        case VALIDATE_ABOVE_MAX:
            last_id = count;
            break;
        default:
            respond_error(r, 400, "Last-Event-ID must be a whole number");
            return 0;
        }
    }
    if (last_id >= count) {
        /* nothing left: 204 tells an EventSource to stop reconnecting */
        respond(r, 204, CT_TEXT, "", 0);
        return 0;
    }
    struct stream *s = stream_new(r, SSE_EVENT_MAX, on_sse_proceed);
    s->count = s->last = count;
    s->first = s->next = last_id + 1;
    s->start_ns = s->due_ns = r->start_ns;
    s->delay_ns = delay_ms * 1000000;
    s->jitter_ns = jitter * 1000000;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
                   H2O_STRLIT("no-cache"));
    if (stream_begin(r, s, "text/event-stream; charset=utf-8"))
        sse_pump(r);
    return 0;
}

/* ---- /stream/:n --------------------------------------------------------------------------- */

/* Fills the buffer with as many whole lines as fit and hands them to h2o;
 * the last piece goes with the end of the stream. */
static void on_lines_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
    struct stream *s = H2O_STRUCT_FROM_MEMBER(struct stream, generator, generator);
    size_t len = 0;
    while (s->next <= s->last && len + STREAM_LINE_MAX <= STREAM_CHUNK) {
        len += (size_t)snprintf(s->buf + len, STREAM_LINE_MAX, "{\"id\":%llu,\"of\":%llu}\n",
                                (unsigned long long)s->next, (unsigned long long)s->count);
        s->next++;
    }
    h2o_iovec_t buf = h2o_iovec_init(s->buf, len);
    s->ended = s->next > s->last;
    h2o_send(req, &buf, len > 0 ? 1 : 0,
             s->ended ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

/* GET /stream/:n: n (0..1000000) lines {"id":K,"of":n}, K from 1, as fast as
 * the client reads them. */
int stream_lines(notesd_req_t *r)
{
    uint64_t n;
    if (knob_path(r, "n", 0, STREAM_MAX_LINES, &n) != 0)
        return 0;
    struct stream *s = stream_new(r, STREAM_CHUNK, on_lines_proceed);
    s->next = 1;
    s->last = s->count = n;
    if (stream_begin(r, s, "application/x-ndjson; charset=utf-8"))
        on_lines_proceed(&s->generator, r->req);
    return 0;
}
