/*
 * pgconn.c - one libpq connection's I/O on the h2o loop (see pgconn.h).
 *
 * The loop watches a dup() of libpq's socket, so that h2o_socket_close()
 * closes only our copy and libpq stays the one owner of its descriptor.
 * libpq may replace its socket while connecting (multi-host, SSL or GSS
 * fallback) and the new one usually gets the same fd number; we compare the
 * inode too, or the loop would keep watching a dead socket and spin.
 *
 * Server messages never reach stderr raw: a notice receiver logs each one as
 * a debug line, and keeps the primary text of a FATAL one, because a server
 * that ends an idle session sends its reason as a notice just before closing.
 * Every failure is reported as one line (libpq's messages span several).
 *
 * Results are matched to commands by the NULL that ends each of libpq's
 * queue entries: one per command, two when a prepare travels with it. In
 * pipeline mode a finished command's answer is held until its segment's
 * PGRES_PIPELINE_SYNC, which says the implicit transaction ended: then the
 * segment's answers are handed out in order (end_segment), each done or
 * undone. Holding costs nothing in time: the server flushes a segment's
 * results at its sync, so they arrive together anyway.
 *
 * With named prepared statements, a statement is prepared on its first use on
 * the connection: the Parse travels with that first query, under the same
 * sync, so it costs no round trip, and a statement that is never used is never
 * prepared. Its result is the command's first; when it fails (a missing
 * table, say) the server skips the query, the prepare's error is the
 * command's answer, and the statement is prepared again on its next use.
 */
#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "pgconn.h"

enum pgconn_state {
    PGCONN_CONNECTING, /* PQconnectPoll until CONNECTION_OK */
    PGCONN_OPEN,       /* commands may be sent; `pending` of them are in flight */
    PGCONN_FAILED,     /* on_failed was called; waiting for pgconn_close */
    PGCONN_CLOSED,     /* pgconn_close was called: the memory goes on the next turn */
};

struct pgconn {
    unsigned id; /* the owner's id, for log lines: "pg#3" */
    enum pgconn_state state;
    PGconn *pg;
    h2o_loop_t *loop;
    h2o_socket_t *sock; /* watches a dup of libpq's socket */
    int pg_fd;          /* libpq's descriptor that `sock` mirrors */
    ino_t pg_ino;       /* ...and its inode, since the number alone can repeat */
    PGresult *first;    /* the answer so far of the command being read (keep_result) */
    unsigned nresults;  /* results of the command being read so far */
    int first_failed;   /* the first of them was an error (a prepare's, if it had one) */
    unsigned entries;   /* libpq queue entries of that command ended so far (its NULLs) */
    unsigned pending;   /* commands sent and not yet answered */
    uint64_t commands;  /* commands sent so far, numbered from 0 in the order sent */
    uint64_t read;      /* commands whose results are all read; the one being read is `read` */
    unsigned unsynced;  /* pipeline mode: commands sent since the last sync */
    unsigned segments;  /* pipeline mode: segments synced whose sync has not come back */
    unsigned nheld;     /* pipeline mode: answers read and held until their segment's sync */
    int failed_at;      /* index in `held` of the segment's first failed command, or -1 */
    uint32_t prepared;  /* bit i: statement i is prepared here, or its prepare is in flight */
    unsigned npreparing;
    struct preparing {    /* the prepares in flight: at most one per statement */
        uint64_t command; /* the number of the command it travels in */
        unsigned statement;
    } preparing[PGCONN_STATEMENTS_MAX];
    const pgconn_params_t *params;
    const pgconn_callbacks_t *cb;
    void *data;
    timers_t *timers;      /* the loop's */
    timer_entry_t later;   /* on the next turn: CLOSED, the free; otherwise a failure
                              found while starting, reported */
    turn_entry_t sync_due; /* pipeline mode: the open segment's sync, at the turn's end */
    char fatal[160];       /* primary text of the last FATAL/PANIC notice, or "" */
    char why[512];         /* the last failure, on one line */
    PGresult *held[];      /* pipeline mode: params->depth of them; nheld in use */
};

static void on_readable(h2o_socket_t *sock, const char *err);
static void on_writable(h2o_socket_t *sock, const char *err);
static void on_sync_due(turn_entry_t *entry);

