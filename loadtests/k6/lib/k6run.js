// What the k6 scripts share: reading -e variables, durations and stages, and one
// iteration that sends the request lib/mix.js describes (their common options,
// the run's tags among them, are lib/options.js's).
// This module imports k6 and so runs only under k6 (test_mix.mjs stubs it).

import http from 'k6/http';
import { check } from 'k6';
import { createMix } from './mix.js';

// __ENV[name], or fallback when unset or empty.
/** @param {string} name @param {string} fallback @returns {string} */
export function env(name, fallback) {
  const v = __ENV[name];
  return v === undefined || v === '' ? fallback : v;
}

/** @param {string} name @param {number} fallback @returns {number} */
export function envInt(name, fallback, min = 1) {
  const raw = env(name, String(fallback));
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** @param {string} name @param {number} fallback @returns {number} */
export function envNumber(name, fallback) {
  const raw = env(name, String(fallback));
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${raw}"`);
  return n;
}

export function baseUrl() {
  return env('BASE_URL', 'http://127.0.0.1:8080').replace(/\/+$/, '');
}

// "1h2m3s", "90s", "1.5m", "250ms" -> seconds
export function parseDuration(text) {
  const s = String(text).trim();
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let used = 0;
  let m;
  while ((m = re.exec(s)) !== null) {
    if (m.index !== used) break;
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : m[2] === 's' ? n : n / 1000;
    used = re.lastIndex;
  }
  if (!s || used !== s.length) throw new Error(`bad duration "${text}" (use e.g. 30s, 2m, 1m30s)`);
  return total;
}

// "2m:1000,3m:1000,30s:0" -> [{ duration: '2m', target: 1000 }, ...]
/** @param {string} text @returns {{ duration: string, target: number }[]} */
export function parseStages(text) {
  const stages = String(text).split(',').map((part) => {
    const [duration, target] = part.trim().split(':');
    const t = Number(target);
    if (!Number.isInteger(t) || t < 0) throw new Error(`bad stage "${part}" (use duration:target, e.g. 2m:1000)`);
    parseDuration(duration);
    return { duration, target: t };
  });
  if (!stages.length) throw new Error('STAGES is empty');
  return stages;
}

// Target VUs of a ramping-vus scenario at `seconds` after its start.
export function targetAt(stages, seconds, startVUs = 0) {
  let from = startVUs;
  let t = 0;
  for (const st of stages) {
    const d = parseDuration(st.duration);
    if (seconds <= t + d) return d === 0 ? st.target : Math.round(from + ((st.target - from) * (seconds - t)) / d);
    t += d;
    from = st.target;
  }
  return from;
}

// One k6 iteration: draw a request from the mix, send it, check its status.
// opts: { maxId, timeout, query } (query is appended to every path, e.g. "below=100000")
/**
 * @param {object} spec the parsed mixes.json
 * @param {string} mode
 * @param {{ maxId?: number, timeout?: string, query?: string }} [opts]
 * @returns {() => import('k6/http').RefinedResponse<'none'>}
 */
export function makeIteration(spec, mode, opts = {}) {
  const url = baseUrl();
  const next = createMix(spec, mode, { maxId: opts.maxId });
  const timeout = opts.timeout;
  const query = opts.query;
  return function iteration() {
    const d = next({ title: `Note from k6 vu ${__VU} iter ${__ITER}` });
    /** @type {import('k6/http').RefinedParams<'none'>} */
    const params = { tags: { name: d.name } };
    if (d.body !== null) params.headers = { 'Content-Type': 'application/json' };
    if (timeout) params.timeout = timeout;
    const path = query ? `${d.path}${d.path.includes('?') ? '&' : '?'}${query}` : d.path;
    const res = http.request(d.method, url + path, d.body, params);
    check(res, { [`${d.name} is ${d.expectedStatus}`]: (r) => r.status === d.expectedStatus });
    return res;
  };
}
