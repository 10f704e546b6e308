/*
 * fuzz_note_body.c - libFuzzer target for validate_note_body (server/validate.c)
 * and render_json_string (server/render.c).
 *
 * What the server stores, it must be able to send back: every accepted field
 * is valid UTF-8 without NUL, and rendering it with JSON.stringify's escapes
 * gives JSON that parses back to the same bytes, within
 * RENDER_JSON_STRING_BOUND. Lone surrogate escapes are accepted and stored as
 * U+FFFD: the UTF-8 check proves that no surrogate half (ED A0..BF xx) reaches
 * a field, and a U+FFFD in a field must come from a \u escape or from the
 * body's own bytes.
 */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>
#include "render.h"
#include "validate.h"

static void check_round_trip(const char *field)
{
    size_t len = strlen(field);
    if (!validate_utf8(field, len))
        abort();
    size_t cap = RENDER_JSON_STRING_BOUND(len);
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    char *end = render_json_string(buf, field, len);
    if (end < buf + 2 || (size_t)(end - buf) > cap)
        abort();
    cJSON *back = cJSON_ParseWithLength(buf, (size_t)(end - buf));
    if (back == NULL || !cJSON_IsString(back) || strcmp(back->valuestring, field) != 0)
        abort();
    cJSON_Delete(back);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    note_input_t in;
    const char *err = NULL;

    /* An exact-size copy: validate_note_body must never look past `size`. */
    char *body = malloc(size > 0 ? size : 1);
    if (body == NULL)
        return 0;
    memcpy(body, data, size);
    if (validate_note_body(body, size, &in, &err) != 0) {
        if (err == NULL || err[0] == '\0' || in.json != NULL)
            abort();
    } else {
        if (in.json == NULL || in.title == NULL || in.body == NULL || in.tag == NULL)
            abort();
        check_round_trip(in.title);
        check_round_trip(in.body);
        check_round_trip(in.tag);
        /* U+FFFD only comes from a \u escape or from the body's own bytes. */
        if (memmem(body, size, "\\u", 2) == NULL && memmem(body, size, "\xef\xbf\xbd", 3) == NULL &&
            (strstr(in.title, "\xef\xbf\xbd") != NULL || strstr(in.body, "\xef\xbf\xbd") != NULL ||
             strstr(in.tag, "\xef\xbf\xbd") != NULL))
            abort();
        cJSON_Delete(in.json);
    }
    free(body);
    return 0;
}