/* Copies `msg` to `dst` on one line: every run of white space (libpq's
 * messages hold newlines and tabs) becomes one space, and the ends are trimmed. */
static void one_line(char *dst, size_t cap, const char *msg)
{
    size_t n = 0;
    int space = 0;

    for (const char *p = msg; *p != '\0' && n + 1 < cap; p++) {
        if (isspace((unsigned char)*p)) {
            space = n > 0;
            continue;
        }
        if (space && n + 2 < cap)
            dst[n++] = ' ';
        space = 0;
        dst[n++] = *p;
    }
    dst[n] = '\0';
}

static void fail(pgconn_t *conn, const char *why)
{
    conn->state = PGCONN_FAILED;
    if (conn->sock != NULL)
        h2o_socket_read_stop(conn->sock);
    if (why != conn->why)
        one_line(conn->why, sizeof(conn->why), why);
    conn->cb->on_failed(conn, conn->why, conn->data);
}

/* 1 if `res` reports an error that ends the session (severity FATAL or PANIC). */
static int is_fatal(const PGresult *res)
{
    const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    return PQresultStatus(res) == PGRES_FATAL_ERROR && severity != NULL &&
           (strcmp(severity, "FATAL") == 0 || strcmp(severity, "PANIC") == 0);
}

/* Keeps the primary text of a result that ends the session, for the failure line. */
static void keep_fatal(pgconn_t *conn, const PGresult *res)
{
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    one_line(conn->fatal, sizeof(conn->fatal),
             primary != NULL ? primary : PQresultErrorMessage(res));
}

/* In pipeline mode, after the socket broke: the results libpq parsed from the
 * last bytes the server sent, looked through for the FATAL that says why it
 * ended the session. Without pipeline mode libpq copies that error into its
 * own message (and asking a broken connection for results would add "invalid
 * socket" to it); in pipeline mode it stays a result of the command in flight,
 * whose sync never comes, and would be lost. Bounded: a broken connection ends
 * its results. */
static void find_fatal_result(pgconn_t *conn)
{
    for (int i = 0; i < 16 && conn->fatal[0] == '\0' && !PQisBusy(conn->pg); i++) {
        PGresult *res = PQgetResult(conn->pg);
        if (res == NULL)
            break;
        if (is_fatal(res))
            keep_fatal(conn, res);
        PQclear(res);
    }
    if (conn->fatal[0] == '\0' && conn->first != NULL && is_fatal(conn->first))
        keep_fatal(conn, conn->first);
}

/* Fails with libpq's message, led by the server's own reason when a FATAL
 * notice or result said why it is closing the session ("terminating connection
 * due to administrator command"); libpq itself only says that the server
 * closed it. */
static void fail_with_libpq_error(pgconn_t *conn)
{
    char msg[300]; /* with "FATAL: " and conn->fatal, fits conn->why */
    if (conn->state == PGCONN_OPEN && conn->params->pipeline)
        find_fatal_result(conn);
    one_line(msg, sizeof(msg), PQerrorMessage(conn->pg));
    if (conn->fatal[0] != '\0' && strstr(msg, conn->fatal) == NULL)
        snprintf(conn->why, sizeof(conn->why), "FATAL: %s; %s", conn->fatal,
                 msg[0] != '\0' ? msg : "connection closed");
    else
        snprintf(conn->why, sizeof(conn->why), "%s", msg[0] != '\0' ? msg : "connection failed");
    fail(conn, conn->why);
}

/* libpq's notice receiver: one debug line per server message; the primary text
 * of a FATAL or PANIC one is kept for the failure that follows it. */
static void on_notice(void *arg, const PGresult *res)
{
    pgconn_t *conn = arg;
    const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    char line[400];

    if (severity == NULL)
        severity = "NOTICE";
    if (primary == NULL)
        primary = PQresultErrorMessage(res);
    one_line(line, sizeof(line), primary);
    if (strcmp(severity, "FATAL") == 0 || strcmp(severity, "PANIC") == 0)
        one_line(conn->fatal, sizeof(conn->fatal), primary);
    log_debug("pg#%u server %s: %s", conn->id, severity, line);
}

