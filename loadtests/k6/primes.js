// primes.js: a CPU-bound endpoint under a ramp to 1,000 VUs.
//
// Reproduces round 2 of the runtime stress comparison: GET /primes (the
// server counts primes below 100,000 by trial division, synchronously,
// about 12-13 ms of compute per request), k6 ramping to 1,000 virtual users,
// far past what one core can answer, to see how the backlog grows.
// Round 3 (6,000 VUs, 60 s timeout, breaking point) is breaking.js.
// Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/primes.js
//
// Environment (-e NAME=value):
//   BASE_URL            server under test                  (http://127.0.0.1:8080)
//   STAGES              ramp as duration:target,...        (2m:1000,3m:1000,30s:0)
//   BELOW               send ?below=N (unset: the server's default, 100000)
//   TIMEOUT             per-request timeout                (60s)
//   GRACEFUL_RAMP_DOWN  time given to running requests when VUs go away (60s)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file

import { env, envInt, parseStages, makeIteration } from './lib/k6run.js';
import { httpOptions, rampingVus } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const STAGES = parseStages(env('STAGES', '2m:1000,3m:1000,30s:0'));
const TIMEOUT = env('TIMEOUT', '60s');
const BELOW = env('BELOW', '') === '' ? '' : `below=${envInt('BELOW', 100000, 0)}`;

export const options = httpOptions('primes', { primes: rampingVus(STAGES, '60s') });

const iteration = makeIteration(SPEC, 'primes', { timeout: TIMEOUT, query: BELOW });

export default function () {
  iteration();
}

export function handleSummary(data) {
  const peak = Math.max(...STAGES.map((s) => s.target));
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `primes: ramp to ${peak} VUs against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
  });
}
