// End-of-test summary for handleSummary(): a short text table on stdout and,
// when a file name is given (-e SUMMARY=path), the full summary data as JSON.
// No k6 imports and no remote jslib, so it works offline and under Node.

const TREND_ORDER = ['avg', 'min', 'med', 'p(50)', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)', 'max'];

function fixed(v, digits) {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : String(v);
}

function isTimeMetric(name, metric) {
  return metric.contains === 'time' || /_duration|_waiting|_connecting|_blocked|_sending|_receiving|_handshaking/.test(name);
}

function formatTrend(name, metric) {
  const v = metric.values || {};
  const keys = TREND_ORDER.filter((k) => k in v).concat(Object.keys(v).filter((k) => !TREND_ORDER.includes(k)));
  const unit = isTimeMetric(name, metric) ? 'ms' : '';
  return keys.map((k) => `${k}=${fixed(v[k], 2)}${unit}`).join(' ');
}

function formatValues(name, metric) {
  const v = metric.values || {};
  switch (metric.type) {
    case 'trend':
      return formatTrend(name, metric);
    case 'rate':
      return `${fixed(100 * (v.rate || 0), 2)}% (${v.passes || 0} true, ${v.fails || 0} false)`;
    case 'counter':
      return `${v.count} (${fixed(v.rate, 1)}/s)`;
    case 'gauge':
      return `${v.value} (min ${v.min}, max ${v.max})`;
    default:
      return JSON.stringify(v);
  }
}

function thresholdMarks(metric) {
  const t = metric.thresholds;
  if (!t) return '';
  return ' ' + Object.entries(t).map(([expr, r]) => `[${r && r.ok ? 'ok' : 'FAILED'}: ${expr}]`).join(' ');
}

function collectChecks(group, out) {
  if (!group) return out;
  for (const c of group.checks || []) out.push(c);
  for (const g of group.groups || []) collectChecks(g, out);
  return out;
}

// Every threshold that failed, as "metric: expression".
export function failedThresholds(data) {
  const failed = [];
  for (const [name, metric] of Object.entries((data && data.metrics) || {})) {
    for (const [expr, r] of Object.entries(metric.thresholds || {})) {
      if (!(r && r.ok)) failed.push(`${name}: ${expr}`);
    }
  }
  return failed;
}

/**
 * @param {any} data k6's summary data
 * @param {{ title?: string, extraLines?: string[] }} [options]
 */
export function textSummary(data, { title = 'k6 run', extraLines = [] } = {}) {
  const lines = [];
  const state = (data && data.state) || {};
  const seconds = typeof state.testRunDurationMs === 'number' ? state.testRunDurationMs / 1000 : undefined;
  lines.push('', `== ${title}${seconds === undefined ? '' : ` (${fixed(seconds, 1)} s)`}`);

  const metrics = (data && data.metrics) || {};
  const names = Object.keys(metrics).sort();
  const width = names.reduce((w, n) => Math.max(w, n.length), 0);
  for (const name of names) {
    lines.push(`  ${name.padEnd(width)}  ${formatValues(name, metrics[name])}${thresholdMarks(metrics[name])}`);
  }

  const checks = collectChecks(data && data.root_group, []);
  if (checks.length) {
    lines.push('  checks:');
    for (const c of checks) lines.push(`    ${c.fails ? 'FAIL' : 'ok  '} ${c.name}: ${c.passes} passed, ${c.fails} failed`);
  }
  for (const l of extraLines) lines.push(`  ${l}`);

  const failed = failedThresholds(data);
  lines.push(failed.length ? `  thresholds FAILED: ${failed.join('; ')}` : '  thresholds: all ok', '');
  return lines.join('\n');
}

// The object handleSummary() returns: text on stdout, and the summary data as
// JSON in summaryFile when one is given. The JSON is k6's summary data plus one
// key of ours, "notesd_test": {"tags": the script's options.tags}: k6's summary
// data does not carry options.tags, and reconciling a run needs them (runtime,
// round, mode). Each script passes its options.tags as options.tags here.
/**
 * @param {any} data k6's summary data
 * @param {string} summaryFile
 * @param {{ title?: string, extraLines?: string[], tags?: Record<string, string> }} [options]
 * @returns {Record<string, string>}
 */
export function summaryOutputs(data, summaryFile, options = {}) {
  /** @type {Record<string, string>} */
  const out = { stdout: textSummary(data, options) };
  if (summaryFile) {
    out[summaryFile] = JSON.stringify({ ...data, notesd_test: { tags: options.tags || {} } }, null, 2);
  }
  return out;
}
