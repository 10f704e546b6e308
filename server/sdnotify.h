/*
 * sdnotify.h - telling systemd how the service is doing (sd_notify's protocol,
 * without libsystemd).
 *
 * Under a unit of Type=notify, systemd names a datagram socket in NOTIFY_SOCKET
 * and waits for "READY=1" on it before it counts the service as started. The
 * protocol is one datagram of newline-separated VARIABLE=value lines to that
 * socket: a path, or, when the name starts with '@', an abstract address.
 * Without NOTIFY_SOCKET nothing is sent. Never blocks: a message the socket
 * cannot take at once is dropped and reported as an error.
 */
#ifndef NOTESD_SDNOTIFY_H
#define NOTESD_SDNOTIFY_H

/* Sends `message` ("READY=1", "STOPPING=1", "STATUS=...", several joined by
 * '\n') to NOTIFY_SOCKET. Returns 1 when sent, 0 when NOTIFY_SOCKET is not set,
 * and -1 with errno set when it could not be sent (EINVAL: a name that is not a
 * socket address; EAGAIN: the socket's queue is full). */
int sdnotify_send(const char *message);

#endif
