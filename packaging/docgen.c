/*
 * docgen.c - the option table of server/config.c printed as documentation.
 *
 * Built beside notesd and run by the build, never installed. It prints the rows
 * that --help prints (config_option_doc) in two more forms, so the three cannot
 * drift apart:
 *
 *   notesd-docgen man TEMPLATE      the man page: TEMPLATE with its OPTIONS marker
 *                                   line replaced by one entry per option (roff)
 *   notesd-docgen markdown          the settings table of docs/configuration.md
 *   notesd-docgen markdown FILE     that table written into FILE, between its markers
 *
 * The rows' text is Markdown with only `code` spans and [links](page.md#anchor);
 * the man page shows code in bold and a link as its text in italics followed
 * by the page it names, since a terminal cannot follow it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"

/* The template's line that the OPTIONS entries replace. */
#define MAN_MARKER ".\\\" @OPTIONS@ (notesd-docgen writes the options here)\n"
/* The lines around the generated table in docs/configuration.md. */
#define MD_BEGIN "<!-- settings: generated from server/config.c by notesd-docgen; edit there -->\n"
#define MD_END "<!-- end of settings -->\n"

/* ---- roff ---------------------------------------------------------------------------------- */

/* Writes `len` bytes of plain text for roff: backslashes escaped, every '-'
 * a minus when `literal` (flags and code are typed as they are shown). */
static void roff_plain(FILE *out, const char *s, size_t len, int literal, int *at_line_start)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (*at_line_start && (c == '.' || c == '\''))
            fputs("\\&", out);
        *at_line_start = 0;
        if (c == '\\')
            fputs("\\e", out);
        else if (c == '-' && literal)
            fputs("\\-", out);
        else
            fputc(c, out);
    }
}

/* Writes Markdown text (code spans and links only) as roff, in the font `font`
 * ('R' roman, 'I' italic), which it restores after each code span. */
static void roff_markup(FILE *out, const char *s, size_t len, char font, int *at_line_start)
{
    const char *end = s + len;
    while (s < end) {
        const char *tick = memchr(s, '`', (size_t)(end - s));
        const char *bracket = memchr(s, '[', (size_t)(end - s));
        const char *next = tick;
        if (next == NULL || (bracket != NULL && bracket < next))
            next = bracket;
        if (next == NULL) {
            roff_plain(out, s, (size_t)(end - s), 0, at_line_start);
            return;
        }
        roff_plain(out, s, (size_t)(next - s), 0, at_line_start);
        if (next == tick) {
            const char *close = memchr(tick + 1, '`', (size_t)(end - tick - 1));
            if (close == NULL) {
                roff_plain(out, tick, (size_t)(end - tick), 0, at_line_start);
                return;
            }
            fputs("\\fB", out);
            roff_plain(out, tick + 1, (size_t)(close - tick - 1), 1, at_line_start);
            fprintf(out, "\\f%c", font);
            s = close + 1;
            continue;
        }
        /* [text](target): the text in italics, then "in PAGE" without the anchor. */
        const char *text_end = memchr(bracket, ']', (size_t)(end - bracket));
        if (text_end == NULL || text_end + 1 >= end || text_end[1] != '(') {
            roff_plain(out, bracket, 1, 0, at_line_start);
            s = bracket + 1;
            continue;
        }
        const char *target = text_end + 2;
        const char *target_end = memchr(target, ')', (size_t)(end - target));
        if (target_end == NULL) {
            roff_plain(out, bracket, (size_t)(end - bracket), 0, at_line_start);
            return;
        }
        fputs("\\fI", out);
        roff_markup(out, bracket + 1, (size_t)(text_end - bracket - 1), 'I', at_line_start);
        fprintf(out, "\\f%c in ", font);
        const char *page_end = memchr(target, '#', (size_t)(target_end - target));
        if (page_end == NULL)
            page_end = target_end;
        while (strncmp(target, "../", 3) == 0)
            target += 3;
        roff_plain(out, target, (size_t)(page_end - target), 0, at_line_start);
        s = target_end + 1;
    }
}

static void roff_text(FILE *out, const char *s)
{
    int at_line_start = 1;
    roff_markup(out, s, strlen(s), 'R', &at_line_start);
}

static void roff_literal(FILE *out, const char *s)
{
    int at_line_start = 0;
    roff_plain(out, s, strlen(s), 1, &at_line_start);
}

/* One entry of OPTIONS:
 *   .TP
 *   \fB\-\-pool\-max\fR \fIVALUE\fR, \fBPOOL_MAX\fR
 *   most database connections open at once.
 *   Default: \fB20\fR; from \fB1\fR to \fB1000\fR. */
