// Usage and billing: the account (mode, balance, weekly cap and what the week has spent),
// usage per model, key or product for a period with a CSV export, and tokens and spend over
// time per model.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { BillingAccount, UsageReport, UsageSeries } from '../../../generated/client/types.gen.js';
import { call } from '../api.js';
import { LineChart } from '../components/chart.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { count, dollars, shortTime, time } from '../format.js';
import { bucketStarts, PERIODS, PeriodPicker, type PeriodName } from './period.js';

type Group = UsageReport['groupBy'];

export function Usage() {
  const [period, setPeriod] = useState<PeriodName>('7d');
  const [groupBy, setGroupBy] = useState<Group>('model');
  const account = useLoad(() => call<BillingAccount>('/api/v1/billing').then((r) => r.data), []);
  const report = useLoad(() => call<UsageReport>('/api/v1/usage', { query: { since: PERIODS[period]().since, groupBy } }).then((r) => r.data), [period, groupBy]);
  const series = useLoad(() => {
    const { since, bucket } = PERIODS[period]();
    return call<UsageSeries>('/api/v1/usage/series', { query: { since, bucket, groupBy: 'model' } }).then((r) => r.data);
  }, [period]);

  return html`
    ${account.error ? html`<${Failure} error=${account.error} />` : account.data ? html`<${Account} account=${account.data} />` : html`<${Loading} />`}
    <div class="toolbar">
      <${PeriodPicker} value=${period} onChange=${setPeriod} />
      <label class="inline">Per
        <select value=${groupBy} onChange=${(e: Event) => setGroupBy((e.target as HTMLSelectElement).value as Group)}>
          <option value="model">model</option><option value="key">API key</option><option value="product">product</option>
        </select>
      </label>
      <button type="button" disabled=${!report.data} onClick=${() => report.data && downloadCsv(report.data)}>Export CSV</button>
    </div>
    ${report.error ? html`<${Failure} error=${report.error} />` : report.data ? html`<${Lines} report=${report.data} />` : html`<${Loading} />`}
    ${series.error ? html`<${Failure} error=${series.error} />` : series.data ? html`<${OverTime} series=${series.data} />` : null}`;
}

function Account({ account }: { account: BillingAccount }) {
  const cap = account.weeklyCapMicros;
  const share = cap ? Math.min(100, (100 * account.weekSpentMicros) / cap) : 0;
  return html`<div class="tiles">
    <div class="tile"><span class="tile-label">Billing</span><span class="tile-value">${account.mode}</span></div>
    <div class="tile"><span class="tile-label">Credit available</span><span class="tile-value">${dollars(account.availableMicros)}</span>
      <span class="muted">balance ${dollars(account.balanceMicros)}, held ${dollars(account.reservedMicros)}</span></div>
    <div class="tile"><span class="tile-label">This week</span><span class="tile-value">${dollars(account.weekSpentMicros)}</span>
      <span class="muted">${cap === null ? 'no weekly cap' : `of ${dollars(cap)} cap`} · resets ${time(account.weekResetsAt)}</span>
      ${cap === null ? null : html`<div class="meter" role="meter" aria-valuenow=${share.toFixed(0)} aria-valuemin="0" aria-valuemax="100"><div style=${{ width: `${share}%` }}></div></div>`}</div>
  </div>`;
}

function Lines({ report }: { report: UsageReport }) {
  return html`<${Section} title=${`Usage per ${report.groupBy === 'key' ? 'API key' : report.groupBy}, ${time(report.since)} – ${time(report.until)} UTC`}>
    <${Table}
      head=${[report.groupBy === 'key' ? 'API key' : report.groupBy === 'product' ? 'Product' : 'Model', 'Calls', 'Tokens in', 'Tokens out', 'Cost', 'Billed']}
      rows=${[...report.lines, { group: 'Total', ...report.totals }].map((l) => [
        l.group ?? html`<span class="muted">${report.groupBy === 'product' ? 'API credit' : 'none'}</span>`,
        count(l.calls),
        count(l.inputTokens),
        count(l.outputTokens),
        dollars(l.costMicros),
        dollars(l.billedMicros),
      ])}
      empty="No usage in this period."
    />
  <//>`;
}

function OverTime({ series }: { series: UsageSeries }) {
  if (series.points.length === 0) return null;
  const starts = bucketStarts(series.since, series.until, series.bucket);
  const groups = [...new Set(series.points.map((p) => p.group ?? 'none'))];
  const value = (group: string, start: number, pick: (p: UsageSeries['points'][number]) => number) =>
    series.points.filter((p) => (p.group ?? 'none') === group && p.start === start).reduce((sum, p) => sum + pick(p), 0);
  const labels = starts.map((s) => shortTime(s, series.bucket));
  return html`<div class="charts">
    <${LineChart} title="Tokens per model" kind="bar" stacked=${true} labels=${labels}
      series=${groups.map((g) => ({ label: g, values: starts.map((s) => value(g, s, (p) => p.inputTokens + p.outputTokens)) }))} />
    <${LineChart} title="Billed per model (USD)" kind="bar" stacked=${true} labels=${labels}
      series=${groups.map((g) => ({ label: g, values: starts.map((s) => value(g, s, (p) => p.billedMicros / 1_000_000)) }))} />
  </div>`;
}

/** The report as CSV (RFC 4180 quoting), downloaded by the browser. */
function downloadCsv(report: UsageReport) {
  const quote = (v: string | number | null) => {
    const s = v === null ? '' : String(v);
    return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  const rows = [
    [report.groupBy, 'calls', 'input_tokens', 'output_tokens', 'cost_usd', 'billed_usd'],
    ...report.lines.map((l) => [l.group, l.calls, l.inputTokens, l.outputTokens, (l.costMicros / 1e6).toFixed(6), (l.billedMicros / 1e6).toFixed(6)]),
  ];
  const blob = new Blob([rows.map((r) => r.map(quote).join(',')).join('\r\n') + '\r\n'], { type: 'text/csv' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `usage-${report.groupBy}-${new Date(report.since).toISOString().slice(0, 10)}.csv`;
  link.click();
  URL.revokeObjectURL(link.href);
}
