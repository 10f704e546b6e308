// Tests of the load-test mixes, run with Node's test runner (no k6 needed):
//
//   node --test loadtests/k6/test_mix.mjs
//
// - loadtests/mixes.json holds the shares of the original test;
// - lib/mix.js draws them (within 1 point over 100,000 draws) and builds
//   well-formed requests;
// - loadtests/wrk/notes.lua declares the same shares, paths and bodies;
// - the k6 scripts, loaded with stand-ins for the k6 modules, build the
//   options the comparison used (their shared part from lib/options.js, which
//   no script spells out again) and send what the mix describes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createMix, drawKind, describe, pick, validateSpec, modeNames } from './lib/mix.js';
import { textSummary, summaryOutputs, failedThresholds } from './lib/summary.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const SPEC = JSON.parse(readFileSync(join(ROOT, 'mixes.json'), 'utf8'));
const LUA = readFileSync(join(ROOT, 'wrk', 'notes.lua'), 'utf8');

const TAGS = ['js', 'ts', 'node', 'bun', 'deno', 'postgres', 'http', 'perf'];
const NOTE_BODY = 'Seeded note body for the JS test. '.repeat(4);
const READ = ['get_note', 'list_by_tag'];
const WRITE = ['insert_note', 'update_note'];
const DRAWS = 100000;
const TOLERANCE = 1; // percentage points

// Small deterministic generator (32-bit LCG, top bits used) so the share
// tests do not depend on luck.
function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

function shares(mode, seed = 1) {
  const random = seeded(seed);
  const counts = {};
  for (let i = 0; i < DRAWS; i++) {
    const kind = drawKind(SPEC, mode, random);
    counts[kind] = (counts[kind] || 0) + 1;
  }
  const pct = {};
  for (const [k, c] of Object.entries(counts)) pct[k] = (100 * c) / DRAWS;
  return pct;
}

function near(actual, expected, what) {
  assert.ok(Math.abs((actual || 0) - expected) <= TOLERANCE, `${what}: ${(actual || 0).toFixed(2)}% is not within ${TOLERANCE} of ${expected}%`);
}

// ------------------------------------------------------------ the spec

test('mixes.json holds the shares, tags and body of the original test', () => {
  validateSpec(SPEC);
  assert.deepEqual(SPEC.tags, TAGS);
  assert.equal(SPEC.maxId, 200000);
  assert.equal(SPEC.noteBody.repeat(SPEC.noteBodyRepeat), NOTE_BODY);
  assert.deepEqual(SPEC.modes.read, [['get_note', 70], ['list_by_tag', 30]]);
  assert.deepEqual(SPEC.modes.write, [['insert_note', 50], ['update_note', 50]]);
  assert.deepEqual(SPEC.modes.mixed, [['read', 80], ['write', 20]]);
  assert.deepEqual(SPEC.modes.json, [['get_json', 100]]);
  const named = Object.fromEntries(Object.values(SPEC.requests).map((r) => [r.name, [r.method, r.expectedStatus]]));
  assert.deepEqual(named['GET /notes/:id'], ['GET', 200]);
  assert.deepEqual(named['GET /notes?tag='], ['GET', 200]);
  assert.deepEqual(named['POST /notes'], ['POST', 201]);
  assert.deepEqual(named['PUT /notes/:id'], ['PUT', 200]);
  assert.deepEqual(named['GET /json'], ['GET', 200]);
});

test('every mode adds up to 100 percent', () => {
  for (const mode of modeNames(SPEC)) {
    const total = SPEC.modes[mode].reduce((s, [, w]) => s + w, 0);
    assert.equal(total, 100, mode);
  }
});

