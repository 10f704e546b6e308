/*
 * sdnotify.c - one datagram to systemd's NOTIFY_SOCKET.
 *
 * Owns the address (a path, or an abstract name after '@') and the send. It
 * opens a socket per message: notesd sends two in its life (READY=1 when its
 * listeners are bound, STOPPING=1 when a shutdown begins), so keeping one open
 * would only add a descriptor to count.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "sdnotify.h"

int sdnotify_send(const char *message)
{
    const char *name = getenv("NOTIFY_SOCKET");
    if (name == NULL || name[0] == '\0')
        return 0;

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    if ((name[0] != '/' && name[0] != '@') || len > sizeof(addr.sun_path) ||
        (name[0] == '/' && len == sizeof(addr.sun_path))) {
        errno = EINVAL;
        return -1;
    }
    memcpy(addr.sun_path, name, len);
    if (name[0] == '@')
        addr.sun_path[0] = '\0'; /* abstract: the name's bytes after the NUL, not NUL-ended */
    socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    if (name[0] == '/')
        addr_len++; /* a path counts its NUL */

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    ssize_t sent =
        sendto(fd, message, strlen(message), MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
    int saved = errno;
    close(fd);
    if (sent < 0) {
        errno = saved;
        return -1;
    }
    return 1;
}
