// The Express 5 notes app that notesd is compared with.
//
// One file, one process, default settings. It runs unchanged on all three
// runtimes, from this folder, after `npm ci`:
//
//   node server.js
//   bun server.js
//   deno run -A server.js
//
// Environment:
//   DB_URL        PostgreSQL connection string (libpq URL)
//   PORT          HTTP port of the app                 (8080)
//   HOST          address both ports listen on         (0.0.0.0)
//   METRICS_PORT  port of /metrics, /healthz, /readyz  (9091)
//   POOL_MAX      pg pool size                         (20)
//   STATIC_DIR    folder served under /static          (./static, a link to loadtests/static)
//
// The metrics port speaks plain node:http and exposes the same metric names
// as notesd itself, so one dashboard reads both.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import express from 'express';
import pg from 'pg';

const TAGS = ['js', 'ts', 'node', 'bun', 'deno', 'postgres', 'http', 'perf'];

const PORT = Number(process.env.PORT || 8080);
const HOST = process.env.HOST || '0.0.0.0';
const METRICS_PORT = Number(process.env.METRICS_PORT || 9091);
const POOL_MAX = Number(process.env.POOL_MAX || 20);
const STATIC_DIR = process.env.STATIC_DIR || './static';
const PRIMES_DEFAULT = 100000;
const PRIMES_LIMIT = 10000000;

// ---------------------------------------------------------------- runtime

function detectRuntime() {
  if (globalThis.Bun) return { name: 'bun', version: String(globalThis.Bun.version) };
  if (globalThis.Deno) return { name: 'deno', version: String(globalThis.Deno.version.deno) };
  return { name: 'node', version: String(process.versions.node) };
}
const RUNTIME = detectRuntime();
const START_TIME_SECONDS = Date.now() / 1000 - process.uptime();

// ---------------------------------------------------------------- metrics

function escapeLabel(v) {
  return String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(names, values, extra) {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i])}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(',')}}` : '';
}

// `le` as C's %g writes it (notesd's format): 5e-05, 0.0001, 2.5, 10.
function formatBound(v) {
  if (v !== 0 && Math.abs(v) < 1e-4) {
    const [mantissa, exponent] = v.toExponential().split('e');
    const sign = exponent[0] === '-' ? '-' : '+';
    return `${mantissa}e${sign}${exponent.replace(/^[+-]/, '').padStart(2, '0')}`;
  }
  return String(Number(v.toPrecision(6)));
}

function formatNumber(v) {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}

class Counter {
  constructor(name, help, labelNames = []) {
    Object.assign(this, { name, help, labelNames, series: new Map() });
  }
  inc(values = [], by = 1) {
    const key = values.join('\u0000');
    const s = this.series.get(key);
    if (s) s.value += by;
    else this.series.set(key, { values, value: by });
  }
  render(out) {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`);
    if (!this.labelNames.length && !this.series.size) out.push(`${this.name} 0`);
    for (const s of this.series.values()) {
      out.push(`${this.name}${labelText(this.labelNames, s.values)} ${formatNumber(s.value)}`);
    }
  }
}

