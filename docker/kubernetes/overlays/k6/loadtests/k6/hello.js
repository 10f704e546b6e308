// hello.js: Express "Hello World!" with a fixed number of requests.
//
// Reproduces the hello-world comparison: 1,000 warm-up requests, then
// 1,000,000 requests over 100 concurrent connections, GET / answering
// "Hello World!". The warm-up is its own scenario; the measured scenario
// starts WARMUP_WINDOW after it, and the summary reports the measured part
// separately (metrics tagged scenario:measure). Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtests/k6/hello.js
//   k6 run -e ITERATIONS=100000 loadtests/k6/hello.js                  # a shorter run
//
// Environment (-e NAME=value):
//   BASE_URL       server under test                          (http://127.0.0.1:8080)
//   WARMUP         warm-up requests                           (1000)
//   WARMUP_VUS     warm-up concurrency                        (VUS)
//   WARMUP_WINDOW  longest the warm-up may take; the measured
//                  scenario starts this long after the start  (10s)
//   ITERATIONS     measured requests                          (1000000)
//   VUS            measured concurrency                       (100)
//   MAX_DURATION   longest the measured scenario may take     (30m)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file

import { env, envInt, parseDuration, makeIteration } from './lib/k6run.js';
import { httpOptions, sharedIterations, STRICT_THRESHOLDS } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const VUS = envInt('VUS', 100);
const ITERATIONS = envInt('ITERATIONS', 1000000);
const WARMUP = envInt('WARMUP', 1000);
const WARMUP_VUS = envInt('WARMUP_VUS', VUS);
const WARMUP_WINDOW = env('WARMUP_WINDOW', '10s');
const MAX_DURATION = env('MAX_DURATION', '30m');
parseDuration(WARMUP_WINDOW);

export const options = httpOptions('hello', {
  warmup: sharedIterations(WARMUP_VUS, WARMUP, WARMUP_WINDOW, { gracefulStop: '0s' }),
  measure: sharedIterations(VUS, ITERATIONS, MAX_DURATION, { startTime: WARMUP_WINDOW }),
}, {
  thresholds: {
    ...STRICT_THRESHOLDS,
    // always true; they make k6 report the measured scenario on its own
    'http_req_duration{scenario:measure}': ['max>=0'],
    'http_reqs{scenario:measure}': ['count>=0'],
  },
});

const iteration = makeIteration(SPEC, 'hello');

export default function () {
  iteration();
}

export function handleSummary(data) {
  const measured = data.metrics['http_reqs{scenario:measure}'];
  const seconds = data.state.testRunDurationMs / 1000 - parseDuration(WARMUP_WINDOW);
  const lines = [];
  if (measured && seconds > 0) {
    lines.push(`measured: ${measured.values.count} requests in ~${seconds.toFixed(1)} s, ~${(measured.values.count / seconds).toFixed(0)} req/s`);
  }
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `hello: ${WARMUP} warm-up + ${ITERATIONS} requests at ${VUS} VUs against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
    extraLines: lines,
  });
}