/* Makes `sock` watch libpq's current socket; returns -1 if there is none. */
static int sync_socket(pgconn_t *conn)
{
    int fd = PQsocket(conn->pg);
    struct stat st;

    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    if (conn->sock != NULL && fd == conn->pg_fd && st.st_ino == conn->pg_ino)
        return 0;
    if (conn->sock != NULL)
        h2o_socket_close(conn->sock);
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) {
        conn->sock = NULL;
        return -1;
    }
    conn->sock = h2o_evloop_socket_create(conn->loop, dup_fd, H2O_SOCKET_FLAG_DONT_READ);
    conn->sock->data = conn;
    conn->pg_fd = fd;
    conn->pg_ino = st.st_ino;
    return 0;
}

/* Flushes libpq's output buffer; waits for writability if some is left.
 * Returns 0, or -1 when the connection is broken (no callback). */
static int try_flush(pgconn_t *conn)
{
    switch (PQflush(conn->pg)) {
    case 0:
        return 0;
    case 1:
        /* Keep reading too: the server may be blocked sending us notices. */
        if (!h2o_socket_is_writing(conn->sock))
            h2o_socket_notify_write(conn->sock, on_writable);
        return 0;
    default:
        return -1;
    }
}

/* try_flush, reporting a broken connection through on_failed. */
static int flush(pgconn_t *conn)
{
    if (try_flush(conn) == 0)
        return 0;
    fail_with_libpq_error(conn);
    return -1;
}

static void poll_connect(pgconn_t *conn)
{
    PostgresPollingStatusType status = PQconnectPoll(conn->pg);

    if (status == PGRES_POLLING_FAILED) {
        fail_with_libpq_error(conn);
        return;
    }
    if (sync_socket(conn) != 0) {
        fail(conn, "libpq has no socket");
        return;
    }
    switch (status) {
    case PGRES_POLLING_READING:
        h2o_socket_read_start(conn->sock, on_readable);
        break;
    case PGRES_POLLING_WRITING:
        if (!h2o_socket_is_writing(conn->sock))
            h2o_socket_notify_write(conn->sock, on_writable);
        break;
    case PGRES_POLLING_OK:
        if (PQsetnonblocking(conn->pg, 1) != 0 ||
            (conn->params->pipeline && PQenterPipelineMode(conn->pg) != 1)) {
            fail_with_libpq_error(conn);
            return;
        }
        h2o_socket_read_start(conn->sock, on_readable);
        conn->state = PGCONN_OPEN;
        conn->cb->on_ready(conn, conn->data);
        return;
    default:
        break;
    }
}

static int result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Keeps a command's answer: its first error, or else its last result (a
 * prepare's COMMAND_OK, then the query's rows: the rows); frees the rest. */
static void keep_result(pgconn_t *conn, PGresult *res)
{
    if (conn->nresults++ == 0)
        conn->first_failed = !result_ok(res);
    if (conn->first == NULL) {
        conn->first = res;
    } else if (result_ok(conn->first)) {
        PQclear(conn->first);
        conn->first = res;
    } else {
        PQclear(res); /* after a failed prepare: the PGRES_PIPELINE_ABORTED of its query */
    }
}

/* libpq queue entries of the command being read: two when a prepare travels with it. */
static unsigned entries_of(const pgconn_t *conn)
{
    for (unsigned i = 0; i < conn->npreparing; i++)
        if (conn->preparing[i].command == conn->read)
            return 2;
    return 1;
}

/* The command being read is finishing: if it carried a prepare and that
 * failed or was skipped (its result came first), the statement is not
 * prepared here after all. A prepare that ran stays even when its segment
 * fails: prepared statements are not transactional. */
static void settle_prepare(pgconn_t *conn)
{
    for (unsigned i = 0; i < conn->npreparing; i++) {
        if (conn->preparing[i].command != conn->read)
            continue;
        if (conn->first_failed)
            conn->prepared &= ~(UINT32_C(1) << conn->preparing[i].statement);
        conn->preparing[i] = conn->preparing[--conn->npreparing];
        return;
    }
}

/* Takes the answer of the command whose results are all read; the next one
 * is read from now on. */
static PGresult *take_answer(pgconn_t *conn)
{
    PGresult *answer = conn->first;
    if (conn->npreparing > 0)
        settle_prepare(conn);
    conn->first = NULL;
    conn->nresults = 0;
    conn->entries = 0;
    conn->read++;
    return answer;
}

/* A failure of the segment's shared transaction rather than of the statement
 * (SQLSTATE class 40: a deadlock or a serialization failure), which sharing
 * it with other statements can cause and running alone may not meet. */