class Gauge {
  // read() returns a number, or a list of [labelValues, number]
  constructor(name, help, read, labelNames = []) {
    Object.assign(this, { name, help, read, labelNames });
  }
  render(out) {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`);
    const v = this.read();
    const rows = Array.isArray(v) ? v : [[[], v]];
    for (const [values, value] of rows) {
      out.push(`${this.name}${labelText(this.labelNames, values)} ${formatNumber(value)}`);
    }
  }
}

class Histogram {
  constructor(name, help, buckets, labelNames = []) {
    Object.assign(this, { name, help, buckets, labelNames, series: new Map() });
  }
  init(values = []) {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      s = { values, counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    return s;
  }
  observe(values, v) {
    const s = this.init(values);
    for (let i = 0; i < this.buckets.length; i++) {
      if (v <= this.buckets[i]) { s.counts[i]++; break; }
    }
    s.sum += v;
    s.count++;
  }
  render(out) {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    if (!this.labelNames.length) this.init([]);
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i];
        const le = `le="${formatBound(this.buckets[i])}"`;
        out.push(`${this.name}_bucket${labelText(this.labelNames, s.values, le)} ${cumulative}`);
      }
      out.push(`${this.name}_bucket${labelText(this.labelNames, s.values, 'le="+Inf"')} ${s.count}`);
      out.push(`${this.name}_sum${labelText(this.labelNames, s.values)} ${formatNumber(s.sum)}`);
      out.push(`${this.name}_count${labelText(this.labelNames, s.values)} ${s.count}`);
    }
  }
}

// The same bounds as notesd, so every runtime has the same `le` values.
const FINE_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const HTTP_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.003, 0.005, 0.01, 0.025, 0.03, 0.05, 0.1, 0.25, 0.3, 0.5, 1, 1.5, 2.5, 5, 10];
const LAG_BUCKETS = FINE_BUCKETS;
const DB_BUCKETS = FINE_BUCKETS;
const STATEMENTS = ['get_note', 'list_by_tag', 'insert_note', 'update_note'];

// Event loop delay: a 100 ms interval, and how late each tick fires.
const lagHistogram = new Histogram('notes_eventloop_delay_seconds',
  'How late a 100 ms interval timer fired, per tick.', LAG_BUCKETS);
// The newest 4096 samples, and how far each reader (address and User-Agent) has read
// them, so that two scrapers do not take each other's samples (as notesd does).
const LAG_KEEP = 4096;
const LAG_READERS = 8;
const lagRing = new Array(LAG_KEEP).fill(0);
let lagTaken = 0;
const lagReaders = new Map(); // reader -> samples taken when it last read
let lagWindow = { min: 0, max: 0, mean: 0, p50: 0, p90: 0, p99: 0 };
let lastTick = performance.now();
setInterval(() => {
  const now = performance.now();
  const d = Math.max(0, now - lastTick - 100) / 1000;
  lastTick = now;
  lagHistogram.observe([], d);
  lagRing[lagTaken++ % LAG_KEEP] = d;
}, 100);

function rank(sorted, q) {
  const i = Math.max(0, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.min(i, sorted.length - 1)];
}

// Summarises the samples this reader has not seen (the newest LAG_KEEP at most).
function rollLagWindow(reader) {
  const seen = lagReaders.has(reader) ? lagReaders.get(reader) : 0;
  lagReaders.delete(reader); // re-inserted last: the Map's order is the order of reads
  lagReaders.set(reader, lagTaken);
  if (lagReaders.size > LAG_READERS) lagReaders.delete(lagReaders.keys().next().value);
  const s = [];
  for (let i = Math.max(seen, lagTaken - LAG_KEEP); i < lagTaken; i++) s.push(lagRing[i % LAG_KEEP]);
  if (!s.length) {
    lagWindow = { min: 0, max: 0, mean: 0, p50: 0, p90: 0, p99: 0 };
    return;
  }
  s.sort((a, b) => a - b);
  let sum = 0;
  for (const v of s) sum += v;
  lagWindow = {
    min: s[0], max: s[s.length - 1], mean: sum / s.length,
    p50: rank(s, 0.5), p90: rank(s, 0.9), p99: rank(s, 0.99),
  };
}

const LAG_STATS = {
  min: 'Smallest', max: 'Largest', mean: 'Mean', p50: 'Median', p90: '90th percentile', p99: '99th percentile',
};
const lagGauges = Object.entries(LAG_STATS).map(([k, what]) => new Gauge(
  `notes_eventloop_lag_${k}_seconds`,
  `${what} event loop delay over the ticks since this reader's previous scrape (0 when there were none).`,
  () => lagWindow[k]));

const dbQuery = new Histogram('notes_db_query_duration_seconds',
  'Time of one query on an acquired connection, by statement.', DB_BUCKETS, ['statement']);
for (const s of STATEMENTS) dbQuery.init([s]);
const dbAcquire = new Histogram('notes_db_pool_acquire_duration_seconds',
  'Time spent waiting for a pool connection before a query.', DB_BUCKETS);
const dbConnErrors = new Counter('notes_db_connection_errors_total',
  'Errors of pooled database connections: pool error events and failed acquisitions.');

const httpRequests = new Counter('http_requests_total',
  'Requests answered, by method, route template and status (0: client left first).',
  ['method', 'path', 'status_code']);
const httpDuration = new Histogram('http_request_duration_seconds',
  'Time from the first middleware to the end of the response.', HTTP_BUCKETS,
  ['method', 'path', 'status_code']);
let inFlight = 0;

// ---------------------------------------------------------------- database

const pool = new pg.Pool({ connectionString: process.env.DB_URL, max: POOL_MAX });
pool.on('error', () => { dbConnErrors.inc(); });