static void man_option(FILE *out, const config_option_doc_t *doc)
{
    fputs(".TP\n\\fB\\-\\-", out);
    roff_literal(out, doc->flag);
    fputs("\\fR", out);
    if (doc->takes_value)
        fputs(" \\fIVALUE\\fR", out);
    if (doc->env[0] != '\0') {
        fputs(", \\fB", out);
        roff_literal(out, doc->env);
        fputs("\\fR", out);
    }
    fputs("\n", out);
    roff_text(out, doc->text);
    fputs(".\n", out);
    if (doc->def != NULL) {
        if (!doc->def_is_value && strcmp(doc->def, "required") == 0) {
            fputs("Required: there is no default", out);
        } else if (doc->def_is_value) {
            fputs("Default: \\fB", out);
            roff_literal(out, doc->def);
            fputs("\\fR", out);
        } else {
            fputs("Default: ", out);
            roff_text(out, doc->def);
        }
        if (doc->has_range)
            fprintf(out, "; from \\fB%ld\\fR to \\fB%ld\\fR", doc->min, doc->max);
        fputs(".\n", out);
    } else if (doc->has_range) {
        fprintf(out, "From \\fB%ld\\fR to \\fB%ld\\fR.\n", doc->min, doc->max);
    }
}

static int print_man(const char *template_path)
{
    FILE *in = fopen(template_path, "r");
    if (in == NULL) {
        fprintf(stderr, "notesd-docgen: %s: %s\n", template_path, strerror(errno));
        return 1;
    }
    char line[4096];
    int replaced = 0;
    while (fgets(line, sizeof(line), in) != NULL) {
        if (strcmp(line, MAN_MARKER) != 0) {
            fputs(line, stdout);
            continue;
        }
        config_option_doc_t doc;
        for (size_t i = 0; config_option_doc(i, &doc); i++)
            man_option(stdout, &doc);
        replaced++;
    }
    fclose(in);
    if (replaced != 1) {
        fprintf(stderr, "notesd-docgen: %s: the line %.*s must appear once, not %d times\n",
                template_path, (int)strlen(MAN_MARKER) - 1, MAN_MARKER, replaced);
        return 1;
    }
    return 0;
}

/* ---- Markdown ------------------------------------------------------------------------------ */

/* A table cell: the text as it is, with any '|' escaped. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* The settings table: one row per setting; --help and --version are not settings. */
static void print_markdown(FILE *out)
{
    fputs("| flag | variable | default | meaning |\n|---|---|---|---|\n", out);
    config_option_doc_t doc;
    for (size_t i = 0; config_option_doc(i, &doc); i++) {
        if (doc.env[0] == '\0')
            continue;
        fprintf(out, "| `--%s` | `%s` | ", doc.flag, doc.env);
        if (doc.def == NULL)
            fputs("(none)", out);
        else if (doc.def_is_value)
            fprintf(out, "`%s`", doc.def);
        else
            md_cell(out, doc.def);
        fputs(" | ", out);
        md_cell(out, doc.text);
        /* After the text: other pages read the default column as one value. */
        if (doc.has_range)
            fprintf(out, " (`%ld` to `%ld`)", doc.min, doc.max);
        fputs(" |\n", out);
    }
}

/* Replaces what lies between MD_BEGIN and MD_END in `path` with the table. */
static int update_markdown(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "notesd-docgen: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *buf = open_memstream(&text, &size);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
        fwrite(chunk, 1, n, buf);
    fclose(in);
    fclose(buf);

    char *begin = strstr(text, MD_BEGIN);
    char *end = begin != NULL ? strstr(begin, MD_END) : NULL;
    if (end == NULL) {
        fprintf(stderr, "notesd-docgen: %s: no lines %.*s ... %.*s around the table\n", path,
                (int)strlen(MD_BEGIN) - 1, MD_BEGIN, (int)strlen(MD_END) - 1, MD_END);
        free(text);
        return 1;
    }
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "notesd-docgen: %s: %s\n", path, strerror(errno));
        free(text);
        return 1;
    }
    fwrite(text, 1, (size_t)(begin - text) + strlen(MD_BEGIN), out);
    print_markdown(out);
    fputs(end, out);
    int failed = fclose(out) != 0;
    free(text);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "man") == 0)
        return print_man(argv[2]);
    if (argc == 2 && strcmp(argv[1], "markdown") == 0) {
        print_markdown(stdout);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "markdown") == 0)
        return update_markdown(argv[2]);
    fprintf(stderr, "usage: notesd-docgen man TEMPLATE | markdown [FILE]\n");
    return 2;
}
