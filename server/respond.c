/*
 * respond.c - response helpers (see respond.h).
 */
#include <string.h>
#include "render.h"
#include "respond.h"

/* The reason phrases of RFC 9110 (HTTP/1 sends them; /fault/:status may ask for any). */
static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 203:
        return "Non-Authoritative Information";
    case 204:
        return "No Content";
    case 205:
        return "Reset Content";
    case 206:
        return "Partial Content";
    case 300:
        return "Multiple Choices";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 407:
        return "Proxy Authentication Required";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 417:
        return "Expectation Failed";
    case 418:
        return "I'm a Teapot";
    case 421:
        return "Misdirected Request";
    case 422:
        return "Unprocessable Entity";
    case 425:
        return "Too Early";
    case 426:
        return "Upgrade Required";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 451:
        return "Unavailable For Legal Reasons";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    case 511:
        return "Network Authentication Required";
    default:
        return "Unknown";
    }
}

int req_is_get(h2o_req_t *req)
{
    return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
           h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

int respond_status_has_content(int status)
{
    /* RFC 9110: 1xx (15.2), 204 (15.3.5), 205 (15.3.6) and 304 (15.4.5) carry no content. */
    return status >= 200 && status != 204 && status != 205 && status != 304;
}

void respond_start(notesd_req_t *r, int status, const char *content_type, size_t len)
{
    h2o_req_t *req = r->req;

    r->started = 1;
    if (r->loop->journal != NULL)
        r->answered_ns = stats_now_ns(); /* the journal's answer_us: a time the client waited */
    req->res.status = status;
    req->res.reason = reason_of(status);
    if (status == 205) {
        /* Express 5's res.send for a 205: Content-Length 0, no body; the type stays. */
        req->res.content_length = 0;
        if (content_type != NULL)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                           content_type, strlen(content_type));
    } else if (!respond_status_has_content(status)) {
        /* No body, and (RFC 9110) no Content-Length or Content-Type. */
        req->res.content_length = SIZE_MAX;
    } else {
        req->res.content_length = len;
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type,
                       strlen(content_type));
    }
    request_add_server_timing(r);
}

int req_is_head(h2o_req_t *req)
{
    return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

void respond(notesd_req_t *r, int status, const char *content_type, const char *body, size_t len)
{
    h2o_req_t *req = r->req;
    static h2o_generator_t generator = {NULL, NULL};
    h2o_iovec_t buf = h2o_iovec_init(body, len);

    respond_start(r, status, content_type, len);
    h2o_start_response(req, &generator);
    /* h2o 2.2.5 does not strip the body of a HEAD response itself. */
    if (req_is_head(req) || !respond_status_has_content(status))
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
