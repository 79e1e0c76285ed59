// Overview: the request log's figures over time (requests, errors, p50/p95 latency, tokens,
// spend) and per model and provider.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { RequestStats } from '../../../generated/client/types.gen.js';
import { call } from '../api.js';
import { LineChart } from '../components/chart.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { count, dollars, ms, shortTime } from '../format.js';
import { bucketStarts, PERIODS, PeriodPicker, type PeriodName } from './period.js';

export function Overview() {
  const [period, setPeriod] = useState<PeriodName>('24h');
  const stats = useLoad(() => {
    const { since, bucket } = PERIODS[period]();
    return call<RequestStats>('/api/v1/requests/stats', { query: { since, bucket } }).then((r) => r.data);
  }, [period]);
  if (stats.error) return html`<${Failure} error=${stats.error} />`;
  if (!stats.data) return html`<${Loading} />`;
  const { models, bucket } = stats.data;
  const found = new Map(stats.data.buckets.map((b) => [b.start, b]));
  const starts = bucketStarts(stats.data.since, stats.data.until, bucket);
  const empty = { requests: 0, errors: 0, p50Ms: null, p95Ms: null, inputTokens: 0, outputTokens: 0, costMicros: 0 };
  const buckets = starts.map((start) => ({ start, ...(found.get(start) ?? empty) }));
  const labels = starts.map((start) => shortTime(start, bucket));
  const total = buckets.reduce(
    (t, b) => ({ requests: t.requests + b.requests, errors: t.errors + b.errors, tokens: t.tokens + b.inputTokens + b.outputTokens, cost: t.cost + b.costMicros }),
    { requests: 0, errors: 0, tokens: 0, cost: 0 },
  );
  const busiest = models.find((m) => m.model !== null);
  return html`
    <div class="toolbar"><${PeriodPicker} value=${period} onChange=${setPeriod} /></div>
    <div class="tiles">
      <div class="tile"><span class="tile-label">Requests</span><span class="tile-value">${count(total.requests)}</span></div>
      <div class="tile"><span class="tile-label">Errors</span><span class="tile-value ${total.errors > 0 ? 'bad' : ''}">${count(total.errors)}</span>
        <span class="muted">${total.requests > 0 ? ((100 * total.errors) / total.requests).toFixed(1) : '0.0'}%</span></div>
      <div class="tile"><span class="tile-label">Tokens</span><span class="tile-value">${count(total.tokens)}</span></div>
      <div class="tile"><span class="tile-label">Spend</span><span class="tile-value">${dollars(total.cost)}</span></div>
      <div class="tile"><span class="tile-label">p95 latency, busiest model</span><span class="tile-value">${busiest ? ms(busiest.p95Ms) : '—'}</span>
        <span class="muted">${busiest?.model ?? ''}</span></div>
    </div>
    ${stats.data.buckets.length === 0
      ? html`<p class="notice">No requests in this period yet: the charts fill in as the API port answers requests.</p>`
      : html`<div class="charts">
          <${LineChart} title="Requests and errors" kind="bar" labels=${labels} series=${[
            { label: 'ok', values: buckets.map((b) => b.requests - b.errors), color: '#16a34a' },
            { label: 'errors', values: buckets.map((b) => b.errors), color: '#dc2626' },
          ]} stacked=${true} />
          <${LineChart} title="Latency (ms)" labels=${labels} series=${[
            { label: 'p50', values: buckets.map((b) => b.p50Ms), color: '#2563eb' },
            { label: 'p95', values: buckets.map((b) => b.p95Ms), color: '#d97706' },
          ]} />
          <${LineChart} title="Tokens" kind="bar" stacked=${true} labels=${labels} series=${[
            { label: 'input', values: buckets.map((b) => b.inputTokens), color: '#2563eb' },
            { label: 'output', values: buckets.map((b) => b.outputTokens), color: '#0891b2' },
          ]} />
          <${LineChart} title="Spend (USD)" labels=${labels} kind="bar" series=${[{ label: 'cost', values: buckets.map((b) => b.costMicros / 1_000_000), color: '#7c3aed' }]} />
        </div>`}
    <${Section} title="Per model and provider">
      <${Table}
        head=${['Model', 'Provider', 'Requests', 'Errors', 'p50', 'p95', 'Tokens in', 'Tokens out', 'Spend']}
        rows=${models.map((m) => [
          m.model ?? html`<span class="muted">no model call</span>`,
          m.provider ?? '—',
          count(m.requests),
          m.errors > 0 ? html`<span class="bad">${count(m.errors)}</span>` : '0',
          ms(m.p50Ms),
          ms(m.p95Ms),
          count(m.inputTokens),
          count(m.outputTokens),
          dollars(m.costMicros),
        ])}
      />
    <//>`;
}
