/*
 * test_ws.c - unit tests of server/ws.c's pure part: Sec-WebSocket-Accept,
 * against RFC 6455's own example (section 1.3) and one computed elsewhere
 * (Python's hashlib and base64).
 */
#include "check.h"
#include "ws.h"

static void the_accept_key_is_rfc_6455s(void)
{
    char out[28];
    ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
    CHECK_MEM_EQ(out, sizeof(out), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    ws_accept_key("AAAAAAAAAAAAAAAAAAAAAA==", out);
    CHECK_MEM_EQ(out, sizeof(out), "ICX+Yqv66kxgM0FcWaLWlFLwTAI=");
}

int main(void)
{
    CHECK_RUN(the_accept_key_is_rfc_6455s);
    return check_summary();
}
