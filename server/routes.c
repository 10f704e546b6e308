/*
 * routes.c - the route table's rows (see routes.h).
 */
#include "routes.h"

#define ROUTE_ROW(id_, label_, port_, match_, get_, post_, put_, any_, setup_)                     \
    [id_] = {.id = id_,                                                                            \
             .label = label_,                                                                      \
             .port = port_,                                                                        \
             .match = match_,                                                                      \
             .get = get_,                                                                          \
             .post = post_,                                                                        \
             .put = put_,                                                                          \
             .any = any_,                                                                          \
             .setup = setup_},
const route_t routes[ROUTE__COUNT] = {ROUTES(ROUTE_ROW)};
#undef ROUTE_ROW
