// notes.js: the notes API under a closed load model (constant VUs).
//
// Reproduces the runtime comparison's k6 test: 100 virtual users for 3
// minutes per mode, against notesd or the Express peer (loadtests/peers).
//
//   read   70% GET /notes/{random id}, 30% GET /notes?tag={one of 8 tags}
//   write  50% POST /notes, 50% PUT /notes/{random id}
//   mixed  80% the read mix, 20% the write mix
//   json   GET /json (no database)
//
// The mixes come from loadtests/mixes.json (shared with notes-open.js and
// loadtests/wrk/notes.lua). Run from the repository root:
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e MODE=read loadtests/k6/notes.js
//   k6 run -e MODE=mixed -e RT=notesd -e ROUND=1 -e SUMMARY=out/mixed.json loadtests/k6/notes.js
//
// Environment (-e NAME=value):
//   BASE_URL  server under test            (http://127.0.0.1:8080)
//   MODE      read | write | mixed | json  (read)
//   VUS       virtual users                (100)
//   DURATION  test length                  (3m)
//   MAX_ID    largest note id to ask for   (200000, the seeded rows)
//   RT        runtime tag (e.g. notesd, node, bun, deno)
//   ROUND     round tag
//   TESTID    testid tag, one per run (the dashboards pick runs by it)
//   SUMMARY   write the summary data as JSON to this file
//
// Thresholds: any failed request or failed status check marks the run failed.

import { env, envInt, makeIteration } from './lib/k6run.js';
import { httpOptions } from './lib/options.js';
import { summaryOutputs } from './lib/summary.js';

const SPEC = JSON.parse(open('../mixes.json'));
const MODE = env('MODE', 'read');
const VUS = envInt('VUS', 100);
const DURATION = env('DURATION', '3m');
const MAX_ID = envInt('MAX_ID', SPEC.maxId);

export const options = httpOptions(MODE, {
  [MODE]: { executor: 'constant-vus', vus: VUS, duration: DURATION },
});

const iteration = makeIteration(SPEC, MODE, { maxId: MAX_ID });

export default function () {
  iteration();
}

export function handleSummary(data) {
  return summaryOutputs(data, env('SUMMARY', ''), {
    tags: options.tags,
    title: `notes ${MODE}: ${VUS} VUs for ${DURATION} against ${env('BASE_URL', 'http://127.0.0.1:8080')}`,
  });
}