static int transaction_failed(const PGresult *res)
{
    const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    return sqlstate != NULL && sqlstate[0] == '4' && sqlstate[1] == '0';
}

/* Pipeline mode: a command's results are all read; its answer waits for the
 * segment's sync. The first answer that is not a success failed the segment
 * (a skip, PGRES_PIPELINE_ABORTED, only follows an error, so it is never
 * first unless the server says nothing of why). */
static void hold_answer(pgconn_t *conn)
{
    PGresult *answer = take_answer(conn);
    assert(conn->nheld < conn->params->depth);
    if (answer == NULL) {
        fail(conn, "a command ended without a result");
        return;
    }
    if (conn->failed_at < 0 && !result_ok(answer))
        conn->failed_at = (int)conn->nheld;
    conn->held[conn->nheld++] = answer;
}

/* Pipeline mode: the segment's sync came back, so its implicit transaction
 * ended: committed, or rolled back by its failed command. Hands out its
 * answers, oldest first: the failed command's error is its answer (unless
 * the shared transaction itself failed and it had company: then it goes
 * again too), and every other command of a failed segment is undone. A
 * callback may send (later commands join a new segment) or close the
 * connection: then the answers not handed out are freed here. */
static void end_segment(pgconn_t *conn)
{
    unsigned n = conn->nheld;
    int failed = conn->failed_at;

    conn->nheld = 0;
    conn->failed_at = -1;
    for (unsigned i = 0; i < n && conn->state == PGCONN_OPEN; i++) {
        PGresult *res = conn->held[i];
        conn->held[i] = NULL;
        enum pgconn_outcome outcome = PGCONN_DONE;
        if (failed >= 0 && ((int)i != failed || PQresultStatus(res) == PGRES_PIPELINE_ABORTED ||
                            (n > 1 && transaction_failed(res))))
            outcome = PGCONN_UNDONE;
        assert(conn->pending > 0);
        conn->pending--;
        conn->cb->on_result(conn, outcome == PGCONN_DONE ? res : NULL, outcome, conn->data);
        PQclear(res);
    }
    if (conn->state != PGCONN_OPEN) /* closed in a callback: the answers not handed out */
        for (unsigned i = 0; i < n; i++)
            if (conn->held[i] != NULL) {
                PQclear(conn->held[i]);
                conn->held[i] = NULL;
            }
}

/* Without pipeline mode: the command in flight is answered: hands its answer
 * to the owner, or fails the connection (the server ending the session). */
static void finish_command(pgconn_t *conn)
{
    PGresult *first = take_answer(conn);

    assert(conn->pending > 0);
    conn->pending--;
    if (first == NULL) {
        /* A command always yields a result before its end; a server breaking
         * the protocol is a broken connection. */
        fail(conn, "a command ended without a result");
        return;
    }
    if (is_fatal(first)) {
        /* The server ends the session (an administrator's terminate, a
         * shutdown): the command did not run, and the connection is gone. */
        keep_fatal(conn, first);
        snprintf(conn->why, sizeof(conn->why), "FATAL: %s", conn->fatal);
        PQclear(first);
        fail(conn, conn->why);
        return;
    }
    conn->cb->on_result(conn, first, PGCONN_DONE, conn->data);
    PQclear(first);
}

/* Reads what the server sent and finishes every command whose last result has
 * arrived, oldest first. The owner may send or close from on_result; after a
 * close the loop stops, and the memory lasts until the loop's next turn. */
