// status.js: a trivial endpoint under a ramp to 10,000 VUs.
//
// Reproduces round 1 of the runtime stress comparison: GET /status (a bare
// {"status":"ok"}), k6 ramping from 0 to 10,000 virtual users to find the
// throughput ceiling of the HTTP layer. Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/status.js
//   k6 run -e STAGES=30s:1000,1m:1000,10s:0 loadtests/k6/status.js     # a shorter ramp
//
// Environment (-e NAME=value):
//   BASE_URL            server under test                  (http://127.0.0.1:8080)
//   STAGES              ramp as duration:target,...        (2m:2500,3m:10000,2m:10000,30s:0)
//   GRACEFUL_RAMP_DOWN  time given to running requests when VUs go away (30s)
//   TIMEOUT             per-request timeout                (60s)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file
//
// Thresholds mark any failed request; they do not stop the ramp.

import { env, parseStages, makeIteration } from './lib/k6run.js';
import { httpOptions, rampingVus } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const STAGES = parseStages(env('STAGES', '2m:2500,3m:10000,2m:10000,30s:0'));
const TIMEOUT = env('TIMEOUT', '60s');

export const options = httpOptions('status', { status: rampingVus(STAGES, '30s') });

const iteration = makeIteration(SPEC, 'status', { timeout: TIMEOUT });

export default function () {
  iteration();
}

export function handleSummary(data) {
  const peak = Math.max(...STAGES.map((s) => s.target));
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `status: ramp to ${peak} VUs against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
  });
}
