// ws-feed.js: notesd's /ws/feed, a WebSocket on which the server sends on a
// schedule, read with k6/websockets.
//
// Each VU opens one connection per iteration and reads the feed to its end:
// COUNT messages of SIZE bytes, RATE per second, each carrying its sequence
// number and the server's wall clock when it was sent (sent_us), then the
// server's close with 1000. On the same host the clocks are one, so each
// message's delivery latency is k6's receive time minus sent_us, against the
// server's own clock; a gap in the sequence numbers is a message the server
// left out because the client was not reading (notes_ws_messages_skipped_total).
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/ws-feed.js
//   k6 run -e VUS=50 -e RATE=1000 -e COUNT=5000 loadtests/k6/ws-feed.js
//
// Environment (-e NAME=value):
//   BASE_URL    server under test                                  (http://127.0.0.1:8080)
//   VUS         virtual users, one connection each at a time      (10)
//   ITERATIONS  connections in all, shared by the VUs             (VUS)
//   RATE        messages per second (1..10000)                     (10)
//   COUNT       messages per connection (1..1000000)              (100)
//   SIZE        bytes per message (128..65536)                     (128)
//   MAX_DURATION  longest the run may take                         (10m)
//   RT, ROUND tags; SUMMARY: write the summary data as JSON to this file
//
// Metrics of its own, beside k6's ws_* ones:
//   notesd_ws_feed_latency   ms from the server's sent_us to k6's receive time
//   notesd_ws_feed_received  messages that arrived whole and in order
//   notesd_ws_feed_gaps      sequence numbers that never arrived
//   notesd_ws_close_<code>   connections the server closed with that code

import { WebSocket } from 'k6/websockets';
import { Counter, Trend } from 'k6/metrics';
import { env, envInt, baseUrl } from './lib/k6run.js';
import { sharedIterations, streamOptions } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const VUS = envInt('VUS', 10);
const ITERATIONS = envInt('ITERATIONS', VUS);
const RATE = envInt('RATE', 10);
const COUNT = envInt('COUNT', 100);
const SIZE = envInt('SIZE', 128);
const URL = `${baseUrl().replace(/^http/, 'ws')}/ws/feed?rate=${RATE}&count=${COUNT}&size=${SIZE}`;

const latency = new Trend('notesd_ws_feed_latency', true);
const received = new Counter('notesd_ws_feed_received');
const gaps = new Counter('notesd_ws_feed_gaps');
/** @type {Record<string, Counter>} */
const closes = {};
for (const code of ['1000', '1001', '1008', '1009', 'other']) closes[code] = new Counter(`notesd_ws_close_${code}`);

export const options = streamOptions('ws-feed', {
  feed: sharedIterations(VUS, ITERATIONS, env('MAX_DURATION', '10m')),
}, { notesd_ws_feed_gaps: ['count==0'] });

// @types/k6 2.2.0 types the event name as an enum k6 does not export at run time: the
// names are the strings k6 documents
export default function () {
  const ws = new WebSocket(URL);
  let next = 1;
  ws.addEventListener(/** @type {any} */ ('message'), (e) => {
    const ev = /** @type {import('k6/websockets').MessageEvent} */ (e);
    const m = JSON.parse(String(ev.data));
    latency.add(Math.max(0, ev.timestamp - m.sent_us / 1000));
    if (m.seq > next) gaps.add(m.seq - next);
    next = m.seq + 1;
    received.add(1);
  });
  ws.addEventListener(/** @type {any} */ ('close'), (e) => {
    const code = String(/** @type {any} */ (e).code);
    (closes[code] || closes.other).add(1);
    // messages after the last one that arrived, up to the feed's count, never came
    if (next <= COUNT) gaps.add(COUNT - next + 1);
  });
}

/** @param {any} data */
export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), { title: 'ws-feed', tags: options.tags });
}
