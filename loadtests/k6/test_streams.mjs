// Tests of the streaming k6 scripts (ws-echo.js, ws-feed.js, sse.js), run with
// Node's test runner and stand-ins for k6's modules (no k6 needed):
//
//   node --test loadtests/k6/test_streams.mjs
//
// A stand-in WebSocket plays the server's side from notesd's documented
// behaviour (an echo; a feed of numbered messages, then a close with 1000), so
// each script's counters can be checked against what it was sent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

const STUBS = {
  k6: 'export const check = (res, sets) => { for (const [n, f] of Object.entries(sets)) globalThis.__k6.checks.push([n, f(res)]); return true; }; export default { check };',
  'k6/http': 'const get = (url, params) => globalThis.__k6.get(url, params); export { get }; export default { get };',
  'k6/metrics': 'export class Trend { constructor(name) { this.name = name; } add(v) { (globalThis.__k6.metrics[this.name] ||= []).push(v); } }'
    + ' export class Counter extends Trend {}',
  'k6/websockets': 'export class WebSocket { constructor(url) { return globalThis.__k6.socket(url); } }',
};
const HOOKS = `
const STUBS = ${JSON.stringify(STUBS)};
export async function resolve(specifier, context, next) {
  if (Object.hasOwn(STUBS, specifier)) return { url: 'k6-stub:' + specifier, shortCircuit: true };
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.startsWith('k6-stub:')) return { format: 'module', source: STUBS[url.slice(8)], shortCircuit: true };
  return next(url, context);
}`;
register(`data:text/javascript,${encodeURIComponent(HOOKS)}`);

// A socket whose server side is `serve(url, socket)`; events carry k6's fields.
function fakeSocket(url, serve) {
  const listeners = {};
  let now = 1000;
  const sock = {
    url, sent: [], closedWith: null,
    addEventListener(name, fn) { (listeners[name] ||= []).push(fn); },
    emit(name, extra = {}) { now += 0.25; for (const fn of listeners[name] || []) fn({ type: name, timestamp: now, ...extra }); },
    send(data) { sock.sent.push(data); serve.onSend(sock, data); },
    close(code) { sock.closedWith = code; sock.emit('close', { code }); },
  };
  queueMicrotask(() => serve.onOpen(sock));
  return sock;
}

let loads = 0;
async function loadScript(file, envVars, serve, getBody) {
  const state = { metrics: {}, checks: [], sockets: [], gets: [] };
  globalThis.__ENV = { ...envVars };
  globalThis.__VU = 2;
  globalThis.__ITER = 5;
  globalThis.open = (p) => readFileSync(join(HERE, p), 'utf8');
  globalThis.__k6 = {
    ...state,
    socket(url) { const s = fakeSocket(url, serve); state.sockets.push(s); return s; },
    get(url, params) { state.gets.push({ url, params }); return { status: 200, body: getBody(url) }; },
  };
  Object.assign(state, globalThis.__k6);
  loads++;
  const mod = await import(`${pathToFileURL(join(HERE, file)).href}?load=${loads}`);
  return { mod, state: globalThis.__k6 };
}

const settle = () => new Promise((r) => setTimeout(r, 10));
const count = (state, name) => (state.metrics[name] || []).reduce((a, b) => a + b, 0);

test('ws-echo.js: MESSAGES messages of SIZE bytes, one after each echo, then a close with 1000', async () => {
  const echo = { onOpen: (s) => s.emit('open'), onSend: (s, d) => queueMicrotask(() => s.emit('message', { data: d })) };
  const { mod, state } = await loadScript('ws-echo.js', { BASE_URL: 'http://127.0.0.1:9000/', MESSAGES: '7', SIZE: '40' }, echo);
  assert.equal(mod.options.scenarios.echo.iterations, 10);
  mod.default();
  await settle();
  const s = state.sockets[0];
  assert.equal(s.url, 'ws://127.0.0.1:9000/ws/echo');
  assert.equal(s.sent.length, 7);
  assert.ok(s.sent.every((m) => m.length === 40));
  assert.equal(new Set(s.sent).size, 7);
  assert.equal(s.closedWith, 1000);
  assert.equal(count(state, 'notesd_ws_echoed'), 7);
  assert.equal(count(state, 'notesd_ws_mismatched'), 0);
  assert.equal(count(state, 'notesd_ws_close_1000'), 1);
  assert.equal(state.metrics.notesd_ws_echo_rtt.length, 7);
});

