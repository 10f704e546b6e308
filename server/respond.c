/*
 * respond.c - response helpers (see respond.h).
 */
#include <string.h>
#include "render.h"
#include "respond.h"

static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 301:
        return "Moved Permanently";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

int req_is_get(h2o_req_t *req)
{
    return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
           h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

void respond(notesd_req_t *r, int status, const char *content_type, const char *body, size_t len)
{
    h2o_req_t *req = r->req;
    static h2o_generator_t generator = {NULL, NULL};
    h2o_iovec_t buf = h2o_iovec_init(body, len);

    req->res.status = status;
    req->res.reason = reason_of(status);
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type,
                   strlen(content_type));
    request_add_server_timing(r);
    h2o_start_response(req, &generator);
    /* h2o 2.2.5 does not strip the body of a HEAD response itself. */
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    else
        h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
}

void respond_error(notesd_req_t *r, int status, const char *message)
{
    h2o_req_t *req = r->req;
    size_t len = strlen(message);
    char *body =
        h2o_mem_alloc_pool(&req->pool, sizeof("{\"error\":}") + RENDER_JSON_STRING_BOUND(len));
    char *p = body;

    memcpy(p, "{\"error\":", 9), p += 9;
    p = render_json_string(p, message, len);
    *p++ = '}';
    respond(r, status, CT_JSON, body, (size_t)(p - body));
}

void respond_method_not_allowed(notesd_req_t *r, const char *allow)
{
    h2o_add_header(&r->req->pool, &r->req->res.headers, H2O_TOKEN_ALLOW, NULL, allow,
                   strlen(allow));
    respond_error(r, 405, "method not allowed");
}

void respond_unavailable(notesd_req_t *r, const char *message)
{
    h2o_add_header(&r->req->pool, &r->req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
                   H2O_STRLIT("1"));
    respond_error(r, 503, message);
}

void respond_not_found_text(notesd_req_t *r)
{
    respond(r, 404, CT_TEXT, "Not Found", 9);
}
