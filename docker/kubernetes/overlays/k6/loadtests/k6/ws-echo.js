// ws-echo.js: WebSocket echo against notesd's /ws/echo, with k6/websockets.
//
// Each VU opens one connection per iteration, sends MESSAGES messages of SIZE
// bytes one at a time (the next as soon as the echo of the last arrives),
// records each round trip, and closes with 1000. notesd counts every message
// and byte each way (notes_ws_messages_total, notes_ws_message_bytes_total)
// and every close by reason, so a run can be checked exactly: k6's
// ws_msgs_sent against the server's direction="received", ws_msgs_received
// against direction="sent", ws_sessions against notes_ws_connections_opened_total.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/ws-echo.js
//   k6 run -e QUERY=max_messages=5 -e MESSAGES=10 loadtests/k6/ws-echo.js   # notesd closes with 1008
//
// Environment (-e NAME=value):
//   BASE_URL    server under test (http:// or https://; ws:// or wss:// is used)  (http://127.0.0.1:8080)
//   VUS         virtual users, one connection each at a time                      (10)
//   ITERATIONS  connections in all, shared by the VUs                             (VUS)
//   MESSAGES    messages per connection                                            (100)
//   SIZE        bytes per message (text, ASCII)                                    (64)
//   QUERY       appended to /ws/echo?, e.g. max_messages=5                          ('')
//   MAX_DURATION  longest the run may take                                         (2m)
//   RT, ROUND tags; SUMMARY: write the summary data as JSON to this file
//
// Metrics of its own, beside k6's ws_* ones:
//   notesd_ws_echo_rtt       ms from sending a message to its echo (from the
//                            timestamps k6 puts on the events: the previous
//                            event's, as each message is sent from its handler)
//   notesd_ws_echoed         echoes that came back equal to what was sent
//   notesd_ws_mismatched     echoes that did not
//   notesd_ws_close_<code>   connections the server closed with that code
//                            (1000, 1001, 1008, 1009; "other" for the rest)

import { WebSocket } from 'k6/websockets';
import { Counter, Trend } from 'k6/metrics';
import { env, envInt, baseUrl } from './lib/k6run.js';
import { sharedIterations, streamOptions } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const VUS = envInt('VUS', 10);
const ITERATIONS = envInt('ITERATIONS', VUS);
const MESSAGES = envInt('MESSAGES', 100);
const SIZE = envInt('SIZE', 64, 0);
const QUERY = env('QUERY', '');
const URL = `${baseUrl().replace(/^http/, 'ws')}/ws/echo${QUERY ? `?${QUERY}` : ''}`;
const CLOSE_CODES = ['1000', '1001', '1008', '1009'];

const rtt = new Trend('notesd_ws_echo_rtt', true);
const echoed = new Counter('notesd_ws_echoed');
const mismatched = new Counter('notesd_ws_mismatched');
/** @type {Record<string, Counter>} */
const closes = {};
for (const code of [...CLOSE_CODES, 'other']) closes[code] = new Counter(`notesd_ws_close_${code}`);

export const options = streamOptions('ws-echo', {
  echo: sharedIterations(VUS, ITERATIONS, env('MAX_DURATION', '2m')),
});

// message k of a connection: SIZE bytes that say which it is, so an echo is checked exactly
/** @param {number} k @returns {string} */
export function message(k) {
  const head = `${__VU}:${__ITER}:${k}:`;
  return (head + 'x'.repeat(Math.max(0, SIZE - head.length))).slice(0, Math.max(SIZE, head.length));
}

// @types/k6 2.2.0 types the event name as an enum k6 does not export at run time: the
// names are the strings k6 documents
export default function () {
  const ws = new WebSocket(URL);
  let sent = 0;
  let last = 0;
  ws.addEventListener(/** @type {any} */ ('open'), (e) => {
    last = e.timestamp;
    ws.send(message(sent++));
  });
  ws.addEventListener(/** @type {any} */ ('message'), (e) => {
    rtt.add(e.timestamp - last);
    last = e.timestamp;
    const ev = /** @type {import('k6/websockets').MessageEvent} */ (e);
    if (ev.data === message(sent - 1)) echoed.add(1);
    else mismatched.add(1);
    if (sent < MESSAGES) ws.send(message(sent++));
    else ws.close(1000);
  });
  ws.addEventListener(/** @type {any} */ ('close'), (e) => {
    // k6's close event carries the server's code, though its type declares none
    const code = String(/** @type {any} */ (e).code);
    (closes[code] || closes.other).add(1);
  });
}

/** @param {any} data */
export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), { title: 'ws-echo', tags: options.tags });
}
