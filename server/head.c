/*
 * head.c - what notesd reads of a request head itself (see head.h).
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include "head.h"

size_t head_origin_form(const char *target, size_t len)
{
    size_t i;

    if (len > 0 && target[0] == '/')
        return 0;
    if (len >= 7 && strncasecmp(target, "http://", 7) == 0)
        i = 7;
    else if (len >= 8 && strncasecmp(target, "https://", 8) == 0)
        i = 8;
    else
        return SIZE_MAX;
    while (i < len && target[i] != '/' && target[i] != '?')
        i++; /* the authority, which routing does not need */
    return i;
}

int head_framing(const char *head, size_t len, const char **err)
{
    const char *line = head, *end = head + len;
    int lengths = 0, chunked = 0, first = 1;

    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = (nl != NULL ? nl : end) - line;
        if (n == 0 || (n == 1 && line[0] == '\r'))
            break; /* the empty line that ends the head */
        if (!first && n >= 15 && strncasecmp(line, "content-length:", 15) == 0)
            lengths++;
        else if (!first && n >= 18 && strncasecmp(line, "transfer-encoding:", 18) == 0)
            chunked = 1;
        first = 0; /* the request line */
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    if (lengths > 1) {
        *err = "Content-Length given more than once";
        return -1;
    }
    if (lengths > 0 && chunked) {
        *err = "Content-Length and Transfer-Encoding together";
        return -1;
    }
    return 0;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

size_t head_trim(const char **value, size_t len)
{
    const char *v = *value;
    while (len > 0 && is_ows(v[0]))
        v++, len--;
    while (len > 0 && is_ows(v[len - 1]))
        len--;
    *value = v;
    return len;
}
