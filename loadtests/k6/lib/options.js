// The options the k6 scripts share, so that each script's options block says only what
// is its own: its scenario, and any threshold beyond the common ones.
//
//   export const options = httpOptions(MODE, { [MODE]: { executor: 'constant-vus', ... } });
//   export const options = httpOptions('status', { status: rampingVus(STAGES, '30s') });
//
// Plain objects built with k6run.js's -e helpers; test_mix.mjs checks what each script
// ends up with, and that none spells these blocks out again.

import { env } from './k6run.js';

export const SUMMARY_TREND_STATS = ['avg', 'p(50)', 'p(95)', 'p(99)', 'p(99.9)', 'max'];
// no `url` tag: every /notes/{id} would become its own Prometheus series
export const SYSTEM_TAGS = ['status', 'method', 'name', 'scenario', 'expected_response', 'check'];

// The tags every sample of a run carries (runtime, round, mode, testid); unset
// RT, ROUND or TESTID are left out rather than sent empty.
// testid comes from -e TESTID (or the environment), not from `k6 run --tag
// testid=...`: a --tag on the command line replaces options.tags instead of
// adding to them, so samples pushed to Prometheus would lose runtime, mode and
// round, and with them every dashboard panel that selects runtime.
/** @returns {Record<string, string>} */
export function runTags(mode) {
  /** @type {Record<string, string>} */
  const tags = {};
  if (env('RT', '')) tags.runtime = env('RT', '');
  if (env('ROUND', '')) tags.round = env('ROUND', '');
  tags.mode = mode;
  if (env('TESTID', '')) tags.testid = env('TESTID', '');
  return tags;
}

// Any failed request, or a status other than the expected one, marks the run failed.
export const STRICT_THRESHOLDS = Object.freeze({ http_req_failed: ['rate==0'], checks: ['rate==1'] });

/**
 * The options of a script that sends the mixes' HTTP requests: its scenarios, the run's
 * tags (runtime, round, mode, testid), bodies discarded, the summary's trend stats, the
 * system tags without `url`, and STRICT_THRESHOLDS unless the script gives its own.
 * @param {string} mode the `mode` tag
 * @param {Record<string, import('k6/options').Scenario>} scenarios
 * @param {{ thresholds?: Record<string, import('k6/options').Threshold[]>, summaryTrendStats?: string[] }} [own]
 * @returns {import('k6/options').Options}
 */
export function httpOptions(mode, scenarios, own = {}) {
  return {
    scenarios,
    tags: runTags(mode),
    discardResponseBodies: true,
    summaryTrendStats: own.summaryTrendStats || SUMMARY_TREND_STATS,
    systemTags: SYSTEM_TAGS,
    thresholds: own.thresholds || { ...STRICT_THRESHOLDS },
  };
}

/**
 * The options of a streaming script (ws-echo.js, ws-feed.js, sse.js): it reads every
 * body and keeps k6's system tags; thresholds only when it has its own.
 * @param {string} mode the `mode` tag
 * @param {Record<string, import('k6/options').Scenario>} scenarios
 * @param {Record<string, import('k6/options').Threshold[]>} [thresholds]
 * @returns {import('k6/options').Options}
 */
export function streamOptions(mode, scenarios, thresholds) {
  /** @type {import('k6/options').Options} */
  const options = { scenarios, tags: runTags(mode), summaryTrendStats: SUMMARY_TREND_STATS };
  if (thresholds) options.thresholds = thresholds;
  return options;
}

/**
 * A ramp from 0 VUs through `stages`; VUs that go away give running requests
 * GRACEFUL_RAMP_DOWN (-e), else `rampDown`, to finish.
 * @param {{ duration: string, target: number }[]} stages
 * @param {string} rampDown
 * @returns {import('k6/options').Scenario}
 */
export function rampingVus(stages, rampDown) {
  return { executor: 'ramping-vus', startVUs: 0, stages, gracefulRampDown: env('GRACEFUL_RAMP_DOWN', rampDown) };
}

/**
 * `iterations` in all, shared by at most `vus` VUs (never more VUs than iterations),
 * within `maxDuration`; `more` adds to it (startTime, gracefulStop).
 * @param {number} vus
 * @param {number} iterations
 * @param {string} maxDuration
 * @param {{ startTime?: string, gracefulStop?: string }} [more]
 * @returns {import('k6/options').Scenario}
 */
export function sharedIterations(vus, iterations, maxDuration, more = {}) {
  return { executor: 'shared-iterations', vus: Math.min(vus, iterations), iterations, maxDuration, ...more };
}