test('ws-echo.js: a server that closes first (1008) is counted by its code', async () => {
  let n = 0;
  const strict = {
    onOpen: (s) => s.emit('open'),
    onSend: (s, d) => queueMicrotask(() => (++n <= 2 ? s.emit('message', { data: d }) : s.emit('close', { code: 1008 }))),
  };
  const { mod, state } = await loadScript('ws-echo.js', { MESSAGES: '5', QUERY: 'max_messages=2' }, strict);
  mod.default();
  await settle();
  assert.equal(state.sockets[0].url, 'ws://127.0.0.1:8080/ws/echo?max_messages=2');
  assert.equal(count(state, 'notesd_ws_echoed'), 2);
  assert.equal(count(state, 'notesd_ws_close_1008'), 1);
  assert.equal(count(state, 'notesd_ws_close_1000'), 0);
});

test('ws-feed.js: latency from sent_us, gaps in seq, the close', async () => {
  const feed = {
    onOpen: (s) => {
      for (const seq of [1, 2, 4, 5]) s.emit('message', { data: JSON.stringify({ seq, of: 6, sent_us: 1000 * 1000 + seq * 1000 - 250, late_us: 0, pad: 'x' }) });
      s.emit('close', { code: 1000 });
    },
    onSend: () => {},
  };
  const { mod, state } = await loadScript('ws-feed.js', { RATE: '100', COUNT: '6', SIZE: '256' }, feed);
  assert.deepEqual(mod.options.thresholds, { notesd_ws_feed_gaps: ['count==0'] });
  mod.default();
  await settle();
  assert.equal(state.sockets[0].url, 'ws://127.0.0.1:8080/ws/feed?rate=100&count=6&size=256');
  assert.equal(count(state, 'notesd_ws_feed_received'), 4);
  assert.equal(count(state, 'notesd_ws_feed_gaps'), 2); // 3, and 6 after the last
  assert.equal(count(state, 'notesd_ws_close_1000'), 1);
  assert.ok(state.metrics.notesd_ws_feed_latency.every((v) => v >= 0 && v < 2));
});

test('sse.js: every event checked byte for byte, and the spacing by the server\'s clock', async () => {
  const body = (n, gapUs) => Array.from({ length: n }, (_, i) => `id: ${i + 1}\ndata: {"id":${i + 1},"of":${n},"sent_us":${1764606000000000 + i * gapUs}}\n\n`).join('');
  const { mod, state } = await loadScript('sse.js', { COUNT: '4', DELAY_MS: '50' }, null, () => body(4, 50000));
  assert.equal(mod.parseEvents(body(2, 1)).length, 2);
  assert.deepEqual(mod.parseEvents(body(2, 1).replace('id: 2', 'id: 3')), []);
  assert.deepEqual(mod.parseEvents(body(2, 1).slice(0, -1)), []);
  mod.default();
  assert.match(state.gets[0].url, /\/sse\?count=4&delay_ms=50&jitter=0$/);
  assert.equal(count(state, 'notesd_sse_events'), 4);
  assert.deepEqual(state.checks.map(([, ok]) => ok), [true, true, true]);
  // events closer than the schedule allows fail the check
  const early = await loadScript('sse.js', { COUNT: '4', DELAY_MS: '50' }, null, () => body(4, 10000));
  early.mod.default();
  assert.deepEqual(early.state.checks.map(([n, ok]) => [n, ok]).at(-1), ['spaced as asked', false]);
});

test('sse.js with LINES: /stream/:n, every line', async () => {
  const lines = (n) => Array.from({ length: n }, (_, i) => `{"id":${i + 1},"of":${n}}\n`).join('');
  const { mod, state } = await loadScript('sse.js', { LINES: '3' }, null, () => lines(3));
  mod.default();
  assert.match(state.gets[0].url, /\/stream\/3$/);
  assert.equal(count(state, 'notesd_stream_lines'), 3);
  assert.deepEqual(state.checks.map(([, ok]) => ok), [true, true]);
});
