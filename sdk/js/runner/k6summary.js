// k6's end-of-test summary for a script's `handleSummary(data)`: loadhost's summary (what
// `--summary-json` writes) in the shape k6 hands to handleSummary (`metrics` with `type`,
// `contains`, `values` and `thresholds`, `root_group` with its checks, `state`, `options`), and
// `textSummary` (k6's jslib `k6-summary`), which renders it as text. Written for loadhost from k6's
// documentation; no k6 code is copied.

/** The trend statistics k6 shows by default (its `summaryTrendStats`). */
const TREND_STATS = ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)'];

// Metrics measured in milliseconds (k6's `contains: 'time'`) and in bytes (`'data'`).
const isTime = (name) => (name.startsWith('http_req_') && !name.startsWith('http_req_failed'))
  || name.startsWith('iteration_duration') || name.startsWith('group_duration');
const isData = (name) => name.startsWith('data_sent') || name.startsWith('data_received');

function trend(m) {
  return { avg: m.mean, min: m.min, med: m.p50, max: m.max, 'p(90)': m.p90, 'p(95)': m.p95 };
}

// One of loadhost's summary metrics as k6's: its type by the figures it carries.
function metric(name, m, seconds) {
  const contains = isTime(name) ? 'time' : isData(name) ? 'data' : 'default';
  if (m.p50 !== undefined) return { type: 'trend', contains, values: trend(m) };
  if (m.passes !== undefined) return { type: 'rate', contains, values: { rate: m.rate, passes: m.passes, fails: m.fails } };
  if (m.value !== undefined) return { type: 'gauge', contains, values: { value: m.value, min: m.min ?? m.value, max: m.max ?? m.value } };
  if (m.count !== undefined) {
    return { type: 'counter', contains, values: { count: m.count, rate: seconds > 0 ? m.count / seconds : 0 } };
  }
  return undefined;
}

// `METRIC:EXPR` (the metric may carry `{tag:value}`) → [metric, expr].
function thresholdKey(key) {
  const close = key.indexOf('}');
  const at = key.indexOf(':', close === -1 ? 0 : close);
  return at === -1 ? [key, ''] : [key.slice(0, at), key.slice(at + 1)];
}

/**
 * loadhost's summary `s` (parsed `--summary-json`) as k6's handleSummary data; `rates` are the
 * script's Rate metrics, which loadhost records as checks of their names too.
 */
export function summaryData(s, rates = new Set()) {
  const seconds = s.duration_s ?? 0;
  const metrics = {};
  for (const [name, m] of Object.entries(s.metrics ?? {})) {
    const k6 = m !== null && typeof m === 'object' ? metric(name, m, seconds) : undefined;
    if (k6 !== undefined) metrics[name] = k6;
  }
  // loadhost lists each check among its metrics too; k6 has them only under `checks`.
  for (const name of Object.keys(s.checks ?? {})) {
    if (!rates.has(name)) delete metrics[name];
  }
  const tasks = s.tasks ?? {};
  const iterations = (tasks.passed ?? 0) + (tasks.failed ?? 0);
  metrics.iterations = { type: 'counter', contains: 'default', values: { count: iterations, rate: seconds > 0 ? iterations / seconds : 0 } };
  if (s.service_ms?.p50 !== undefined) metrics.iteration_duration = { type: 'trend', contains: 'time', values: trend(s.service_ms) };
  const w = s.workers ?? {};
  metrics.vus = { type: 'gauge', contains: 'default', values: { value: w.final ?? 0, min: w.min ?? 0, max: w.peak ?? 0 } };
  metrics.vus_max = { type: 'gauge', contains: 'default', values: { value: w.peak ?? 0, min: w.peak ?? 0, max: w.peak ?? 0 } };
  // k6's checks are only check()'s.
  const checks = Object.entries(s.checks ?? {}).filter(([name]) => !rates.has(name)).map(([name, c]) => ({
    name, path: `::${name}`, id: '', passes: c.passes ?? 0, fails: c.fails ?? 0,
  }));
  if (checks.length > 0) {
    const passes = checks.reduce((n, c) => n + c.passes, 0);
    const fails = checks.reduce((n, c) => n + c.fails, 0);
    metrics.checks = { type: 'rate', contains: 'default', values: { rate: passes / (passes + fails || 1), passes, fails } };
  }
  for (const [key, t] of Object.entries(s.thresholds ?? {})) {
    const [name, expr] = thresholdKey(key);
    if (metrics[name] === undefined) continue;
    metrics[name].thresholds ??= {};
    metrics[name].thresholds[expr] = { ok: Boolean(t.ok) };
  }
  return {
    root_group: { name: '', path: '', id: '', groups: [], checks },
    options: { summaryTrendStats: TREND_STATS, summaryTimeUnit: '', noColor: false },
    state: { isStdOutTTY: false, isStdErrTTY: false, testRunDurationMs: seconds * 1000 },
    metrics,
  };
}

function duration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return '-';
  if (ms < 1) return `${(ms * 1000).toFixed(2)}µs`;
  if (ms < 1000) return `${ms.toFixed(2)}ms`;
  return `${(ms / 1000).toFixed(2)}s`;
}

function bytes(n) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

function number(n) {
  return Number.isInteger(n) ? String(n) : n.toFixed(6).replace(/\.?0+$/, '');
}