test('validateSpec rejects broken mixes', () => {
  const copy = () => JSON.parse(JSON.stringify(SPEC));
  let s = copy(); s.modes.read[0][1] = 0;
  assert.throws(() => validateSpec(s), /weight/);
  s = copy(); s.modes.read.push(['nope', 5]);
  assert.throws(() => validateSpec(s), /unknown "nope"/);
  s = copy(); s.modes.loop = [['loop', 100]];
  assert.throws(() => validateSpec(s), /nest/);
  s = copy(); s.requests.read = s.requests.get_note;
  assert.throws(() => validateSpec(s), /both a mode and a request/);
  assert.throws(() => createMix(SPEC, 'nope'), /unknown mode "nope"/);
  assert.throws(() => createMix(SPEC, 'read', { maxId: 0 }), /MAX_ID/);
});

test('pick covers the whole range of r', () => {
  const entries = [['a', 70], ['b', 30]];
  assert.equal(pick(entries, 0), 'a');
  assert.equal(pick(entries, 0.6999), 'a');
  assert.equal(pick(entries, 0.7), 'b');
  assert.equal(pick(entries, 0.999999), 'b');
});

// ------------------------------------------------------------ shares

test('read: 70% GET /notes/{id}, 30% GET /notes?tag=', () => {
  const p = shares('read', 11);
  near(p.get_note, 70, 'get_note');
  near(p.list_by_tag, 30, 'list_by_tag');
  assert.deepEqual(Object.keys(p).sort(), [...READ].sort());
});

test('write: 50% POST /notes, 50% PUT /notes/{id}', () => {
  const p = shares('write', 22);
  near(p.insert_note, 50, 'insert_note');
  near(p.update_note, 50, 'update_note');
  assert.deepEqual(Object.keys(p).sort(), [...WRITE].sort());
});

test('mixed: 80% read mix, 20% write mix', () => {
  const p = shares('mixed', 33);
  const read = READ.reduce((s, k) => s + (p[k] || 0), 0);
  const write = WRITE.reduce((s, k) => s + (p[k] || 0), 0);
  near(read, 80, 'read share');
  near(write, 20, 'write share');
  near(p.get_note, 56, 'get_note');
  near(p.list_by_tag, 24, 'list_by_tag');
  near(p.insert_note, 10, 'insert_note');
  near(p.update_note, 10, 'update_note');
});

test('json and the single-request modes send only their request', () => {
  for (const [mode, kind] of [['json', 'get_json'], ['hello', 'get_hello'], ['status', 'get_status'], ['primes', 'get_primes'], ['static', 'get_static']]) {
    assert.deepEqual(shares(mode, 44), { [kind]: 100 }, mode);
  }
});

test('shares hold with Math.random too', () => {
  const next = createMix(SPEC, 'mixed');
  let writes = 0;
  for (let i = 0; i < DRAWS; i++) if (next().body !== null) writes++;
  near((100 * writes) / DRAWS, 20, 'writes with Math.random');
});

// ------------------------------------------------------------ descriptors

const EXPECTED = {
  get_note: { method: 'GET', name: 'GET /notes/:id', expectedStatus: 200, re: /^\/notes\/(\d+)$/ },
  list_by_tag: { method: 'GET', name: 'GET /notes?tag=', expectedStatus: 200, re: /^\/notes\?tag=([a-z]+)$/ },
  insert_note: { method: 'POST', name: 'POST /notes', expectedStatus: 201, re: /^\/notes$/ },
  update_note: { method: 'PUT', name: 'PUT /notes/:id', expectedStatus: 200, re: /^\/notes\/(\d+)$/ },
  get_json: { method: 'GET', name: 'GET /json', expectedStatus: 200, re: /^\/json$/ },
  get_hello: { method: 'GET', name: 'GET /', expectedStatus: 200, re: /^\/$/ },
  get_status: { method: 'GET', name: 'GET /status', expectedStatus: 200, re: /^\/status$/ },
  get_primes: { method: 'GET', name: 'GET /primes', expectedStatus: 200, re: /^\/primes$/ },
  get_static: { method: 'GET', name: 'GET /static/app.min.js', expectedStatus: 200, re: /^\/static\/app\.min\.js$/ },
};

