/*
 * static_files.h - the files under STATIC_DIR, read once at start-up, so that
 * serving /static/... looks a path up in memory instead of asking the file
 * system on the loop.
 *
 * Owns the index: every file and directory the tree holds, by the path a
 * request names it with, and the real path h2o's file handler opens. A
 * symbolic link is followed when its target is inside the directory, and
 * left out otherwise; a link back to a directory above it is not followed
 * again. Files added after start-up are not served (a restart reads the
 * tree again); see docs/decisions.md, "Static files".
 *
 * Loaded on the main thread before the loops start, then read-only and
 * shared by every loop.
 */
#ifndef NOTESD_STATIC_FILES_H
#define NOTESD_STATIC_FILES_H

#include <stddef.h>
#include "compiler.h"

/* Most entries an index keeps; a larger tree is cut there (with a warning). */
#define STATIC_FILES_MAX 65536

typedef struct static_entry {
    char *path; /* as a request names it: relative, '/'-separated, no dot segments */
    char *real; /* the real path under the directory, with a leading '/' */
    int is_dir;
} static_entry_t;

typedef struct static_files {
    static_entry_t *entries; /* sorted by path */
    size_t n, cap;
    int truncated; /* 1 when the tree held more than STATIC_FILES_MAX entries */
} static_files_t;

/* Reads the tree under `dir` (its real path is the root). Returns 0, or -1
 * when `dir` is not a directory (then the index is empty and every lookup
 * finds nothing). Blocking: at start-up only. */
int static_files_load(static_files_t *t, const char *dir);

enum static_kind { STATIC_NONE, STATIC_FILE, STATIC_DIRECTORY };

/* Looks up a path a request names, percent-decoded and relative to the
 * directory: empty and "." segments are skipped and ".." takes the segment
 * before it away, by name, as a URL's dot segments are resolved (one that
 * would go above the directory finds nothing). A path that ends with '/'
 * names a directory only. Sets *real to the entry's real path. */
enum static_kind static_files_find(const static_files_t *t, const char *path, size_t len,
                                   const char **real);

void static_files_free(static_files_t *t);

#endif