// One metric's line of figures, as k6 shows it.
function figures(m, stats) {
  const v = m.values;
  const shown = m.contains === 'time' ? duration : m.contains === 'data' ? bytes : number;
  switch (m.type) {
    case 'trend':
      return stats.filter((s) => v[s] !== undefined).map((s) => `${s}=${shown(v[s])}`).join(' ');
    case 'rate':
      return `${(v.rate * 100).toFixed(2)}% ${v.passes} out of ${v.passes + v.fails}`;
    case 'gauge':
      return `${shown(v.value)} min=${shown(v.min)} max=${shown(v.max)}`;
    default:
      return `${shown(v.count)} ${shown(v.rate)}/s`;
  }
}

/**
 * k6-summary's `textSummary(data, { indent, enableColors })`: the checks, then every metric on a
 * dotted line with its figures (trends by `summaryTrendStats`), thresholds marked ✓ or ✗.
 */
export function textSummary(data, options = {}) {
  const indent = options.indent ?? ' ';
  const colours = options.enableColors === true;
  const paint = (code, text) => (colours ? `\u001b[${code}m${text}\u001b[0m` : text);
  const stats = data.options?.summaryTrendStats ?? TREND_STATS;
  const lines = [];
  for (const c of data.root_group?.checks ?? []) {
    const ok = c.fails === 0;
    lines.push(`${indent}${paint(ok ? 32 : 31, ok ? '✓' : '✗')} ${c.name}`);
    if (!ok) lines.push(`${indent}  ↳  ${Math.floor((c.passes / (c.passes + c.fails)) * 100)}% — ✓ ${c.passes} / ✗ ${c.fails}`);
  }
  if (lines.length > 0) lines.push('');
  const names = Object.keys(data.metrics ?? {}).sort();
  const width = Math.max(0, ...names.map((n) => n.length)) + 3;
  for (const name of names) {
    const m = data.metrics[name];
    const held = Object.values(m.thresholds ?? {});
    const mark = held.length === 0 ? ' ' : held.every((t) => t.ok) ? paint(32, '✓') : paint(31, '✗');
    lines.push(`${indent}${mark} ${name}${'.'.repeat(Math.max(1, width - name.length))}: ${figures(m, stats)}`);
  }
  return `${lines.join('\n')}\n`;
}

function xml(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * k6-summary's `jUnit(data, { name, classname })`: a JUnit XML report with one test case per
 * threshold, failed when the threshold did not hold.
 */
export function jUnit(data, options = {}) {
  const cases = [];
  let failures = 0;
  for (const [name, m] of Object.entries(data.metrics ?? {})) {
    for (const [expr, t] of Object.entries(m.thresholds ?? {})) {
      const title = xml(`${name} - ${expr}`);
      const classname = options.classname ? ` classname="${xml(options.classname)}"` : '';
      if (t.ok) {
        cases.push(`<testcase name="${title}"${classname} />`);
      } else {
        failures += 1;
        cases.push(`<testcase name="${title}"${classname}><failure message="failed" /></testcase>`);
      }
    }
  }
  const suite = xml(options.name ?? 'k6 thresholds');
  return `<?xml version="1.0"?>\n<testsuites tests="${cases.length}" failures="${failures}">\n`
    + `<testsuite name="${suite}" tests="${cases.length}" failures="${failures}">${cases.join('\n')}\n`
    + '</testsuite>\n</testsuites>\n';
}

/**
 * k6-reporter's `htmlReport(data, { title })` (a third-party module many scripts load by URL in
 * their handleSummary): one self-contained HTML page of the checks, the thresholds and every
 * metric's figures, written for loadhost from what the page shows (no k6-reporter code).
 */
export function htmlReport(data, options = {}) {
  const title = xml(options.title ?? new Date().toISOString().slice(0, 16).replace('T', ' '));
  const stats = data.options?.summaryTrendStats ?? TREND_STATS;
  const checks = data.root_group?.checks ?? [];
  const failedChecks = checks.filter((c) => c.fails > 0).length;
  const rows = [];
  const thresholds = [];
  for (const name of Object.keys(data.metrics ?? {}).sort()) {
    const m = data.metrics[name];
    for (const [expr, t] of Object.entries(m.thresholds ?? {})) {
      thresholds.push(`<tr class="${t.ok ? 'ok' : 'failed'}"><td>${xml(name)}</td><td>${xml(expr)}</td><td>${t.ok ? '✓' : '✗'}</td></tr>`);
    }
    rows.push(`<tr><td>${xml(name)}</td><td>${xml(m.type)}</td><td>${xml(figures(m, stats))}</td></tr>`);
  }
  const failedThresholds = thresholds.filter((t) => t.includes('class="failed"')).length;
  const checkRows = checks.map((c) => `<tr class="${c.fails === 0 ? 'ok' : 'failed'}"><td>${xml(c.name)}</td>`
    + `<td>${c.passes}</td><td>${c.fails}</td></tr>`);
  const table = (head, body) => `<table><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr>\n${body.join('\n')}\n</table>`;
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}.failed{background:#fdd}.ok{background:#efe}</style>
</head><body>
<h1>${title}</h1>
<p>${checks.length} checks, ${failedChecks} failed; ${thresholds.length} thresholds, ${failedThresholds} failed.</p>
<h2>Thresholds</h2>
${table(['Metric', 'Threshold', 'Held'], thresholds)}
<h2>Checks</h2>
${table(['Check', 'Passes', 'Fails'], checkRows)}
<h2>Metrics</h2>
${table(['Metric', 'Type', 'Figures'], rows)}
</body></html>
`;
}

