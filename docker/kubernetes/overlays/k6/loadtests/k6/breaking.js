// breaking.js: the CPU-bound endpoint pushed to its breaking point.
//
// Reproduces round 3 of the runtime stress comparison: GET /primes with a
// ramp to 6,000 VUs and a 60-second timeout per request, so a deep enough
// queue turns into real failures. The failure-rate threshold (20% of all
// requests by default) marks the breaking point and, unless ABORT=false,
// stops the test there. The summary records where it broke: the elapsed
// time, the VU target of the ramp at that time, and the number of active
// VUs whenever a request failed (metric vus_at_failure; its min is the
// first failure). Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/breaking.js
//
// Environment (-e NAME=value):
//   BASE_URL            server under test                  (http://127.0.0.1:8080)
//   STAGES              ramp as duration:target,...        (5m:6000,2m:6000,1m:0)
//   TIMEOUT             per-request timeout                (60s)
//   FAIL_RATE           failure rate that counts as broken (0.2)
//   ABORT               stop the test when it breaks       (true)
//   BELOW               send ?below=N (unset: the server's default, 100000)
//   GRACEFUL_RAMP_DOWN  time given to running requests when VUs go away (60s)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file

import exec from 'k6/execution';
import { Trend } from 'k6/metrics';
import { env, envInt, envNumber, parseStages, targetAt, makeIteration } from './lib/k6run.js';
import { httpOptions, rampingVus, SUMMARY_TREND_STATS } from './lib/options.js';
import { summaryOutputs, failedThresholds } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const STAGES = parseStages(env('STAGES', '5m:6000,2m:6000,1m:0'));
const TIMEOUT = env('TIMEOUT', '60s');
const FAIL_RATE = envNumber('FAIL_RATE', 0.2);
const ABORT = env('ABORT', 'true') !== 'false';
const BELOW = env('BELOW', '') === '' ? '' : `below=${envInt('BELOW', 100000, 0)}`;

const vusAtFailure = new Trend('vus_at_failure');

// its own thresholds: failures are expected, up to the breaking point
export const options = httpOptions('breaking', { breaking: rampingVus(STAGES, '60s') }, {
  summaryTrendStats: ['min', ...SUMMARY_TREND_STATS],
  thresholds: {
    http_req_failed: [{ threshold: `rate<${FAIL_RATE}`, abortOnFail: ABORT, delayAbortEval: '10s' }],
    vus_at_failure: ['min>=0'],
  },
});

const iteration = makeIteration(SPEC, 'primes', { timeout: TIMEOUT, query: BELOW });

export default function () {
  const res = iteration();
  if (res.error_code !== 0 || res.status !== 200) vusAtFailure.add(exec.instance.vusActive);
}

export function handleSummary(data) {
  const seconds = data.state.testRunDurationMs / 1000;
  const broke = failedThresholds(data).some((f) => f.startsWith('http_req_failed'));
  const failed = data.metrics.http_req_failed ? data.metrics.http_req_failed.values.rate : 0;
  const first = data.metrics.vus_at_failure ? data.metrics.vus_at_failure.values.min : undefined;
  const lines = [
    broke
      ? `BREAKING POINT: failure rate ${(100 * failed).toFixed(1)}% >= ${100 * FAIL_RATE}% at ${seconds.toFixed(0)} s, ramp target then ~${targetAt(STAGES, seconds)} VUs`
      : `no breaking point: failure rate ${(100 * failed).toFixed(1)}% stayed under ${100 * FAIL_RATE}%`,
    first === undefined ? 'no request failed' : `first failed request with ${first} VUs active`,
  ];
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `breaking: primes, ramp to ${Math.max(...STAGES.map((s) => s.target))} VUs, ${TIMEOUT} timeout`,
    extraLines: lines,
  });
}