function assertWellFormed(d, maxId) {
  const want = EXPECTED[d.kind];
  assert.ok(want, `unknown kind ${d.kind}`);
  assert.deepEqual(Object.keys(d).sort(), ['body', 'expectedStatus', 'kind', 'method', 'name', 'path']);
  assert.equal(d.method, want.method);
  assert.equal(d.name, want.name);
  assert.equal(d.expectedStatus, want.expectedStatus);
  const m = want.re.exec(d.path);
  assert.ok(m, `${d.kind}: bad path ${d.path}`);
  if (d.kind === 'get_note' || d.kind === 'update_note') {
    const id = Number(m[1]);
    assert.ok(Number.isInteger(id) && id >= 1 && id <= maxId, `id ${id} outside 1..${maxId}`);
  }
  if (d.kind === 'list_by_tag') assert.ok(TAGS.includes(m[1]), `tag ${m[1]}`);
  if (d.method === 'POST' || d.method === 'PUT') {
    assert.equal(typeof d.body, 'string');
    const b = JSON.parse(d.body);
    assert.deepEqual(Object.keys(b), ['title', 'body', 'tag']);
    assert.match(b.title, /^Note from k6 vu \d+ iter \d+$/);
    assert.equal(b.body, NOTE_BODY);
    assert.ok(TAGS.includes(b.tag), `tag ${b.tag}`);
  } else {
    assert.equal(d.body, null);
  }
}

test('every descriptor is well-formed, in every mode', () => {
  for (const mode of modeNames(SPEC)) {
    const next = createMix(SPEC, mode, { random: seeded(7) });
    for (let i = 0; i < 20000; i++) assertWellFormed(next({ title: `Note from k6 vu 3 iter ${i}` }), SPEC.maxId);
  }
});

