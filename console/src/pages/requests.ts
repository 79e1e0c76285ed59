// The request log: recent requests of the API port, newest first, with trace id, route
// taken, model, provider, status, tokens, cost and latency; filtered by status, model,
// provider or trace id; more on demand.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { LoggedRequest } from '../../../generated/client/types.gen.js';
import { call, type Envelope } from '../api.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { count, dollars, ms, time } from '../format.js';

interface Filters {
  status: string;
  model: string;
  provider: string;
  traceId: string;
}

const NO_FILTERS: Filters = { status: '', model: '', provider: '', traceId: '' };

/** X-Gateway-Route as one line per attempt: deployment and outcome (the model in the tooltip). */
function Route({ route }: { route: string }) {
  const attempts = route.split(', ').map((attempt) => Object.fromEntries(attempt.split('; ').map((part) => part.split('=') as [string, string])));
  return html`<span class="route" title=${route}>${attempts.map(
    (a) => html`<span class="attempt"><code>${a.deployment}</code> <span class=${a.outcome === 'ok' ? 'ok' : 'bad'}>${a.outcome}</span></span>`,
  )}</span>`;
}

export function Requests() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [more, setMore] = useState<LoggedRequest[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const page = useLoad(async () => {
    const first: Envelope<LoggedRequest[]> = await call<LoggedRequest[]>('/api/v1/requests', { query: { ...filters, limit: 50 } });
    setMore([]);
    setCursor(first.meta.nextCursor);
    return first.data;
  }, [filters]);
  const loadMore = async () => {
    const next = await call<LoggedRequest[]>('/api/v1/requests', { query: { ...filters, limit: 50, cursor } });
    setMore((m) => [...m, ...next.data]);
    setCursor(next.meta.nextCursor);
  };
  const field = (name: keyof Filters) => (e: Event) => setDraft({ ...draft, [name]: (e.target as HTMLInputElement).value });
  const rows = [...(page.data ?? []), ...more];

  return html`
    <form class="form filters" onSubmit=${(e: Event) => (e.preventDefault(), setFilters(draft))}>
      <label>Status
        <select name="status" value=${draft.status} onChange=${field('status')}>
          <option value="">all</option><option value="ok">ok</option><option value="error">errors</option>
        </select>
      </label>
      <label>Model <input name="model" value=${draft.model} onInput=${field('model')} placeholder="local-chat" /></label>
      <label>Provider <input name="provider" value=${draft.provider} onInput=${field('provider')} placeholder="openai" /></label>
      <label>Trace id <input name="traceId" value=${draft.traceId} onInput=${field('traceId')} placeholder="trc_…" /></label>
      <div class="actions">
        <button type="submit">Filter</button>
        <button type="button" class="quiet" onClick=${() => (setDraft(NO_FILTERS), setFilters(NO_FILTERS))}>Clear</button>
        <button type="button" class="quiet" onClick=${page.reload}>Refresh</button>
      </div>
    </form>
    <${Section} title="Recent requests">
      ${page.error
        ? html`<${Failure} error=${page.error} />`
        : page.data
          ? html`<${Table}
              head=${['Time (UTC)', 'Trace id', 'Request', 'Route taken', 'Model', 'Provider', 'Status', 'Tokens in/out', 'Cost', 'Latency']}
              rows=${rows.map((r) => [
                time(r.at),
                html`<code class="id">${r.traceId}</code>`,
                html`<span title=${r.operation ?? ''}>${r.method} ${r.path}</span>`,
                r.route ? html`<${Route} route=${r.route} />` : html`<span class="muted">—</span>`,
                r.model ?? '—',
                r.provider ?? '—',
                html`<span class=${r.status >= 400 ? 'badge bad-bg' : 'badge ok-bg'} title=${r.error ?? ''}>${r.status}${r.error ? ` ${r.error}` : ''}</span>`,
                `${count(r.inputTokens)} / ${count(r.outputTokens)}`,
                dollars(r.costMicros),
                ms(r.latencyMs),
              ])}
              empty="No requests match."
            />`
          : html`<${Loading} />`}
      ${cursor ? html`<button type="button" onClick=${loadMore}>Load more</button>` : null}
    <//>`;
}
