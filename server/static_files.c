/*
 * static_files.c - the index of STATIC_DIR (see static_files.h): a walk of
 * the tree at start-up, a sorted array, and a binary search per request.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "log.h"
#include "static_files.h"

/* Deepest directory the walk descends into. */
#define WALK_DEPTH_MAX 32

typedef struct walk {
    static_files_t *t;
    const char *root; /* real path of the directory */
    size_t root_len;
    const char *ancestors[WALK_DEPTH_MAX + 1]; /* real paths of the directories walked into */
    int depth;
} walk_t;

static char *xstrdup(const char *s)
{
    char *copy = strdup(s);
    if (copy == NULL)
        abort(); /* out of memory: see the policy in main.c */
    return copy;
}

static void add(static_files_t *t, const char *path, const char *real, int is_dir)
{
    if (t->n == STATIC_FILES_MAX) {
        t->truncated = 1;
        return;
    }
    if (t->n == t->cap) {
        t->cap = t->cap > 0 ? 2 * t->cap : 64;
        if ((t->entries = realloc(t->entries, t->cap * sizeof(*t->entries))) == NULL)
            abort(); /* out of memory: see the policy in main.c */
    }
    t->entries[t->n++] = (static_entry_t){xstrdup(path), xstrdup(real), is_dir};
}

/* Walks the directory whose request path is `path` ("" for the root) and
 * whose real path is `real`. */
static void walk_dir(walk_t *w, const char *path, const char *real)
{
    DIR *dir = opendir(real);
    if (dir == NULL)
        return;
    w->ancestors[w->depth++] = real;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char child[PATH_MAX], child_path[PATH_MAX], child_real[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(child, sizeof(child), "%s/%s", real, e->d_name) >= sizeof(child) ||
            (size_t)snprintf(child_path, sizeof(child_path), "%s%s%s", path, path[0] ? "/" : "",
                             e->d_name) >= sizeof(child_path) ||
            realpath(child, child_real) == NULL || stat(child_real, &st) != 0)
            continue;
        /* Inside the directory, or left out: a link may point anywhere. */
        if (strncmp(child_real, w->root, w->root_len) != 0 || child_real[w->root_len] != '/')
            continue;
        int is_dir = S_ISDIR(st.st_mode);
        if (!is_dir && !S_ISREG(st.st_mode))
            continue;
        add(w->t, child_path, child_real + w->root_len, is_dir);
        if (!is_dir || w->depth > WALK_DEPTH_MAX - 1)
            continue;
        int loop = 0; /* a link back up: its tree is already walked */
        for (int i = 0; i < w->depth; i++)
            loop |= strcmp(w->ancestors[i], child_real) == 0;
        if (!loop)
            walk_dir(w, child_path, child_real);
    }
    closedir(dir);
    w->depth--;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const static_entry_t *)a)->path, ((const static_entry_t *)b)->path);
}

int static_files_load(static_files_t *t, const char *dir)
{
    char root[PATH_MAX];
    struct stat st;

    memset(t, 0, sizeof(*t));
    if (dir == NULL || realpath(dir, root) == NULL || stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    walk_t w = {.t = t, .root = root, .root_len = strlen(root)};
    if (w.root_len == 1)
        w.root_len = 0; /* "/": every real path is inside, after its own "/" */
    walk_dir(&w, "", root);
    qsort(t->entries, t->n, sizeof(*t->entries), by_path);
    if (t->truncated)
        log_warn("STATIC_DIR %s holds more than %d files and directories; the rest are not "
                 "served",
                 root, STATIC_FILES_MAX);
    return 0;
}

/* Resolves the dot segments of `path` by name into `out` (PATH_MAX bytes):
 * "a/./b//c/../d" is "a/b/d". Returns the length, or -1 when it goes above
 * the root or does not fit. */
static int normalise(const char *path, size_t len, char *out)
{
    size_t n = 0, i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && path[end] != '/')
            end++;
        size_t seg = end - i;
        if (seg == 0 || (seg == 1 && path[i] == '.')) {
            /* nothing */
        } else if (seg == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (n == 0)
                return -1;
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--; /* the '/' before the segment taken away */
        } else {
            if (n + (n > 0) + seg >= PATH_MAX)
                return -1;
            if (n > 0)
                out[n++] = '/';
            memcpy(out + n, path + i, seg);
            n += seg;
        }
        i = end + 1;
    }
    out[n] = '\0';
    return (int)n;
}

enum static_kind static_files_find(const static_files_t *t, const char *path, size_t len,
                                   const char **real)
{
    char key[PATH_MAX];
    if (t->n == 0 || memchr(path, '\0', len) != NULL || normalise(path, len, key) <= 0)
        return STATIC_NONE;
    static_entry_t probe = {.path = key};
    const static_entry_t *e = bsearch(&probe, t->entries, t->n, sizeof(*e), by_path);
    if (e == NULL || (len > 0 && path[len - 1] == '/' && !e->is_dir))
        return STATIC_NONE;
    *real = e->real;
    return e->is_dir ? STATIC_DIRECTORY : STATIC_FILE;
}

void static_files_free(static_files_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->entries[i].path);
        free(t->entries[i].real);
    }
    free(t->entries);
    memset(t, 0, sizeof(*t));
}