test('ids span 1..MAX_ID and tags all 8, evenly enough', () => {
  const random = seeded(99);
  const ids = new Set();
  const tags = new Map();
  for (let i = 0; i < 20000; i++) {
    const d = describe(SPEC, 'get_note', { random, maxId: 10, title: 'x' });
    ids.add(Number(d.path.split('/')[2]));
    const t = JSON.parse(describe(SPEC, 'insert_note', { random, maxId: 10, title: 'x' }).body).tag;
    tags.set(t, (tags.get(t) || 0) + 1);
  }
  assert.deepEqual([...ids].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.deepEqual([...tags.keys()].sort(), [...TAGS].sort());
  for (const [t, c] of tags) near((100 * c) / 20000, 12.5, `tag ${t}`);
  assert.equal(describe(SPEC, 'get_note', { random: () => 0, maxId: 200000, title: 'x' }).path, '/notes/1');
  assert.equal(describe(SPEC, 'get_note', { random: () => 0.9999999999, maxId: 200000, title: 'x' }).path, '/notes/200000');
});

// ------------------------------------------------------------ the wrk script agrees

function luaTable(name) {
  const m = new RegExp(`^local ${name} = \\{\\n([\\s\\S]*?)\\n\\}`, 'm').exec(LUA);
  assert.ok(m, `notes.lua has no table ${name}`);
  return m[1].split('\n').filter((l) => l.trim() && !l.trim().startsWith('--'));
}

test('notes.lua declares the same shares as mixes.json', () => {
  const mixes = {};
  for (const line of luaTable('MIXES')) {
    const m = /^\s*(\w+)\s*=\s*\{(.*)\},?\s*$/.exec(line);
    assert.ok(m, `unparsed MIXES line: ${line}`);
    mixes[m[1]] = [...m[2].matchAll(/\{\s*"(\w+)",\s*(\d+(?:\.\d+)?)\s*\}/g)].map((e) => [e[1], Number(e[2])]);
  }
  assert.deepEqual(mixes, SPEC.modes);
});

test('notes.lua declares the same requests, tags, ids and body', () => {
  const requests = {};
  for (const line of luaTable('REQUESTS')) {
    const m = /^\s*(\w+)\s*=\s*\{\s*"(\w+)",\s*"([^"]+)",\s*(\d+)\s*\},?\s*$/.exec(line);
    assert.ok(m, `unparsed REQUESTS line: ${line}`);
    requests[m[1]] = { method: m[2], path: m[3], expectedStatus: Number(m[4]) };
  }
  const fromSpec = Object.fromEntries(Object.entries(SPEC.requests).map(([k, r]) => [k, { method: r.method, path: r.path, expectedStatus: r.expectedStatus }]));
  assert.deepEqual(requests, fromSpec);

  const tags = /^local TAGS = \{([^}]*)\}/m.exec(LUA);
  assert.ok(tags, 'notes.lua has no TAGS');
  assert.deepEqual([...tags[1].matchAll(/"([^"]*)"/g)].map((t) => t[1]), SPEC.tags);

  const maxId = /os\.getenv\("MAX_ID"\) or "(\d+)"/.exec(LUA);
  assert.ok(maxId, 'notes.lua has no MAX_ID default');
  assert.equal(Number(maxId[1]), SPEC.maxId);

  const body = /^local NOTE_BODY = string\.rep\("([^"]*)", (\d+)\)/m.exec(LUA);
  assert.ok(body, 'notes.lua has no NOTE_BODY');
  assert.equal(body[1], SPEC.noteBody);
  assert.equal(Number(body[2]), SPEC.noteBodyRepeat);

  assert.match(LUA, /os\.getenv\("MODE"\) or "read"/);
  assert.match(LUA, /\["Content-Type"\] = "application\/json"/);
  assert.match(LUA, /WRK_JSON \{"mode":"%s","requests":%d,"duration_s":%.3f,"rps":%.1f,"p50_ms":%.3f,"p95_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"non2xx":%d,"socket_errors":%d\}/);
});

// ------------------------------------------------------------ summary

const SAMPLE = {
  state: { testRunDurationMs: 180000 },
  metrics: {
    http_reqs: { type: 'counter', contains: 'default', values: { count: 540000, rate: 3000 } },
    http_req_duration: { type: 'trend', contains: 'time', values: { avg: 10, 'p(50)': 9, 'p(95)': 40, 'p(99)': 50, max: 120 } },
    http_req_failed: { type: 'rate', contains: 'default', values: { rate: 0, passes: 0, fails: 540000 }, thresholds: { 'rate==0': { ok: true } } },
    checks: { type: 'rate', contains: 'default', values: { rate: 0.99, passes: 99, fails: 1 }, thresholds: { 'rate==1': { ok: false } } },
    vus: { type: 'gauge', contains: 'default', values: { value: 100, min: 100, max: 100 } },
  },
  root_group: { name: '', groups: [], checks: [{ name: 'GET /json is 200', passes: 99, fails: 1 }] },
};

test('textSummary shows rates, latency, checks and failed thresholds', () => {
  const text = textSummary(SAMPLE, { title: 'notes json', extraLines: ['extra line'] });
  assert.match(text, /== notes json \(180\.0 s\)/);
  assert.match(text, /http_reqs\s+540000 \(3000\.0\/s\)/);
  assert.match(text, /http_req_duration\s+avg=10\.00ms p\(50\)=9\.00ms p\(95\)=40\.00ms p\(99\)=50\.00ms max=120\.00ms/);
  assert.match(text, /FAIL GET \/json is 200: 99 passed, 1 failed/);
  assert.match(text, /thresholds FAILED: checks: rate==1/);
  assert.match(text, /extra line/);
  assert.deepEqual(failedThresholds(SAMPLE), ['checks: rate==1']);
});

test('summaryOutputs writes JSON only when a file is named', () => {
  assert.deepEqual(Object.keys(summaryOutputs(SAMPLE, '')), ['stdout']);
  const out = summaryOutputs(SAMPLE, 'out/read.json');
  assert.deepEqual(Object.keys(out).sort(), ['out/read.json', 'stdout']);
  assert.deepEqual(JSON.parse(out['out/read.json']), { ...SAMPLE, notesd_test: { tags: {} } });
});

test('summaryOutputs carries the script\'s tags under notesd_test', () => {
  const tags = { runtime: 'bun', round: '2', mode: 'read' };
  const out = summaryOutputs(SAMPLE, 'out/read.json', { tags });
  const written = JSON.parse(out['out/read.json']);
  assert.deepEqual(written.notesd_test, { tags });
  assert.deepEqual(written.metrics, SAMPLE.metrics);
});

// ------------------------------------------------------------ the k6 scripts, with stand-ins for k6

const STUBS = {
  k6: 'export const check = (...a) => globalThis.__k6.check(...a); export const sleep = () => {}; export default { check };',
  'k6/http': 'const request = (...a) => globalThis.__k6.request(...a); export { request }; export default { request };',
  'k6/execution': 'export default { get instance() { return { vusActive: globalThis.__k6.vusActive }; } };',
  'k6/metrics': 'export class Trend { constructor(name) { this.name = name; } add(v) { globalThis.__k6.metric(this.name, v); } }'
    + ' export class Counter extends Trend {} export class Rate extends Trend {} export class Gauge extends Trend {}',
  // the streaming scripts' options only (test_streams.mjs runs them against stand-ins of notesd)
  'k6/websockets': 'export class WebSocket {}',
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

let loads = 0;
// Loads a fresh copy of a k6 script with the given -e variables; returns its
// exports and what its iterations sent.
async function loadScript(file, envVars = {}) {
  const sent = [];
  const checks = [];
  const metrics = [];
  globalThis.__ENV = { ...envVars };
  globalThis.__VU = 7;
  globalThis.__ITER = 3;
  globalThis.open = (p) => readFileSync(join(HERE, p), 'utf8');
  globalThis.__k6 = {
    vusActive: 42,
    request(method, url, body, params) {
      sent.push({ method, url, body, params });
      return { status: globalThis.__k6.status ?? (method === 'POST' ? 201 : 200), error_code: 0 };
    },
    check(res, sets) {
      for (const [name, fn] of Object.entries(sets)) checks.push([name, fn(res)]);
      return true;
    },
    metric(name, v) { metrics.push([name, v]); },
  };
  loads++;
  const mod = await import(`${pathToFileURL(join(HERE, file)).href}?load=${loads}`);
  return { mod, sent, checks, metrics };
}

const COMMON = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'p(50)', 'p(95)', 'p(99)', 'p(99.9)', 'max'],
  systemTags: ['status', 'method', 'name', 'scenario', 'expected_response', 'check'],
};

