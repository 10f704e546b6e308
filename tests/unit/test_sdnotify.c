/*
 * test_sdnotify.c - unit tests of server/sdnotify.c: the datagram systemd
 * reads, at a path and at an abstract address, and what happens without
 * NOTIFY_SOCKET, with a name that is no address, and with nobody listening.
 *
 * Each test binds the socket systemd would bind, sets NOTIFY_SOCKET to its
 * name, and reads back what sdnotify_send wrote.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "check.h"
#include "sdnotify.h"

/* A datagram socket bound to `name` (a path, or '@' and an abstract name), as
 * systemd binds its notification socket. */
static int bind_notify_socket(const char *name)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    memcpy(addr.sun_path, name, len);
    socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    if (name[0] == '@')
        addr.sun_path[0] = '\0';
    else
        addr_len++;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, addr_len) != 0) {
        perror("bind_notify_socket");
        exit(1);
    }
    return fd;
}

/* The next datagram on `fd`, or "" when none is waiting. */
static const char *receive(int fd)
{
    static char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_a_path_gets_the_message_as_one_datagram(void)
{
    char path[] = "/tmp/notesd-sdnotify-XXXXXX";
    CHECK(mkdtemp(path) != NULL);
    char name[sizeof(path) + 16];
    snprintf(name, sizeof(name), "%s/notify", path);
    int fd = bind_notify_socket(name);
    setenv("NOTIFY_SOCKET", name, 1);

    CHECK_INT_EQ(sdnotify_send("READY=1\nSTATUS=API on port 8080, 1 loop(s)"), 1);
    CHECK_INT_EQ(sdnotify_send("STOPPING=1"), 1);
    CHECK_STR_EQ(receive(fd), "READY=1\nSTATUS=API on port 8080, 1 loop(s)");
    CHECK_STR_EQ(receive(fd), "STOPPING=1");
    CHECK_STR_EQ(receive(fd), "");

    close(fd);
    unlink(name);
    rmdir(path);
}

static void test_an_at_sign_names_an_abstract_address(void)
{
    char name[64];
    snprintf(name, sizeof(name), "@notesd-sdnotify-test-%d", (int)getpid());
    int fd = bind_notify_socket(name);
    setenv("NOTIFY_SOCKET", name, 1);

    CHECK_INT_EQ(sdnotify_send("READY=1"), 1);
    CHECK_STR_EQ(receive(fd), "READY=1");
    close(fd);
}

static void test_without_notify_socket_nothing_is_sent(void)
{
    unsetenv("NOTIFY_SOCKET");
    CHECK_INT_EQ(sdnotify_send("READY=1"), 0);
    setenv("NOTIFY_SOCKET", "", 1);
    CHECK_INT_EQ(sdnotify_send("READY=1"), 0);
}

static void test_a_name_that_is_no_address_is_einval(void)
{
    const char *bad[] = {"notify", "relative/path", NULL};
    for (int i = 0; bad[i] != NULL; i++) {
        setenv("NOTIFY_SOCKET", bad[i], 1);
        errno = 0;
        CHECK_INT_EQ(sdnotify_send("READY=1"), -1);
        CHECK_INT_EQ(errno, EINVAL);
    }
    /* sun_path holds 108 bytes: a path must leave room for its NUL. */
    char long_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    setenv("NOTIFY_SOCKET", long_path, 1);
    errno = 0;
    CHECK_INT_EQ(sdnotify_send("READY=1"), -1);
    CHECK_INT_EQ(errno, EINVAL);
    long_path[sizeof(long_path) - 2] = '\0'; /* 107 bytes and its NUL: fits */
    setenv("NOTIFY_SOCKET", long_path, 1);
    errno = 0;
    CHECK_INT_EQ(sdnotify_send("READY=1"), -1);
    CHECK_INT_EQ(errno, ENOENT); /* an address, but no socket there */
}

static void test_nobody_listening_is_an_error_not_a_wait(void)
{
    char name[64];
    snprintf(name, sizeof(name), "@notesd-sdnotify-nobody-%d", (int)getpid());
    setenv("NOTIFY_SOCKET", name, 1);
    errno = 0;
    CHECK_INT_EQ(sdnotify_send("READY=1"), -1);
    CHECK_INT_EQ(errno, ECONNREFUSED);
}

/* A receiver that never reads: once its queue is full, a send fails with EAGAIN
 * at once instead of blocking the loop that sends it. */
static void test_a_full_queue_is_eagain(void)
{
    char name[64];
    snprintf(name, sizeof(name), "@notesd-sdnotify-full-%d", (int)getpid());
    int fd = bind_notify_socket(name);
    setenv("NOTIFY_SOCKET", name, 1);
    int rc = 0, sent = 0;
    while (sent < 100000 && (rc = sdnotify_send("STATUS=filling the queue")) == 1)
        sent++;
    CHECK_INT_EQ(rc, -1);
    CHECK_INT_EQ(errno, EAGAIN);
    printf("the queue took %d datagrams\n", sent);
    close(fd);
}

int main(void)
{
    CHECK_RUN(test_a_path_gets_the_message_as_one_datagram);
    CHECK_RUN(test_an_at_sign_names_an_abstract_address);
    CHECK_RUN(test_without_notify_socket_nothing_is_sent);
    CHECK_RUN(test_a_name_that_is_no_address_is_einval);
    CHECK_RUN(test_nobody_listening_is_an_error_not_a_wait);
    CHECK_RUN(test_a_full_queue_is_eagain);
    return check_summary();
}
