/*
 * log.c - formats and writes log lines.
 *
 * One fprintf per line to unbuffered stderr, so lines from a crash are not lost
 * in a buffer. Time is wall-clock UTC with milliseconds, like the rest of the
 * ecosystem's logs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "log.h"

enum log_level log_level_current = LOG_INFO;

static const char *level_names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *s)
{
    for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char msg[1024], stamp[32];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03dZ %-5s %s\n", stamp, (int)(tv.tv_usec / 1000), level_names[level], msg);
}