test('notes.js: the comparison\'s options by default', async () => {
  const { mod } = await loadScript('notes.js');
  assert.deepEqual(mod.options, {
    scenarios: { read: { executor: 'constant-vus', vus: 100, duration: '3m' } },
    tags: { mode: 'read' },
    ...COMMON,
    thresholds: { http_req_failed: ['rate==0'], checks: ['rate==1'] },
  });
});

test('notes.js: every knob comes from -e', async () => {
  const { mod, sent, checks } = await loadScript('notes.js', {
    BASE_URL: 'http://127.0.0.1:9999/', MODE: 'write', VUS: '5', DURATION: '10s', RT: 'bun', ROUND: '2', MAX_ID: '50',
    TESTID: 'bun-write-2',
  });
  assert.deepEqual(mod.options.scenarios, { write: { executor: 'constant-vus', vus: 5, duration: '10s' } });
  assert.deepEqual(mod.options.tags, { runtime: 'bun', round: '2', mode: 'write', testid: 'bun-write-2' });
  for (let i = 0; i < 200; i++) mod.default();
  assert.equal(sent.length, 200);
  for (const s of sent) {
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:9999\/notes(\/\d+)?$/);
    assert.ok(['POST', 'PUT'].includes(s.method));
    assert.deepEqual(s.params.headers, { 'Content-Type': 'application/json' });
    assert.ok(['POST /notes', 'PUT /notes/:id'].includes(s.params.tags.name));
    assert.equal(JSON.parse(s.body).title, 'Note from k6 vu 7 iter 3');
    const id = s.url.split('/')[4];
    if (id) assert.ok(Number(id) >= 1 && Number(id) <= 50);
  }
  assert.ok(checks.every(([name, ok]) => ok && /^(POST \/notes is 201|PUT \/notes\/:id is 200)$/.test(name)), JSON.stringify(checks.slice(0, 3)));
});