static void read_results(pgconn_t *conn)
{
    if (!PQconsumeInput(conn->pg)) {
        /* PQconsumeInput only reads; parsing what did arrive (PQisBusy does)
         * hands the server's last words, such as the FATAL notice of an
         * administrator's terminate, to on_notice before we report. */
        PQisBusy(conn->pg);
        fail_with_libpq_error(conn);
        return;
    }
    if (conn->pending == 0) {
        /* Nothing in flight: a notice (parsed now, by PQisBusy), or the
         * server going away. */
        PQisBusy(conn->pg);
        if (PQstatus(conn->pg) == CONNECTION_BAD)
            fail_with_libpq_error(conn);
        return;
    }
    if (flush(conn) != 0)
        return;
    int fresh = 1; /* no result of the current queue entry yet: a NULL now means "no more" */
    /* A callback may close the connection: the loop stops at once (its memory
     * lasts until the next turn). */
    while (conn->pending > 0 && conn->state == PGCONN_OPEN && !PQisBusy(conn->pg)) {
        PGresult *res = PQgetResult(conn->pg);
        if (res == NULL) {
            if (!conn->params->pipeline) {
                finish_command(conn); /* NULL ends the command */
                continue;
            }
            if (fresh)
                break; /* libpq has nothing more for now */
            /* The end of one queue entry's results: a prepare's, or the command's. */
            fresh = 1;
            if (++conn->entries == entries_of(conn))
                hold_answer(conn);
            continue;
        }
        fresh = 0;
        if (conn->params->pipeline && is_fatal(res)) {
            /* The session ends; the segment's sync will never come. */
            keep_fatal(conn, res);
            PQclear(res);
            snprintf(conn->why, sizeof(conn->why), "FATAL: %s", conn->fatal);
            fail(conn, conn->why);
            break;
        }
        if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            fresh = 1; /* no NULL follows a sync */
            assert(conn->segments > 0);
            conn->segments--;
            end_segment(conn);
            /* A segment held open behind this one goes at the turn's end. */
            if (conn->state == PGCONN_OPEN && conn->unsynced > 0)
                timers_after_turn(conn->timers, &conn->sync_due);
            continue;
        }
        keep_result(conn, res);
    }
}

static void on_readable(h2o_socket_t *sock, const char *err)
{
    pgconn_t *conn = sock->data;

    if (conn->state == PGCONN_CONNECTING)
        poll_connect(conn);
    else if (conn->state == PGCONN_OPEN)
        read_results(conn);
}

static void on_writable(h2o_socket_t *sock, const char *err)
{
    pgconn_t *conn = sock->data;

    switch (conn->state) {
    case PGCONN_CONNECTING:
        poll_connect(conn);
        break;
    case PGCONN_OPEN:
        flush(conn);
        break;
    default:
        break;
    }
}

static void on_later(timer_entry_t *entry)
{
    pgconn_t *conn = H2O_STRUCT_FROM_MEMBER(pgconn_t, later, entry);
    if (conn->state == PGCONN_CLOSED)
        free(conn);
    else
        fail_with_libpq_error(conn);
}

pgconn_t *pgconn_start(h2o_loop_t *loop, timers_t *timers, unsigned id,
                       const pgconn_params_t *params, const pgconn_callbacks_t *cb, void *data)
{
    size_t held = params->pipeline ? params->depth : 0;
    assert(!params->pipeline || params->depth >= 1);
    pgconn_t *conn = calloc(1, sizeof(*conn) + held * sizeof(conn->held[0]));
    if (conn == NULL)
        abort();
    conn->failed_at = -1;
    conn->id = id;
    conn->state = PGCONN_CONNECTING;
    conn->loop = loop;
    conn->timers = timers;
    conn->pg_fd = -1;
    conn->params = params;
    conn->cb = cb;
    conn->data = data;
    conn->later.cb = on_later;
    conn->sync_due.cb = on_sync_due;

    conn->pg = PQconnectStartParams(params->keywords, params->values, 1);
    if (conn->pg == NULL)
        abort(); /* out of memory: see the policy in main.c */
    /* Before anything can arrive: the default receiver prints to stderr. */
    PQsetNoticeReceiver(conn->pg, on_notice, conn);
    if (PQstatus(conn->pg) == CONNECTION_BAD || sync_socket(conn) != 0) {
        /* Report later, so the caller never sees a callback before we return. */
        timers_defer(timers, &conn->later);
        return conn;
    }
    /* The first PQconnectPoll is due once the socket is writable (libpq docs). */
    h2o_socket_notify_write(conn->sock, on_writable);
    return conn;
}

/* Pipeline mode: ends the open segment with a sync point and writes it all,
 * one write for the segment (libpq 15's PQpipelineSync flushes; libpq 17
 * added a sync that does not). Returns 0, or -1 when the connection broke
 * (on_failed was called). */
