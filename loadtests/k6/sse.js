// sse.js: notesd's /sse (Server-Sent Events) and /stream/:n, read with k6/http.
//
// k6 has no EventSource: k6/http hands a script the body once the response has
// ended, so this checks each stream whole rather than event by event. Each
// iteration GETs /sse?count=COUNT&delay_ms=DELAY_MS&jitter=JITTER and checks
// every event's bytes and ids (1..COUNT, in order), that the server spaced
// them as asked (from the sent_us each carries: the server's own clock), and
// that the whole stream took at least (COUNT - 1) * DELAY_MS. With LINES > 0
// it GETs /stream/LINES instead and checks every line.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/sse.js
//   k6 run -e VUS=100 -e COUNT=50 -e DELAY_MS=20 loadtests/k6/sse.js
//   k6 run -e LINES=100000 loadtests/k6/sse.js
//
// Environment (-e NAME=value):
//   BASE_URL    server under test                             (http://127.0.0.1:8080)
//   VUS         virtual users                                 (10)
//   ITERATIONS  streams in all, shared by the VUs             (VUS)
//   COUNT       events per stream (1..100000)                 (10)
//   DELAY_MS    ms between events (0..60000)                  (100)
//   JITTER      ms each event may move either way (0..60000)  (0)
//   LINES       /stream/LINES instead of /sse when above 0   (0)
//   RT, ROUND tags; SUMMARY: write the summary data as JSON to this file
//
// Metrics of its own: notesd_sse_events (events received, well-formed and in
// order), notesd_sse_gap (ms between consecutive events by the server's
// sent_us), notesd_stream_lines (lines of /stream/:n).

import http from 'k6/http';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { env, envInt, baseUrl } from './lib/k6run.js';
import { sharedIterations, streamOptions } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const VUS = envInt('VUS', 10);
const ITERATIONS = envInt('ITERATIONS', VUS);
const COUNT = envInt('COUNT', 10);
const DELAY_MS = envInt('DELAY_MS', 100, 0);
const JITTER = envInt('JITTER', 0, 0);
const LINES = envInt('LINES', 0, 0);

const events = new Counter('notesd_sse_events');
const gap = new Trend('notesd_sse_gap', true);
const lines = new Counter('notesd_stream_lines');
const EVENT = /^id: (\d+)\ndata: \{"id":(\d+),"of":(\d+),"sent_us":(\d+)\}$/;

export const options = streamOptions(LINES > 0 ? 'stream' : 'sse', {
  sse: sharedIterations(VUS, ITERATIONS, '10m'),
}, { checks: ['rate==1'] });

// The events of an SSE body, each checked to be what notesd sends; [] when a byte is off.
/** @param {string} body @returns {{ id: number, of: number, sentUs: number }[]} */
export function parseEvents(body) {
  if (!body.endsWith('\n\n')) return [];
  const out = [];
  for (const block of body.slice(0, -2).split('\n\n')) {
    const m = EVENT.exec(block);
    if (!m || m[1] !== m[2]) return [];
    out.push({ id: Number(m[1]), of: Number(m[3]), sentUs: Number(m[4]) });
  }
  return out;
}

function sse() {
  const url = `${baseUrl()}/sse?count=${COUNT}&delay_ms=${DELAY_MS}&jitter=${JITTER}`;
  const res = http.get(url, { tags: { name: 'GET /sse' }, timeout: `${Math.ceil((COUNT * (DELAY_MS + JITTER)) / 1000) + 30}s` });
  const got = parseEvents(String(res.body || ''));
  let inOrder = got.length === COUNT;
  for (let i = 0; i < got.length; i++) {
    if (got[i].id !== i + 1 || got[i].of !== COUNT) inOrder = false;
    if (i > 0) gap.add((got[i].sentUs - got[i - 1].sentUs) / 1000);
  }
  if (inOrder) events.add(got.length);
  const first = got.length ? got[0].sentUs : 0;
  const last = got.length ? got[got.length - 1].sentUs : 0;
  check(res, {
    'status 200': (r) => r.status === 200,
    'every event, in order': () => inOrder,
    // the server's own clock: never earlier than the schedule allows
    'spaced as asked': () => !inOrder || (last - first) / 1000 >= (COUNT - 1) * DELAY_MS - JITTER - 1,
  });
}

function stream() {
  const res = http.get(`${baseUrl()}/stream/${LINES}`, { tags: { name: 'GET /stream/:n' } });
  const body = String(res.body || '');
  const rows = body ? body.slice(0, -1).split('\n') : [];
  let exact = rows.length === LINES && (LINES === 0 || body.endsWith('\n'));
  for (let k = 0; exact && k < rows.length; k++) exact = rows[k] === `{"id":${k + 1},"of":${LINES}}`;
  if (exact) lines.add(rows.length);
  check(res, { 'status 200': (r) => r.status === 200, 'every line': () => exact });
}

export default function () {
  if (LINES > 0) stream();
  else sse();
}

/** @param {any} data */
export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), { title: LINES > 0 ? 'stream' : 'sse', tags: options.tags });
}