test('notes.js: read requests carry no body and no Content-Type', async () => {
  const { mod, sent } = await loadScript('notes.js', { MODE: 'read' });
  for (let i = 0; i < 100; i++) mod.default();
  for (const s of sent) {
    assert.equal(s.method, 'GET');
    assert.equal(s.body, null);
    assert.equal(s.params.headers, undefined);
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:8080\/notes(\/\d+|\?tag=[a-z]+)$/);
  }
});

test('notes.js: bad settings stop the script at load', async () => {
  await assert.rejects(loadScript('notes.js', { MODE: 'nope' }), /unknown mode/);
  await assert.rejects(loadScript('notes.js', { VUS: 'many' }), /VUS must be an integer/);
  await assert.rejects(loadScript('notes.js', { MAX_ID: '0' }), /MAX_ID must be an integer/);
});

test('notes.js: handleSummary prints text and writes JSON when SUMMARY is set', async () => {
  let { mod } = await loadScript('notes.js');
  assert.deepEqual(Object.keys(mod.handleSummary(SAMPLE)), ['stdout']);
  ({ mod } = await loadScript('notes.js', { SUMMARY: 'out/x.json' }));
  const out = mod.handleSummary(SAMPLE);
  assert.deepEqual(JSON.parse(out['out/x.json']), { ...SAMPLE, notesd_test: { tags: { mode: 'read' } } });
  assert.match(out.stdout, /notes read: 100 VUs for 3m/);
});

test('notes-open.js: constant arrival rate, no dropped iterations', async () => {
  let { mod } = await loadScript('notes-open.js');
  assert.deepEqual(mod.options.scenarios, {
    read: { executor: 'constant-arrival-rate', rate: 1000, timeUnit: '1s', duration: '3m', preAllocatedVUs: 100, maxVUs: 1000 },
  });
  assert.deepEqual(mod.options.thresholds, { http_req_failed: ['rate==0'], checks: ['rate==1'], dropped_iterations: ['count==0'] });
  assert.equal(mod.options.discardResponseBodies, true);
  ({ mod } = await loadScript('notes-open.js', { MODE: 'mixed', RATE: '250', PRE_VUS: '20', MAX_VUS: '40', DURATION: '1m' }));
  assert.deepEqual(mod.options.scenarios, {
    mixed: { executor: 'constant-arrival-rate', rate: 250, timeUnit: '1s', duration: '1m', preAllocatedVUs: 20, maxVUs: 40 },
  });
});

test('notes.js and notes-open.js draw the same mix', async () => {
  // one at a time: the k6 stand-ins record into the latest load
  const a = await loadScript('notes.js', { MODE: 'mixed' });
  for (let i = 0; i < 20000; i++) a.mod.default();
  const b = await loadScript('notes-open.js', { MODE: 'mixed' });
  for (let i = 0; i < 20000; i++) b.mod.default();
  const writes = (sent) => (100 * sent.filter((s) => s.body !== null).length) / sent.length;
  near(writes(a.sent), 20, 'notes.js writes');
  near(writes(b.sent), 20, 'notes-open.js writes');
});

