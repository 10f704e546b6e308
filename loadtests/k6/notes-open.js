// notes-open.js: the notes API under an open load model (constant arrival rate).
//
// Same request mixes as notes.js (loadtests/mixes.json, via lib/mix.js), but
// requests start at a fixed rate whether or not earlier ones have finished,
// so a slow server shows up as latency and dropped iterations instead of as
// a lower request rate (no coordinated omission). Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e MODE=read -e RATE=2000 loadtests/k6/notes-open.js
//
// Environment (-e NAME=value):
//   BASE_URL  server under test                       (http://127.0.0.1:8080)
//   MODE      read | write | mixed | json             (read)
//   RATE      requests started per second             (1000)
//   DURATION  test length                             (3m)
//   PRE_VUS   VUs allocated before the start          (100)
//   MAX_VUS   most VUs k6 may add to keep the rate    (1000)
//   MAX_ID    largest note id to ask for              (200000)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file
//
// Thresholds: any failed request, failed check or dropped iteration (k6 ran
// out of VUs to keep the rate) marks the run failed.

import { env, envInt, makeIteration } from './lib/k6run.js';
import { httpOptions, STRICT_THRESHOLDS } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const MODE = env('MODE', 'read');
const RATE = envInt('RATE', 1000);
const DURATION = env('DURATION', '3m');
const PRE_VUS = envInt('PRE_VUS', 100);
const MAX_VUS = envInt('MAX_VUS', 1000);
const MAX_ID = envInt('MAX_ID', SPEC.maxId);

export const options = httpOptions(MODE, {
  [MODE]: {
    executor: 'constant-arrival-rate',
    rate: RATE,
    timeUnit: '1s',
    duration: DURATION,
    preAllocatedVUs: PRE_VUS,
    maxVUs: Math.max(MAX_VUS, PRE_VUS),
  },
}, { thresholds: { ...STRICT_THRESHOLDS, dropped_iterations: ['count==0'] } });

const iteration = makeIteration(SPEC, MODE, { maxId: MAX_ID });

export default function () {
  iteration();
}

export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `notes ${MODE} (open model): ${RATE} req/s for ${DURATION} against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
  });
}
