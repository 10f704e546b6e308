/*
 * test_static_files.c - unit tests of server/static_files.c on a real tree in
 * a temporary directory: files and directories found by the names a request
 * uses, dot segments resolved by name, links followed inside the directory
 * and left out when they point outside it, a link back up walked once, and a
 * missing directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "static_files.h"

static char base[64];   /* the temporary directory */
static char served[96]; /* base/www: STATIC_DIR */

static void write_file(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        abort();
    fputs(text, f);
    fclose(f);
}

static void make_dir(const char *rel)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    if (mkdir(path, 0755) != 0)
        abort();
}

static void make_link(const char *target, const char *rel)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    if (symlink(target, path) != 0)
        abort();
}

/* www/app.js, www/sub/b.css, www/sub/deeper/c.txt, outside.txt (not served),
 * and links: www/in.js -> app.js, www/out.txt -> ../outside.txt,
 * www/sub/up -> .. (the directory itself), www/sub/deeper/back -> .. (a loop),
 * www/alias -> sub */
static void make_tree(void)
{
    strcpy(base, "/tmp/notesd-static-XXXXXX");
    if (mkdtemp(base) == NULL)
        abort();
    snprintf(served, sizeof(served), "%s/www", base);
    make_dir("www");
    make_dir("www/sub");
    make_dir("www/sub/deeper");
    write_file("www/app.js", "var a=1;");
    write_file("www/sub/b.css", "body{}");
    write_file("www/sub/deeper/c.txt", "c");
    write_file("outside.txt", "secret");
    make_link("app.js", "www/in.js");
    make_link("../outside.txt", "www/out.txt");
    make_link("..", "www/sub/up");
    make_link("..", "www/sub/deeper/back");
    make_link("sub", "www/alias");
}

static enum static_kind find(const static_files_t *t, const char *path, const char **real)
{
    const char *ignored;
    return static_files_find(t, path, strlen(path), real != NULL ? real : &ignored);
}

static void files_and_directories_are_found_by_name(void)
{
    static_files_t t;
    const char *real;
    CHECK_INT_EQ(static_files_load(&t, served), 0);
    CHECK_INT_EQ(find(&t, "app.js", &real), STATIC_FILE);
    CHECK_STR_EQ(real, "/app.js");
    CHECK_INT_EQ(find(&t, "sub/b.css", &real), STATIC_FILE);
    CHECK_STR_EQ(real, "/sub/b.css");
    CHECK_INT_EQ(find(&t, "sub/deeper/c.txt", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "sub", NULL), STATIC_DIRECTORY);
    CHECK_INT_EQ(find(&t, "sub/", NULL), STATIC_DIRECTORY);
    CHECK_INT_EQ(find(&t, "missing.js", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, "App.js", NULL), STATIC_NONE); /* names keep their case */
    CHECK_INT_EQ(find(&t, "", NULL), STATIC_NONE);       /* the directory itself */
    static_files_free(&t);
}

static void dot_segments_resolve_by_name_and_never_above_the_directory(void)
{
    static_files_t t;
    CHECK_INT_EQ(static_files_load(&t, served), 0);
    CHECK_INT_EQ(find(&t, "./app.js", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "sub/../app.js", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "sub//b.css", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "/app.js", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "sub/deeper/../../app.js", NULL), STATIC_FILE);
    CHECK_INT_EQ(find(&t, "../outside.txt", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, "sub/../../outside.txt", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, "..", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, ".", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, "app.js/", NULL), STATIC_NONE); /* a file named as a directory */
    CHECK_INT_EQ(static_files_find(&t, "app.js\0x", 8, &(const char *){NULL}), STATIC_NONE);
    static_files_free(&t);
}

static void links_are_followed_inside_the_directory_only(void)
{
    static_files_t t;
    const char *real;
    CHECK_INT_EQ(static_files_load(&t, served), 0);
    CHECK_INT_EQ(find(&t, "in.js", &real), STATIC_FILE);
    CHECK_STR_EQ(real, "/app.js"); /* the file the link names */
    CHECK_INT_EQ(find(&t, "out.txt", NULL), STATIC_NONE);
    CHECK_INT_EQ(find(&t, "alias/b.css", &real), STATIC_FILE);
    CHECK_STR_EQ(real, "/sub/b.css");
    /* sub/up is the directory itself, which is never served */
    CHECK_INT_EQ(find(&t, "sub/up", NULL), STATIC_NONE);
    /* sub/deeper/back is sub again: there, but its tree is not walked twice */
    CHECK_INT_EQ(find(&t, "sub/deeper/back", NULL), STATIC_DIRECTORY);
    CHECK_INT_EQ(find(&t, "sub/deeper/back/b.css", NULL), STATIC_NONE);
    CHECK(t.n < 40);
    static_files_free(&t);
}

static void a_missing_directory_serves_nothing(void)
{
    static_files_t t;
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/none", base);
    CHECK_INT_EQ(static_files_load(&t, missing), -1);
    CHECK_INT_EQ(find(&t, "app.js", NULL), STATIC_NONE);
    CHECK_INT_EQ(static_files_load(&t, NULL), -1);
    char file[128];
    snprintf(file, sizeof(file), "%s/www/app.js", base);
    CHECK_INT_EQ(static_files_load(&t, file), -1); /* a file is no directory */
    static_files_free(&t);
}

int main(void)
{
    make_tree();
    CHECK_RUN(files_and_directories_are_found_by_name);
    CHECK_RUN(dot_segments_resolve_by_name_and_never_above_the_directory);
    CHECK_RUN(links_are_followed_inside_the_directory_only);
    CHECK_RUN(a_missing_directory_serves_nothing);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
    if (system(cmd) != 0)
        return 1;
    return check_summary();
}