test('status.js: GET /status ramping to 10,000 VUs; stages from -e', async () => {
  let { mod, sent } = await loadScript('status.js');
  const sc = mod.options.scenarios.status;
  assert.equal(sc.executor, 'ramping-vus');
  assert.equal(sc.startVUs, 0);
  assert.equal(Math.max(...sc.stages.map((s) => s.target)), 10000);
  mod.default();
  assert.equal(sent[0].url, 'http://127.0.0.1:8080/status');
  ({ mod } = await loadScript('status.js', { STAGES: '10s:50, 5s:0' }));
  assert.deepEqual(mod.options.scenarios.status.stages, [{ duration: '10s', target: 50 }, { duration: '5s', target: 0 }]);
  await assert.rejects(loadScript('status.js', { STAGES: '10s' }), /bad stage/);
  await assert.rejects(loadScript('status.js', { STAGES: 'soon:10' }), /bad duration/);
});

test('primes.js: GET /primes ramping to 1,000 VUs', async () => {
  let { mod, sent } = await loadScript('primes.js');
  assert.equal(Math.max(...mod.options.scenarios.primes.stages.map((s) => s.target)), 1000);
  mod.default();
  assert.equal(sent[0].url, 'http://127.0.0.1:8080/primes');
  ({ mod, sent } = await loadScript('primes.js', { BELOW: '5000' }));
  mod.default();
  assert.equal(sent[0].url, 'http://127.0.0.1:8080/primes?below=5000');
});

test('breaking.js: 6,000 VUs, 60 s timeout, failure threshold records the breaking point', async () => {
  const { mod, sent, metrics } = await loadScript('breaking.js');
  assert.equal(Math.max(...mod.options.scenarios.breaking.stages.map((s) => s.target)), 6000);
  assert.deepEqual(mod.options.thresholds.http_req_failed, [{ threshold: 'rate<0.2', abortOnFail: true, delayAbortEval: '10s' }]);
  mod.default();
  assert.equal(sent[0].params.timeout, '60s');
  assert.deepEqual(metrics, []);
  globalThis.__k6.status = 0;
  mod.default();
  delete globalThis.__k6.status;
  assert.deepEqual(metrics, [['vus_at_failure', 42]]);
  const broken = {
    state: { testRunDurationMs: 150000 },
    metrics: {
      http_req_failed: { type: 'rate', values: { rate: 0.21, passes: 21, fails: 79 }, thresholds: { 'rate<0.2': { ok: false } } },
      vus_at_failure: { type: 'trend', values: { min: 2900, max: 3000 } },
    },
    root_group: { checks: [] },
  };
  // 150 s into 5m:6000 is half way: 3000 VUs
  assert.match(mod.handleSummary(broken).stdout, /BREAKING POINT: failure rate 21\.0% >= 20% at 150 s, ramp target then ~3000 VUs/);
  assert.match(mod.handleSummary(broken).stdout, /first failed request with 2900 VUs active/);
});

test('hello.js: 1,000 warm-up requests, then 1,000,000 at 100 VUs', async () => {
  let { mod, sent } = await loadScript('hello.js');
  const { warmup, measure } = mod.options.scenarios;
  assert.deepEqual(warmup, { executor: 'shared-iterations', vus: 100, iterations: 1000, maxDuration: '10s', gracefulStop: '0s' });
  assert.deepEqual(measure, { executor: 'shared-iterations', vus: 100, iterations: 1000000, startTime: '10s', maxDuration: '30m' });
  mod.default();
  assert.equal(sent[0].url, 'http://127.0.0.1:8080/');
  ({ mod } = await loadScript('hello.js', { ITERATIONS: '5000', VUS: '10', WARMUP: '50', WARMUP_WINDOW: '3s' }));
  assert.equal(mod.options.scenarios.measure.iterations, 5000);
  assert.equal(mod.options.scenarios.measure.vus, 10);
  assert.equal(mod.options.scenarios.measure.startTime, '3s');
  assert.equal(mod.options.scenarios.warmup.iterations, 50);
  const out = mod.handleSummary({
    state: { testRunDurationMs: 13000 },
    metrics: { 'http_reqs{scenario:measure}': { type: 'counter', values: { count: 5000, rate: 384 } } },
    root_group: { checks: [] },
  });
  assert.match(out.stdout, /measured: 5000 requests in ~10\.0 s, ~500 req\/s/);
});