// pool.connect() and client.query() apart, so the wait for a connection is measured.
async function query(statement, text, values) {
  const t0 = performance.now();
  let client;
  try {
    client = await pool.connect();
  } catch (err) {
    dbConnErrors.inc();
    throw err;
  } finally {
    dbAcquire.observe([], (performance.now() - t0) / 1000);
  }
  const t1 = performance.now();
  let broken;
  try {
    return await client.query(text, values);
  } catch (err) {
    // a server-side error (with SQLSTATE) leaves the connection usable
    if (!err || !err.code) broken = err || true;
    throw err;
  } finally {
    client.release(broken);
    dbQuery.observe([statement], (performance.now() - t1) / 1000);
  }
}

const COLUMNS = 'id, title, body, tag, created_at';

// ---------------------------------------------------------------- app

const ROUTES = new Set(['/notes/:id', '/notes', '/json', '/', '/status', '/primes']);
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

function routeOf(req, originalPath) {
  const p = req.route && req.route.path;
  if (typeof p === 'string' && ROUTES.has(p)) return p;
  if (originalPath === '/static' || originalPath.startsWith('/static/')) return '/static';
  return 'other';
}

const app = express();

// status_code "0": the client left before the response was complete (as notesd counts it)
const CLIENT_LEFT = '0';

app.use((req, res, next) => {
  const t0 = performance.now();
  const originalPath = req.path;
  let done = false;
  inFlight++;
  const record = (status) => {
    if (done) return;
    done = true;
    inFlight--;
    const labels = [METHODS.has(req.method) ? req.method : 'other', routeOf(req, originalPath), status];
    httpRequests.inc(labels);
    httpDuration.observe(labels, (performance.now() - t0) / 1000);
  };
  res.on('finish', () => record(String(res.statusCode)));
  res.on('close', () => record(res.writableFinished ? String(res.statusCode) : CLIENT_LEFT));
  next();
});

app.use(express.json());

app.get('/notes/:id', async (req, res) => {
  const { rows } = await query('get_note', `select ${COLUMNS} from notes where id = $1`, [req.params.id]);
  rows.length ? res.json(rows[0]) : res.sendStatus(404);
});

app.get('/notes', async (req, res) => {
  const { rows } = await query('list_by_tag',
    `select ${COLUMNS} from notes where tag = $1 order by id desc limit 20`, [req.query.tag]);
  res.json(rows);
});

function noteFields(body) {
  if (!body || typeof body !== 'object') return null;
  const { title, body: text, tag } = body;
  if (typeof title !== 'string' || typeof text !== 'string' || typeof tag !== 'string') return null;
  return [title, text, tag];
}

app.post('/notes', async (req, res) => {
  const fields = noteFields(req.body);
  if (!fields) return res.sendStatus(400);
  const { rows } = await query('insert_note',
    `insert into notes (title, body, tag, created_at) values ($1, $2, $3, now()) returning ${COLUMNS}`, fields);
  res.status(201).json(rows[0]);
});

app.put('/notes/:id', async (req, res) => {
  const fields = noteFields(req.body);
  if (!fields) return res.sendStatus(400);
  const { rows } = await query('update_note',
    `update notes set title = $1, body = $2, tag = $3 where id = $4 returning ${COLUMNS}`, [...fields, req.params.id]);
  rows.length ? res.json(rows[0]) : res.sendStatus(404);
});

// no database: one note-shaped object per request, so only the runtime and Express are measured
app.get('/json', (req, res) => {
  const id = 1 + Math.floor(Math.random() * 200000), tag = TAGS[id % 8];
  res.json({ id, title: `Note ${id} about ${tag}`, body: 'Seeded note body for the JS test. '.repeat(4), tag, created_at: new Date().toISOString() });
});

app.get('/', (req, res) => {
  res.send('Hello World!');
});

app.get('/status', (req, res) => {
  res.json({ status: 'ok' });
});

// CPU-bound on purpose: counts primes below N by trial division, synchronously.
function countPrimesBelow(n) {
  let count = 0;
  for (let i = 2; i < n; i++) {
    let prime = true;
    for (let d = 2; d * d <= i; d++) {
      if (i % d === 0) { prime = false; break; }
    }
    if (prime) count++;
  }
  return count;
}

app.get('/primes', (req, res) => {
  const raw = req.query.below;
  const below = raw === undefined ? PRIMES_DEFAULT : Number(raw);
  if (!Number.isInteger(below) || below < 0 || below > PRIMES_LIMIT) return res.sendStatus(400);
  res.json({ below, count: countPrimesBelow(below) });
});

