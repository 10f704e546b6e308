// static.js: serving one static JavaScript file, a fixed number of times.
//
// Reproduces the file-serving comparison: one minified JavaScript file of
// about 88 KB (GET /static/app.min.js, loadtests/static/app.min.js, served
// from STATIC_DIR by the server), 1,000,000 requests in total at 10, 50, 100
// and 300 concurrent connections, one run per level. Run from the repository root:
//
//   for c in 10 50 100 300; do
//     k6 run -e BASE_URL=http://127.0.0.1:8080 -e VUS=$c -e SUMMARY=static-$c.json loadtests/k6/static.js
//   done
//
// Environment (-e NAME=value):
//   BASE_URL      server under test                 (http://127.0.0.1:8080)
//   VUS           concurrent connections             (100)
//   ITERATIONS    requests in total                  (1000000)
//   MAX_DURATION  longest the run may take           (30m)
//   RT, ROUND, TESTID tags; SUMMARY: write summary JSON to this file

import { env, envInt, makeIteration } from './lib/k6run.js';
import { httpOptions, sharedIterations } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const VUS = envInt('VUS', 100);
const ITERATIONS = envInt('ITERATIONS', 1000000);

export const options = httpOptions('static', {
  static: sharedIterations(VUS, ITERATIONS, env('MAX_DURATION', '30m')),
});

const iteration = makeIteration(SPEC, 'static');

export default function () {
  iteration();
}

export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `static: ${ITERATIONS} requests at ${VUS} VUs against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
  });
}
