/*
 * log.h - one-line log messages on stderr.
 *
 * Owns the log level and the line format (time, level, message). Nothing is
 * logged per request at info level, so a load test measures the server, not
 * its logging. Messages about a database connection start with its small
 * stable id, such as "pg#3" (conn_log in pool.c).
 */
#ifndef NOTESD_LOG_H
#define NOTESD_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_level_current;

/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int log_level_parse(const char *s);

void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The level test happens before any formatting, so debug lines cost nothing when off. */
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)                                                                              \
    do {                                                                                           \
        if (log_level_current >= LOG_WARN)                                                         \
            log_write(LOG_WARN, __VA_ARGS__);                                                      \
    } while (0)
#define log_info(...)                                                                              \
    do {                                                                                           \
        if (log_level_current >= LOG_INFO)                                                         \
            log_write(LOG_INFO, __VA_ARGS__);                                                      \
    } while (0)
#define log_debug(...)                                                                             \
    do {                                                                                           \
        if (log_level_current >= LOG_DEBUG)                                                        \
            log_write(LOG_DEBUG, __VA_ARGS__);                                                     \
    } while (0)

#endif