app.use('/static', express.static(STATIC_DIR));

// ---------------------------------------------------------------- metrics port

// process_heap_bytes means what it means for notesd and for prom-client's
// default metrics on Linux: the data segment, VmData, not the JavaScript heap
// (that is nodejs_heap_size_used_bytes). A small /proc read per scrape, as
// prom-client does; no sample where /proc is missing.
function vmDataRows() {
  try {
    const m = /^VmData:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? [[[], Number(m[1]) * 1024]] : [];
  } catch {
    return [];
  }
}

const gauges = [
  new Gauge('notes_db_pool_connections', 'Connections the pool holds, busy or idle (pool.totalCount).', () => pool.totalCount),
  new Gauge('notes_db_pool_idle_connections', 'Idle connections in the pool (pool.idleCount).', () => pool.idleCount),
  new Gauge('notes_db_pool_waiting_requests', 'Queries waiting for a pool connection (pool.waitingCount).', () => pool.waitingCount),
  new Gauge('notes_db_pool_max_connections', 'Configured pool size.', () => POOL_MAX),
  new Gauge('http_requests_in_flight', 'HTTP requests being handled now.', () => inFlight),
  new Gauge('process_resident_memory_bytes', 'Resident set size in bytes.', () => process.memoryUsage().rss),
  new Gauge('process_heap_bytes', 'Process heap size in bytes (VmData from /proc/self/status, as prom-client reports it on Linux).', vmDataRows),
  new Gauge('nodejs_heap_size_used_bytes', 'Used JavaScript heap in bytes (process.memoryUsage().heapUsed).', () => process.memoryUsage().heapUsed),
  new Gauge('nodejs_heap_size_total_bytes', 'JavaScript heap reserved by the engine in bytes (process.memoryUsage().heapTotal).', () => process.memoryUsage().heapTotal),
  new Gauge('process_start_time_seconds', 'Start time of the process since the Unix epoch in seconds.', () => START_TIME_SECONDS),
  new Gauge('notes_build_info', 'Build and runtime of this server; version is the runtime version, h2o_version and libpq_version are empty here.',
    () => [[[RUNTIME.version, RUNTIME.name, '', ''], 1]], ['version', 'runtime', 'h2o_version', 'libpq_version']),
];

function cpuSeconds() {
  try {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  } catch {
    return 0;
  }
}

function renderMetrics(reader) {
  rollLagWindow(reader);
  const out = [];
  lagHistogram.render(out);
  for (const g of lagGauges) g.render(out);
  for (const g of gauges) g.render(out);
  dbQuery.render(out);
  dbAcquire.render(out);
  dbConnErrors.render(out);
  httpRequests.render(out);
  httpDuration.render(out);
  out.push('# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.',
    '# TYPE process_cpu_seconds_total counter',
    `process_cpu_seconds_total ${formatNumber(cpuSeconds())}`);
  return out.join('\n') + '\n';
}

function ready() {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), 1000);
    pool.query('select 1').then(() => resolve(true), () => resolve(false)).finally(() => clearTimeout(timer));
  });
}

const metricsServer = http.createServer(async (req, res) => {
  const path = (req.url || '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, HEAD' });
    return res.end('method not allowed\n');
  }
  if (path === '/metrics') {
    const text = renderMetrics(`${req.socket.remoteAddress} ${req.headers['user-agent'] || ''}`);
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    return res.end(req.method === 'HEAD' ? undefined : text);
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    return res.end('ok\n');
  }
  if (path === '/readyz') {
    const ok = await ready();
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' });
    return res.end(ok ? 'ready\n' : 'database not reachable\n');
  }
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('not found\n');
});

// ---------------------------------------------------------------- start and stop

const appServer = app.listen(PORT, HOST, () => {
  console.log(`notes peer (${RUNTIME.name} ${RUNTIME.version}) listening on ${HOST}:${PORT}, metrics on ${HOST}:${METRICS_PORT}`);
});
metricsServer.listen(METRICS_PORT, HOST);

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: shutting down`);
  const force = setTimeout(() => process.exit(0), 5000);
  appServer.close(() => {
    metricsServer.close();
    pool.end().finally(() => { clearTimeout(force); process.exit(0); });
  });
  if (typeof appServer.closeAllConnections === 'function') appServer.closeAllConnections();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
