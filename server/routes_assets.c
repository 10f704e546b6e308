/*
 * routes_assets.c - the metrics port's two files: GET /openapi.json (the API's
 * OpenAPI description, docs/openapi.json) and GET /dashboard (the live status
 * page, server/dashboard.html). Both are built into the binary as byte arrays
 * (server/embed.cmake writes them at build time), so a request reads no file and
 * an installed notesd needs nothing beside it. The page draws from /metrics,
 * which it fetches itself; nothing here reads a figure.
 */
#include "respond.h"
#include "routes.h"

/* The generated arrays (embed.cmake: the bytes and a NUL not counted in _len). */
extern const unsigned char embedded_openapi_json[];
extern const size_t embedded_openapi_json_len;
extern const unsigned char embedded_dashboard_html[];
extern const size_t embedded_dashboard_html_len;

/* What the page may load, said to the browser: its own inline script and
 * style, and requests to its own origin (the metrics port); nothing from
 * anywhere else, so a stray external font or script would fail loudly. */
#define DASHBOARD_CSP                                                                              \
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "                  \
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "                     \
    "frame-ancestors 'none'"

static void add_header(notesd_req_t *r, const char *name, size_t name_len, const char *value,
                       size_t value_len)
{
    h2o_req_t *req = r->req;
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, name_len, 0, NULL, value, value_len);
}

/* GET /openapi.json */
int assets_openapi(notesd_req_t *r)
{
    add_header(r, H2O_STRLIT("cache-control"), H2O_STRLIT("no-cache"));
    respond(r, 200, "application/json", (const char *)embedded_openapi_json,
            embedded_openapi_json_len);
    return 0;
}

/* GET /dashboard */
int assets_dashboard(notesd_req_t *r)
{
    add_header(r, H2O_STRLIT("cache-control"), H2O_STRLIT("no-cache"));
    add_header(r, H2O_STRLIT("content-security-policy"), H2O_STRLIT(DASHBOARD_CSP));
    add_header(r, H2O_STRLIT("x-content-type-options"), H2O_STRLIT("nosniff"));
    respond(r, 200, CT_HTML, (const char *)embedded_dashboard_html, embedded_dashboard_html_len);
    return 0;
}