test('static.js: GET /static/app.min.js, 1,000,000 requests at VUS', async () => {
  let { mod, sent } = await loadScript('static.js', { VUS: '300' });
  assert.deepEqual(mod.options.scenarios.static, { executor: 'shared-iterations', vus: 300, iterations: 1000000, maxDuration: '30m' });
  mod.default();
  assert.equal(sent[0].url, 'http://127.0.0.1:8080/static/app.min.js');
  assert.equal(sent[0].params.tags.name, 'GET /static/app.min.js');
});

test('the options every script shares come from lib/options.js, spelled out nowhere else', async () => {
  const http = ['notes.js', 'notes-open.js', 'status.js', 'primes.js', 'breaking.js', 'hello.js', 'static.js'];
  const streams = ['ws-echo.js', 'ws-feed.js', 'sse.js'];
  for (const file of http) {
    const { mod } = await loadScript(file, { RT: 'node', ROUND: '1', TESTID: 'node-1' });
    const { discardResponseBodies, systemTags, summaryTrendStats } = mod.options;
    assert.deepEqual({ discardResponseBodies, systemTags, summaryTrendStats: summaryTrendStats.filter((s) => s !== 'min') },
      COMMON, file);
    assert.deepEqual(mod.options.tags, { runtime: 'node', round: '1', mode: mod.options.tags.mode, testid: 'node-1' }, file);
    if (file !== 'breaking.js') {   // breaking's failures are expected up to the breaking point
      assert.deepEqual(mod.options.thresholds.http_req_failed, ['rate==0'], file);
      assert.deepEqual(mod.options.thresholds.checks, ['rate==1'], file);
    }
  }
  for (const file of streams) {
    const { mod } = await loadScript(file, { RT: 'node' });
    assert.deepEqual(mod.options.summaryTrendStats, COMMON.summaryTrendStats, file);
    assert.equal(mod.options.tags.runtime, 'node', file);
    assert.equal(mod.options.discardResponseBodies, undefined, file);   // they read every body
  }
  // the blocks that used to be repeated in each script
  const shared = [/discardResponseBodies/, /systemTags/, /executor: 'ramping-vus'/, /executor: 'shared-iterations'/,
    /http_req_failed: \['rate==0'\]/, /runTags\(/, /SYSTEM_TAGS/];
  for (const file of [...http, ...streams]) {
    const source = readFileSync(join(HERE, file), 'utf8');
    for (const re of shared) assert.doesNotMatch(source, re, `${file} spells out ${re} (lib/options.js has it)`);
  }
});

test('every script writes its options.tags under notesd_test in the summary JSON', async () => {
  const data = { ...SAMPLE, metrics: { ...SAMPLE.metrics, vus_at_failure: { type: 'trend', values: { min: 1 } } } };
  for (const file of ['notes.js', 'notes-open.js', 'status.js', 'primes.js', 'breaking.js', 'hello.js', 'static.js']) {
    const { mod } = await loadScript(file, { SUMMARY: 'out/s.json', RT: 'deno', ROUND: '3', TESTID: 'deno-3' });
    const written = JSON.parse(mod.handleSummary(data)['out/s.json']);
    assert.deepEqual(written.notesd_test, { tags: mod.options.tags }, file);
    assert.equal(written.notesd_test.tags.runtime, 'deno', file);
    assert.equal(written.notesd_test.tags.round, '3', file);
    // testid joins the script's tags (a `k6 run --tag` would replace them all)
    assert.equal(written.notesd_test.tags.testid, 'deno-3', file);
  }
});