static int sync_segment(pgconn_t *conn)
{
    unsigned n = conn->unsynced;
    if (conn->sync_due.queued)
        timers_cancel_turn(conn->timers, &conn->sync_due);
    if (n == 0)
        return 0;
    if (PQpipelineSync(conn->pg) != 1) {
        fail_with_libpq_error(conn); /* the owner may close conn in on_failed */
        return -1;
    }
    conn->unsynced = 0;
    conn->segments++;
    if (flush(conn) != 0)
        return -1;
    conn->cb->on_sent(conn, n, conn->data);
    return 0;
}

/* The end of the turn that opened the segment: every command the turn gave
 * the connection is in, and the segment goes out, unless the one before it is
 * still out and there is room for more: then it stays open and goes when that
 * one's sync comes back (read_results), as pgbench sends its next pipeline
 * once the last one is answered. The server would run it only after the one
 * before anyway; waiting for that makes the batches as large as the load. */
static void on_sync_due(turn_entry_t *entry)
{
    pgconn_t *conn = H2O_STRUCT_FROM_MEMBER(pgconn_t, sync_due, entry);
    if (conn->state != PGCONN_OPEN || (conn->segments > 0 && conn->pending < conn->params->depth))
        return;
    sync_segment(conn); /* a failure went to on_failed */
}

int pgconn_send(pgconn_t *conn, unsigned statement, const char *const *values,
                enum pgconn_segment segment)
{
    const pgconn_params_t *p = conn->params;
    const pgconn_statement_t *st = &p->statements[statement];
    uint32_t bit = UINT32_C(1) << statement;
    int ok = 1;

    assert(conn->state == PGCONN_OPEN);
    assert(p->pipeline ? conn->pending < p->depth : conn->pending == 0);
    assert(statement < p->nstatements);
    if (p->pipeline && segment == PGCONN_ALONE && sync_segment(conn) != 0)
        return -1;
    if (!p->prepared) {
        ok = PQsendQueryParams(conn->pg, st->sql, st->nparams, NULL, values, NULL, NULL, 0);
    } else {
        if ((conn->prepared & bit) == 0) {
            /* Its first use here: the prepare goes first, in the query's segment. */
            ok = PQsendPrepare(conn->pg, st->name, st->sql, st->nparams, NULL);
            conn->prepared |= bit;
            conn->preparing[conn->npreparing++] =
                (struct preparing){.command = conn->commands, .statement = statement};
        }
        ok = ok && PQsendQueryPrepared(conn->pg, st->name, st->nparams, values, NULL, NULL, 0);
    }
    if (!ok) {
        fail_with_libpq_error(conn); /* the owner may close conn in on_failed */
        return -1;
    }
    conn->commands++;
    conn->pending++;
    if (!p->pipeline) {
        if (flush(conn) != 0)
            return -1;
        conn->cb->on_sent(conn, 1, conn->data);
        return 0;
    }
    conn->unsynced++;
    if (segment == PGCONN_ALONE || p->depth == 1)
        return sync_segment(conn);
    /* In libpq's buffer until the turn's end (libpq sends on its own only past 64 KB). */
    timers_after_turn(conn->timers, &conn->sync_due);
    return 0;
}

unsigned pgconn_in_flight(const pgconn_t *conn)
{
    return conn->pending;
}

/* Ends the session and lets go of libpq and the socket; the struct stays. */
static void finish(pgconn_t *conn)
{
    /* Order matters: stop watching our dup before libpq closes the original. */
    if (conn->sock != NULL) {
        h2o_socket_read_stop(conn->sock);
        h2o_socket_close(conn->sock);
        conn->sock = NULL;
    }
    if (conn->first != NULL) {
        PQclear(conn->first);
        conn->first = NULL;
    }
    for (unsigned i = 0; i < conn->nheld; i++) {
        PQclear(conn->held[i]);
        conn->held[i] = NULL;
    }
    conn->nheld = 0;
    PQfinish(conn->pg); /* the server's session ends now, not a turn later */
    conn->pg = NULL;
}

void pgconn_close(pgconn_t *conn)
{
    assert(conn->state != PGCONN_CLOSED);
    conn->state = PGCONN_CLOSED;
    finish(conn);
    /* The memory goes on the next turn: a callback that closed the connection
     * returns through pgconn's code, which reads `state` on its way out. A
     * failure waiting to be reported is not reported: the free takes its place. */
    timers_unlink(conn->timers, &conn->later);
    timers_cancel_turn(conn->timers, &conn->sync_due);
    timers_defer(conn->timers, &conn->later);
}
