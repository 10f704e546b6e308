/*
 * ws_progress.c - a WebSocket client's reading, from its connection's TCP_INFO
 * (see ws_progress.h).
 */
#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>
#include "ws_progress.h"

void ws_progress_start(int fd, int unsent)
{
    /* not TCP (a socketpair in the unit tests): refused, and nothing changes */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &unsent, sizeof(unsent));
}

/* The connection's TCP_INFO into *p; 0 when it has none (not TCP). A field
 * a kernel older than this header does not fill stays 0 (tcpi_snd_wnd came
 * with Linux 5.4: an older one is judged by what it acknowledged alone). */
static int look(int fd, ws_progress_t *p)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    memset(&ti, 0, sizeof(ti));
    memset(p, 0, sizeof(*p));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
        return 0;
    p->acked = ti.tcpi_bytes_acked;
    p->window = ti.tcpi_snd_wnd;
    p->in_flight = ti.tcpi_unacked;
    return 1;
}

void ws_progress_mark(ws_progress_t *p, int fd)
{
    (void)look(fd, p);
}

int ws_progress_seen(ws_progress_t *p, int fd)
{
    ws_progress_t now;
    if (!look(fd, &now))
        return 0;
    int shown = ws_progress_shown(p, &now);
    *p = now;
    return shown;
}

int ws_progress_shown(const ws_progress_t *before, const ws_progress_t *now)
{
    /* The window's right edge (acknowledged + window) is as far as the client's
     * kernel will take our bytes: it moves on only when the client has read,
     * never when ours fills the room it offered before. An open window with
     * nothing in flight is room our kernel has not used yet: it sends into a
     * window smaller than the segment it holds only at its next zero-window
     * probe, whose interval doubles (to 2 minutes) while the window stays
     * shut, so that can come long after the client read. With segments in
     * flight the window is old news: a client that vanished leaves the last
     * one it advertised open for ever. */
    return now->acked + now->window > before->acked + before->window ||
           (now->window > 0 && now->in_flight == 0);
}
