/*
 * test_ws_progress.c - unit tests of server/ws_progress.c: the rule, case by
 * case, and real TCP connections on the loopback: a client that reads is
 * seen, one whose window is shut and stays shut is not, however often it is
 * looked at, and a socket that is not TCP shows nothing.
 *
 * The connections' server end is filled until the kernel takes no more, as
 * ws.c's socket is when its queue fills; what the client then does is all
 * that differs between them. The case a connection cannot be made to show on
 * demand, a window the client reopened that our kernel has not used yet (it
 * waits for its zero-window probe), is one of the rule's cases.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/tcp.h>
#include "check.h"
#include "ws_progress.h"

#define DEADLINE_MS 5000

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A connected pair on 127.0.0.1, on a port the kernel picks: *server is the
 * accepted end (non-blocking, set up as ws.c sets up its sockets), *client
 * the other, non-blocking too. */
static void tcp_pair(int *server, int *client)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &len) != 0)
        abort();
    *client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (*client < 0 ||
        (connect(*client, (struct sockaddr *)&addr, sizeof(addr)) != 0 && errno != EINPROGRESS))
        abort();
    *server = accept(lfd, NULL, NULL);
    if (*server < 0 || fcntl(*server, F_SETFL, O_NONBLOCK) != 0)
        abort();
    close(lfd);
    ws_progress_start(*server, 16384);
}

/* Writes until the kernel takes no more; returns the bytes it took. */
static size_t fill(int fd)
{
    static char buf[65536];
    size_t total = 0;
    ssize_t n;
    while ((n = write(fd, buf, sizeof(buf))) > 0)
        total += (size_t)n;
    return total;
}

/* Reads what the client's kernel holds; returns the bytes read. */
static size_t drain(int fd)
{
    static char buf[65536];
    size_t total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        total += (size_t)n;
    return total;
}

/* The window the client advertises to the server, and what is in flight. */
static void window(int server, uint32_t *wnd, uint32_t *unacked)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(server, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        abort();
    *wnd = ti.tcpi_snd_wnd;
    *unacked = ti.tcpi_unacked;
}

/* Fills the server's end until the client's window is shut and nothing is in
 * flight: the client's receive buffer is full and the server's kernel holds
 * the rest. Returns 0 if that did not happen within DEADLINE_MS. */
static int fill_until_shut(int server)
{
    for (int waited = 0; waited < DEADLINE_MS; waited += 10) {
        uint32_t wnd, unacked;
        fill(server);
        window(server, &wnd, &unacked);
        if (wnd == 0 && unacked == 0)
            return 1;
        sleep_ms(10); /* our kernel fills a small window at its next probe */
    }
    return 0;
}

static void the_rule_sees_the_window_move_or_room_unused(void)
{
    const ws_progress_t shut = {.acked = 1000, .window = 0, .in_flight = 0};
    ws_progress_t now;

    now = shut;
    CHECK_INT_EQ(ws_progress_shown(&shut, &now), 0); /* nothing moved */
    now.acked = 1001;
    CHECK_INT_EQ(ws_progress_shown(&shut, &now), 1); /* more of ours went in */
    now = shut, now.window = 4096;
    CHECK_INT_EQ(ws_progress_shown(&shut, &now), 1); /* reopened, not used yet */
    now.in_flight = 3;
    CHECK_INT_EQ(ws_progress_shown(&shut, &now), 1); /* reopened, being used */
    /* the same open window, seen again while segments are in flight: what a
     * client that vanished with its window open looks like for ever */
    const ws_progress_t flying = {.acked = 1000, .window = 4096, .in_flight = 3};
    now = flying;
    CHECK_INT_EQ(ws_progress_shown(&flying, &now), 0);
    now.window = 2048; /* a smaller one is not reading either */
    CHECK_INT_EQ(ws_progress_shown(&flying, &now), 0);
    now.in_flight = 0; /* but room the client has and ours has not filled is */
    CHECK_INT_EQ(ws_progress_shown(&flying, &now), 1);
    /* ours filled the room the client had offered, and it read nothing: the
     * right edge stayed where it was */
    const ws_progress_t room = {.acked = 1000, .window = 4096, .in_flight = 0};
    now = (ws_progress_t){.acked = 5096, .window = 0, .in_flight = 0};
    CHECK_INT_EQ(ws_progress_shown(&room, &now), 0);
    now.window = 1024, now.in_flight = 2; /* then it read, and offered more */
    CHECK_INT_EQ(ws_progress_shown(&room, &now), 1);
}

static void a_client_that_reads_is_seen(void)
{
    int server, client;
    ws_progress_t p;

    tcp_pair(&server, &client);
    CHECK(fill_until_shut(server));
    ws_progress_mark(&p, server);
    CHECK_INT_EQ(ws_progress_seen(&p, server), 0); /* nothing read yet */
    CHECK(drain(client) > 0);
    /* the client's kernel reopens its window; ours sends into it */
    int seen = 0;
    for (int waited = 0; !seen && waited < DEADLINE_MS; waited += 10) {
        sleep_ms(10);
        seen = ws_progress_seen(&p, server);
    }
    CHECK(seen);
    close(client);
    close(server);
}

static void a_client_whose_window_stays_shut_is_never_seen(void)
{
    int server, client, seen = 0;
    ws_progress_t p;

    tcp_pair(&server, &client);
    CHECK(fill_until_shut(server));
    ws_progress_mark(&p, server);
    for (int i = 0; i < 20; i++) {
        sleep_ms(10);
        fill(server); /* the server keeps trying, as the feed does */
        seen += ws_progress_seen(&p, server);
    }
    CHECK_INT_EQ(seen, 0);
    close(client);
    close(server);
}

static void a_socket_that_is_not_tcp_shows_nothing(void)
{
    int sv[2];
    char buf[4096] = {0};
    ws_progress_t p;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        abort();
    ws_progress_start(sv[0], 16384); /* refused, harmlessly */
    ws_progress_mark(&p, sv[0]);
    CHECK(write(sv[0], buf, sizeof(buf)) > 0);
    CHECK(drain(sv[1]) > 0);
    CHECK_INT_EQ(ws_progress_seen(&p, sv[0]), 0);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    CHECK_RUN(the_rule_sees_the_window_move_or_room_unused);
    CHECK_RUN(a_client_that_reads_is_seen);
    CHECK_RUN(a_client_whose_window_stays_shut_is_never_seen);
    CHECK_RUN(a_socket_that_is_not_tcp_shows_nothing);
    return check_summary();
}
