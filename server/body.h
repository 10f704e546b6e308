/*
 * body.h - a request body as express.json (body-parser 2) reads it, before JSON.parse.
 *
 * body-parser decides, in this order: the media type (anything but
 * application/json is not parsed, and the reference handler then fails), the
 * charset (415 unless it is UTF-8), the Content-Encoding (identity, gzip,
 * deflate or br; 415 for others), the size limit on the decoded bytes (413), and
 * then strips a UTF-8 byte order mark. Pure functions: no I/O, and no memory
 * but the decoder's own state while inflating (zlib's or Brotli's, freed
 * before they return) and the inflated body, which the caller frees. Each
 * returns 0 or the HTTP status to answer, with the reason written into `msg`
 * (NUL-terminated, cut to `msg_size`).
 */
#ifndef NOTESD_BODY_H
#define NOTESD_BODY_H

#include <stddef.h>
#include "compiler.h"

/* Checks a Content-Type value (NULL when there is none): application/json in
 * any case, with parameters; a `charset` parameter must be utf-8 (any case,
 * quoted or not). Returns 0, or 415. */
NOTESD_MUSTCHECK int body_check_type(const char *type, size_t type_len, char *msg, size_t msg_size);

/* Decodes `in` according to a Content-Encoding value (NULL when there is
 * none; "identity", "gzip", "deflate" or "br" in any case) and strips a leading
 * UTF-8 BOM. *out and *out_len get the body: `in` itself when it was not
 * encoded, or the inflated bytes in a buffer this allocates, whatever the
 * outcome, into *scratch (NULL when nothing was inflated). The buffer starts
 * at four times the compressed size and doubles as the body inflates, so a
 * small body costs little whatever the limit. The limit applies to the
 * decoded size, and inflating stops as soon as it is passed, so a small
 * compressed body cannot make it write more than `limit` bytes. Returns 0,
 * 400 (not valid compressed data), 413 (over `limit`) or 415 (another
 * encoding). Ownership: the caller frees *scratch (free), once done with *out. */
NOTESD_MUSTCHECK int body_decode(const char *encoding, size_t encoding_len, const char *in,
                                 size_t in_len, size_t limit, char **scratch, const char **out,
                                 size_t *out_len, char *msg, size_t msg_size);

#endif
