/*
 * routes.c - the route table's rows (see routes.h).
 */
#include "routes.h"

/* Each row's methods are a compound literal of static storage, ended by a NULL name. */
#define ROUTE_ROW(id_, label_, port_, match_, setup_, state_, ...)                                 \
    [id_] = {.id = id_,                                                                            \
             .label = label_,                                                                      \
             .port = port_,                                                                        \
             .match = match_,                                                                      \
             .setup = setup_,                                                                      \
             .state = state_,                                                                      \
             .methods = (const route_method_t[]){__VA_ARGS__, {NULL, NULL}}},
const route_t routes[ROUTE__COUNT] = {ROUTES(ROUTE_ROW)};
#undef ROUTE_ROW
